/* Trash pickup: several agents on a square grid pick up trash and carry it to bins.
 *
 * Each agent moves one cell per step (or stays). Moving onto trash picks it up when the agent's
 * hands are free (carrying agents are blocked by trash); moving into a bin while carrying drops the
 * trash there (the agent stays where it is). Walls, bins (empty-handed) and other agents block.
 * Agents move one after another in row order. The episode ends (terminal) when every piece of trash
 * is in a bin, or is truncated after max_steps. Rewards are per agent: pickup_reward for a pickup,
 * deposit_reward for a drop, step_reward every step.
 *
 * Observation (uint8): a (2 * sight + 1)^2 window centred on the agent, one plane each for wall
 * (outside the grid), trash, bin and agent, then whether this agent is carrying trash. The grid is
 * stored as one plane per kind, padded by `sight` cells of wall on every side, so a window is
 * 2 * sight + 1 row copies per plane with no bounds checks.
 */
#ifndef OCEAN_TRASH_PICKUP_H
#define OCEAN_TRASH_PICKUP_H

#include <stdlib.h>
#include "ocean.h"
#include "spec.h"  /* TrashPickupConfig and TP_KINDS (spec.toml) */

enum { TP_WALL, TP_TRASH, TP_BIN, TP_AGENT };  /* the TP_KINDS planes, in observation order */
enum { TP_STAY, TP_UP, TP_DOWN, TP_LEFT, TP_RIGHT, TP_ACTIONS };

typedef struct TrashPickup {
    OCEAN_SLOTS(unsigned char);
    TrashPickupConfig cfg;     /* the options of spec.toml */
    /* derived in c_init (options copied for brevity) */
    int size, agents, trash, bins, sight;
    int view, stride, plane;   /* window side, padded row length, padded cells */
    /* state: owned memory, allocated in c_init */
    unsigned char *cells;      /* [TP_KINDS][plane]: 1 where a wall/trash/bin/agent is */
    int *pos;                  /* [agents] padded index of each agent */
    unsigned char *carrying;   /* [agents] */
    int *shuffle;              /* [size * size] scratch for drawing distinct start cells */
    int tick, deposited;
    float ret;                 /* summed reward of all agents this episode */
} TrashPickup;

/* Saved states (ocean.h): the memory c_init allocates. */
#define OCEAN_STATE_BLOCKS(X, env)                   \
    X(cells, (size_t)TP_KINDS *(size_t)(env)->plane) \
    X(pos, sizeof(int) * (size_t)(env)->agents)      \
    X(carrying, (size_t)(env)->agents)               \
    X(shuffle, sizeof(int) * (size_t)(env)->size * (size_t)(env)->size)

static inline unsigned char *tp_kind(TrashPickup *env, int kind) { return env->cells + (size_t)kind * env->plane; }

static int c_init(TrashPickup *env) {
    env->size = env->cfg.size;
    env->agents = env->cfg.agents;
    env->trash = env->cfg.trash;
    env->bins = env->cfg.bins;
    env->sight = env->cfg.sight;
    env->view = 2 * env->sight + 1;
    env->stride = env->size + 2 * env->sight;
    env->plane = env->stride * env->stride;
    env->cells = (unsigned char *)calloc((size_t)TP_KINDS * env->plane, 1);
    env->pos = (int *)calloc((size_t)env->agents, sizeof(int));
    env->carrying = (unsigned char *)calloc((size_t)env->agents, 1);
    env->shuffle = (int *)calloc((size_t)env->size * env->size, sizeof(int));
    if (!env->cells || !env->pos || !env->carrying || !env->shuffle)
        return ocean_fail(env, "out of memory for the grid and the agents");
    return 0;
}

/* The window of one agent: each plane is view rows of view bytes. */
static void tp_write_obs(TrashPickup *env, int i) {
    unsigned char *obs = env->observations + (size_t)i * env->obs_size;
    int view = env->view, stride = env->stride;
    int corner = env->pos[i] - env->sight * stride - env->sight;
    for (int kind = 0; kind < TP_KINDS; kind++) {
        const unsigned char *src = tp_kind(env, kind) + corner;
        for (int r = 0; r < view; r++, obs += view, src += stride) memcpy(obs, src, (size_t)view);
    }
    *obs = env->carrying[i];
}

static void tp_new_episode(TrashPickup *env) {
    int size = env->size, sight = env->sight, stride = env->stride;
    memset(env->cells, 0, (size_t)TP_KINDS * env->plane);
    unsigned char *wall = tp_kind(env, TP_WALL);
    memset(wall, 1, (size_t)env->plane);
    for (int r = 0; r < size; r++) memset(wall + (r + sight) * stride + sight, 0, (size_t)size);
    /* distinct random cells for agents, bins and trash: a partial Fisher-Yates shuffle */
    int n = size * size, count = env->agents + env->bins + env->trash;
    for (int k = 0; k < n; k++) env->shuffle[k] = k;
    for (int k = 0; k < count; k++) {
        int j = k + ocean_randint(&env->rng, n - k);
        int cell = env->shuffle[j];
        env->shuffle[j] = env->shuffle[k];
        env->shuffle[k] = cell;
        int at = (cell / size + sight) * stride + cell % size + sight;
        if (k < env->agents) {
            env->pos[k] = at;
            env->carrying[k] = 0;
            tp_kind(env, TP_AGENT)[at] = 1;
        } else {
            tp_kind(env, k < env->agents + env->bins ? TP_BIN : TP_TRASH)[at] = 1;
        }
    }
    env->tick = env->deposited = 0;
    env->ret = 0;
}

