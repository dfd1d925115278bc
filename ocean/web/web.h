/* web.h: one Ocean env and its policy (ocean/puffernet.h) behind a small C API for a web page.
 *
 * pufferlib/web.py compiles it per env, in a generated source like the binding's:
 *   #include "spec.h"    generated from the env's spec.toml
 *   #include "<env>.h"   the env
 *   #include "web.h"     this file
 * once with emcc (the page's WebAssembly) and, for the tests and the benchmark, once with the host's C
 * compiler into a shared library. Both builds run the same C, so a seed and a weights file give the same
 * game in the browser as on the host; the env is set up exactly as ocean/binding.h sets up env 0 of a
 * vector, so they also give the game `pufferlib.make(...)` plays.
 *
 * One game per module: the page holds one env. Every row is played by the policy except the one the
 * player took over (web_human); the policy is the weights' net, the env's built-in scripted player
 * (action -1, ocean/seats.h) or uniform random legal actions.
 */
#ifndef OCEAN_WEB_H
#define OCEAN_WEB_H

#include <stdlib.h>
#include <string.h>

#include "ocean.h"
#include "puffernet.h"

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#define WEB_API EMSCRIPTEN_KEEPALIVE
#else
#define WEB_API __attribute__((visibility("default")))
#endif

enum { WEB_NET = 0, WEB_BUILTIN = 1, WEB_RANDOM = 2 };
#define WEB_MAX_EPISODES 65536 /* finished returns kept; the count goes on past it */

#ifndef WEB_HEAD
#error "web.h needs WEB_HEAD(cfg, k), the size of action head k: pufferlib/web.py generates it"
#endif

typedef OCEAN_ENV Env;

typedef struct WebGame {
    Env env;
    int ready, policy, human_row, steps, box, num_actions;
    long long finished_count;
    uint64_t policy_rng;
    PufferNet *net;
    void *arena;
    unsigned char *weights;
    float *human; /* the player's action row: act_size elements */
    double *returns; /* [num_agents] of the running episodes */
    double *finished; /* [WEB_MAX_EPISODES] */
    unsigned char *frame;
    int frame_h, frame_w;
    char error[512];
} WebGame;

static WebGame web_game;

static void web_release(void) {
    WebGame *g = &web_game;
    Env *env = &g->env;
    if (g->ready) c_close(env);
    free(env->observations);
    free(env->actions);
    free(env->cont_actions);
    free(env->rewards);
    free(env->terminals);
    free(env->truncations);
    free(env->masks);
    free(env->action_masks);
    free(g->arena);
    free(g->weights);
    free(g->human);
    free(g->returns);
    free(g->finished);
    free(g->frame);
    memset(g, 0, sizeof(*g));
}

static int web_fail(const char *why) {
    WebGame *g = &web_game;
    char copy[sizeof g->error];
    snprintf(copy, sizeof copy, "%s", why);
    web_release();
    snprintf(g->error, sizeof g->error, "%s", copy);
    return -1;
}

/* Scratch memory for the page: it copies the options and the weights in here before web_init. */
WEB_API void *web_buffer(int bytes) { return calloc(1, bytes > 0 ? (size_t)bytes : 1); }
WEB_API void web_buffer_free(void *p) { free(p); }

WEB_API int web_config_bytes(void) { return (int)sizeof(OCEAN_CONFIG); }
WEB_API const char *web_error(void) { return web_game.error; }
WEB_API const char *web_env_name(void) { return OCEAN_ENV_NAME; }

/* Start the env with the packed options (the bytes ocean.spec.Spec.pack makes) and a policy: the native
 * weights (nbytes > 0), else WEB_BUILTIN or WEB_RANDOM. 0, or -1 with the reason in web_error(). */