static void c_reset(TrashPickup *env) {
    tp_new_episode(env);
    for (int i = 0; i < env->agents; i++) tp_write_obs(env, i);
}

/* Move agent i; returns its reward for this move. */
static inline float tp_move(TrashPickup *env, int i, int action) {
    static const int dr[TP_ACTIONS] = {0, -1, 1, 0, 0}, dc[TP_ACTIONS] = {0, 0, 0, -1, 1};
    if (action == TP_STAY) return 0;
    int from = env->pos[i], to = from + dr[action] * env->stride + dc[action];
    unsigned char *trash = tp_kind(env, TP_TRASH), *agent = tp_kind(env, TP_AGENT);
    if (tp_kind(env, TP_BIN)[to]) {
        if (!env->carrying[i]) return 0;
        env->carrying[i] = 0;
        env->deposited++;
        return env->cfg.deposit_reward;
    }
    if (tp_kind(env, TP_WALL)[to] || agent[to] || (trash[to] && env->carrying[i])) return 0;
    float reward = 0;
    if (trash[to]) {
        trash[to] = 0;
        env->carrying[i] = 1;
        reward = env->cfg.pickup_reward;
    }
    agent[from] = 0;
    agent[to] = 1;
    env->pos[i] = to;
    return reward;
}

static void c_step(TrashPickup *env) {
    int n = env->agents;
    float total = 0;
    for (int i = 0; i < n; i++) {
        float r = env->cfg.step_reward + tp_move(env, i, ocean_clamp(env->actions[i], TP_ACTIONS));
        env->rewards[i] = r;
        total += r;
    }
    env->ret += total;
    env->tick++;
    int done = env->deposited == env->trash;
    int timeout = !done && env->tick >= env->cfg.max_steps;
    memset(env->terminals, done, (size_t)n);
    memset(env->truncations, timeout, (size_t)n);
    if (done || timeout) {
        ocean_log_episode(&env->log, env->ret / (float)n, (float)env->tick, (float)env->deposited,
                          (float)env->deposited / (float)env->trash);
        tp_new_episode(env);
    }
    for (int i = 0; i < n; i++) tp_write_obs(env, i);
}

/* ---- rendering ---- */

#define TP_SCALE 16

static void c_frame_shape(TrashPickup *env, int *h, int *w) { *h = *w = env->size * TP_SCALE; }

/* What is on padded cell `at`: 0 empty, 1 trash, 2 bin, 3 agent, 4 agent carrying trash. */
static int tp_what(TrashPickup *env, int at) {
    if (tp_kind(env, TP_AGENT)[at]) {
        for (int i = 0; i < env->agents; i++)
            if (env->pos[i] == at) return env->carrying[i] ? 4 : 3;
    }
    if (tp_kind(env, TP_BIN)[at]) return 2;
    if (tp_kind(env, TP_TRASH)[at]) return 1;
    return 0;
}

static void c_render_rgb(TrashPickup *env, unsigned char *frame) {
    static const unsigned char palette[5][3] = {
        {20, 24, 28}, {150, 110, 50}, {40, 110, 220}, {240, 210, 40}, {250, 120, 30}};
    int h, w;
    c_frame_shape(env, &h, &w);
    for (int r = 0; r < env->size; r++)
        for (int c = 0; c < env->size; c++) {
            int what = tp_what(env, (r + env->sight) * env->stride + c + env->sight);
            int inset = what == 1 ? 4 : 1;  /* trash drawn smaller than bins and agents */
            ocean_fill_rect(frame, h, w, c * TP_SCALE, r * TP_SCALE, TP_SCALE, TP_SCALE, palette[0]);
            if (what)
                ocean_fill_rect(frame, h, w, c * TP_SCALE + inset, r * TP_SCALE + inset, TP_SCALE - 2 * inset,
                                TP_SCALE - 2 * inset, palette[what]);
        }
}

static int c_render_text(TrashPickup *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "step ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, "  deposited ");
    ocean_puti(&t, env->deposited);
    ocean_putc(&t, '/');
    ocean_puti(&t, env->trash);
    ocean_puts(&t, "  (t trash, B bin, a agent, A agent carrying)\n");
    for (int r = 0; r < env->size; r++) {
        for (int c = 0; c < env->size; c++)
            ocean_putc(&t, ".tBaA"[tp_what(env, (r + env->sight) * env->stride + c + env->sight)]);
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(TrashPickup *env) {
    free(env->cells);
    free(env->pos);
    free(env->carrying);
    free(env->shuffle);
    env->cells = NULL;
    env->pos = NULL;
    env->carrying = NULL;
    env->shuffle = NULL;
}

#endif