WEB_API int web_init(const void *config, const void *weights, int nbytes, int policy) {
    WebGame *g = &web_game;
    web_release();
    Env *env = &g->env;
    memcpy(&env->cfg, config, sizeof(OCEAN_CONFIG));
    if (ocean_spec_check(&env->cfg, g->error, sizeof g->error) != 0) return web_fail(g->error);
    long long agents = ocean_spec_num_agents(&env->cfg), obs_size = ocean_spec_obs_size(&env->cfg);
    long long act_size = ocean_spec_act_size(&env->cfg), num_actions = ocean_spec_num_actions(&env->cfg);
    if (agents < 1 || obs_size < 1 || agents * obs_size > (1LL << 28))
        return web_fail("these options give no usable layout");
    g->box = ocean_spec_box_size(&env->cfg) > 0;
    g->num_actions = (int)num_actions;
    env->num_agents = (int)agents;
    env->obs_size = (int)obs_size;
    env->act_size = (int)act_size;
    env->observations = (OCEAN_OBS_T *)calloc((size_t)(agents * obs_size), sizeof(OCEAN_OBS_T));
    if (g->box) env->cont_actions = (float *)calloc((size_t)(agents * act_size), sizeof(float));
    else env->actions = (int32_t *)calloc((size_t)(agents * act_size), sizeof(int32_t));
    env->rewards = (float *)calloc((size_t)agents, sizeof(float));
    env->terminals = (unsigned char *)calloc((size_t)agents, 1);
    env->truncations = (unsigned char *)calloc((size_t)agents, 1);
    env->masks = (unsigned char *)calloc((size_t)agents, 1);
    if (OCEAN_ACTION_MASK) env->action_masks = (unsigned char *)calloc((size_t)(agents * num_actions), 1);
    g->human = (float *)calloc((size_t)act_size, sizeof(float));
    g->returns = (double *)calloc((size_t)agents, sizeof(double));
    g->finished = (double *)calloc(WEB_MAX_EPISODES, sizeof(double));
    if (!env->observations || !(env->actions || env->cont_actions) || !env->rewards || !env->terminals ||
        !env->truncations || !env->masks || (OCEAN_ACTION_MASK && !env->action_masks) || !g->human || !g->returns ||
        !g->finished)
        return web_fail("out of memory");
    memset(env->masks, 1, (size_t)agents);
    env->rng = ocean_seed_mix(0, 0); /* as the binding seeds env 0 before c_init */
    g->ready = 1;                    /* c_close runs even when c_init fails half-way */
    if (c_init(env) != 0) return web_fail(env->error ? env->error : "c_init failed without a message");
    c_frame_shape(env, &g->frame_h, &g->frame_w);
    g->frame =
        (unsigned char *)calloc((size_t)(g->frame_h > 0 ? g->frame_h : 1) * (g->frame_w > 0 ? g->frame_w : 1), 3);
    if (!g->frame) return web_fail("out of memory for the frame");
    g->policy = nbytes > 0 ? WEB_NET : policy;
    if (g->policy == WEB_NET) {
        const char *why = NULL;
        g->weights = (unsigned char *)malloc((size_t)nbytes);
        if (!g->weights) return web_fail("out of memory for the weights");
        memcpy(g->weights, weights, (size_t)nbytes);
        size_t bytes = puffernet_arena_bytes(g->weights, (size_t)nbytes, (int)agents);
        if (bytes == 0) {
            puffernet_load(NULL, 0, g->weights, (size_t)nbytes, (int)agents, &why);
            return web_fail(why ? why : "the weights file is not one puffernet.h reads");
        }
        g->arena = aligned_alloc(16, (bytes + 15) / 16 * 16);
        if (!g->arena) return web_fail("out of memory for the policy");
        g->net = puffernet_load(g->arena, bytes, g->weights, (size_t)nbytes, (int)agents, &why);
        if (!g->net) return web_fail(why ? why : "puffernet.h refused the weights");
        if (g->net->row_bytes != (int)(obs_size * (long long)sizeof(OCEAN_OBS_T)))
            return web_fail("the weights were exported for another observation size: export them for these options");
    } else if (g->policy != WEB_BUILTIN && g->policy != WEB_RANDOM) {
        return web_fail("unknown policy kind");
    }
    g->human_row = -1;
    return 0;
}

/* New episodes from `seed`, as pufferlib.make(..., num_envs=1).reset(seed) starts them. A JS number
 * holds integers exactly up to 2^53. */
WEB_API void web_reset(double seed) {
    WebGame *g = &web_game;
    Env *env = &g->env;
    if (!g->ready) return;
    uint64_t s = (uint64_t)seed;
    env->rng = ocean_seed_mix(s, 0);
    g->policy_rng = ocean_seed_mix(s, 0); /* pufferlib.export.seed_state(seed) */
    memset(env->rewards, 0, sizeof(float) * (size_t)env->num_agents);
    memset(env->terminals, 0, (size_t)env->num_agents);
    memset(env->truncations, 0, (size_t)env->num_agents);
    memset(env->masks, 1, (size_t)env->num_agents);
    c_reset(env);
    if (g->net) puffernet_reset(g->net, -1);
    memset(g->returns, 0, sizeof(double) * (size_t)env->num_agents);
    g->steps = 0;
    g->finished_count = 0;
}

/* Uniform random legal actions for every row, from the policy's own RNG. */
static void web_random(WebGame *g) {
    Env *env = &g->env;
    for (int r = 0; r < env->num_agents; r++) {
        if (g->box) { /* a mixed row's discrete choices (as floats) come first, then the Box's elements */
            int choices = (int)ocean_spec_discrete_size(&env->cfg);
            for (int k = 0; k < env->act_size; k++) {
                long long head = k < choices ? WEB_HEAD(&env->cfg, k) : 0;
                env->cont_actions[r * env->act_size + k] =
                    k < choices
                        ? (float)ocean_randint(&g->policy_rng, head > 0 ? (int)head : 1)
                        : OCEAN_ACTION_LOW + ocean_randf(&g->policy_rng) * (OCEAN_ACTION_HIGH - OCEAN_ACTION_LOW);
            }
            continue;
        }
        if (OCEAN_ACTION_MASK && env->act_size == 1) {
            const unsigned char *legal = env->action_masks + (size_t)r * g->num_actions;
            int count = 0;
            for (int a = 0; a < g->num_actions; a++) count += legal[a] != 0;
            int pick = count ? ocean_randint(&g->policy_rng, count) : 0, a = 0;
            for (; a < g->num_actions; a++)
                if (legal[a] && pick-- == 0) break;
            env->actions[r] = a < g->num_actions ? a : 0;
            continue;
        }
        /* Discrete or MultiDiscrete without a mask: each head on its own (WEB_HEAD comes with the
         * generated source: the size of head k for these options) */
        for (int k = 0; k < env->act_size; k++) {
            long long head = WEB_HEAD(&env->cfg, k);
            env->actions[r * env->act_size + k] = ocean_randint(&g->policy_rng, head > 0 ? (int)head : 1);
        }
    }
}

static void web_choose(WebGame *g) {
    Env *env = &g->env;
    if (g->policy == WEB_NET) {
        void *actions = g->box ? (void *)env->cont_actions : (void *)env->actions;
        puffernet_act(g->net, env->num_agents, env->observations, env->action_masks, actions, &g->policy_rng);
    } else if (g->policy == WEB_BUILTIN) {
        for (int i = 0; i < env->num_agents * env->act_size; i++) env->actions[i] = -1;
    } else {
        web_random(g);
    }
    if (g->human_row >= 0 && g->human_row < env->num_agents)
        for (int k = 0; k < env->act_size; k++) {
            int at = g->human_row * env->act_size + k;
            if (g->box) env->cont_actions[at] = g->human[k];
            else env->actions[at] = (int32_t)g->human[k];
        }
}

/* Play n steps; returns the episodes finished since web_reset. */
WEB_API int web_step(int n) {
    WebGame *g = &web_game;
    Env *env = &g->env;
    if (!g->ready) return 0;
    for (int i = 0; i < n; i++) {
        web_choose(g);
        c_step(env);
        g->steps++;
        int ended = 0;
        for (int r = 0; r < env->num_agents; r++) {
            g->returns[r] += env->rewards[r];
            if (env->terminals[r] || env->truncations[r]) {
                if (g->finished_count < WEB_MAX_EPISODES) g->finished[g->finished_count] = g->returns[r];
                g->finished_count++;
                g->returns[r] = 0;
                if (g->net) puffernet_reset(g->net, r);
                ended = 1;
            }
        }
        if (ended) g->steps = 0;
    }
    return (int)(g->finished_count < 2147483647 ? g->finished_count : 2147483647);
}

WEB_API double web_finished(int i) {
    WebGame *g = &web_game;
    return i >= 0 && i < g->finished_count && i < WEB_MAX_EPISODES ? g->finished[i] : 0.0;
}
WEB_API double web_return(int row) {
    WebGame *g = &web_game;
    return g->ready && row >= 0 && row < g->env.num_agents ? g->returns[row] : 0.0;
}
WEB_API int web_steps(void) { return web_game.steps; }
WEB_API int web_agents(void) { return web_game.ready ? web_game.env.num_agents : 0; }
WEB_API int web_act_size(void) { return web_game.ready ? web_game.env.act_size : 0; }
WEB_API int web_policy(void) { return web_game.policy; }
/* 1 when `row` acts on the next step (turn-based games leave the waiting row's entry 0) */
WEB_API int web_live(int row) {
    WebGame *g = &web_game;
    return g->ready && row >= 0 && row < g->env.num_agents ? g->env.masks[row] : 0;
}
/* 1 when action `a` is legal for `row` (always, for envs without an action mask) */
WEB_API int web_legal(int row, int a) {
    WebGame *g = &web_game;
    if (!g->ready || !OCEAN_ACTION_MASK) return 1;
    if (row < 0 || row >= g->env.num_agents || a < 0 || a >= g->num_actions) return 0;
    return g->env.action_masks[(size_t)row * g->num_actions + a];
}
WEB_API int web_num_actions(void) { return web_game.num_actions; }

/* The player takes row `row` (-1: the policy plays every row); web_human_action sets element k of its
 * action, used on every step until changed. */
WEB_API void web_human(int row) { web_game.human_row = row; }
WEB_API void web_human_action(int k, double value) {
    WebGame *g = &web_game;
    if (g->ready && k >= 0 && k < g->env.act_size) g->human[k] = (float)value;
}

WEB_API int web_frame_h(void) { return web_game.frame_h; }
WEB_API int web_frame_w(void) { return web_game.frame_w; }
/* The env's own RGB render, [h][w][3], in module memory. */
WEB_API unsigned char *web_render(void) {
    WebGame *g = &web_game;
    if (!g->ready) return NULL;
    memset(g->frame, 0, (size_t)g->frame_h * g->frame_w * 3);
    c_render_rgb(&g->env, g->frame);
    return g->frame;
}

#endif
