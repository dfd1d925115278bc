/* Template: copy this folder to start a new env (see docs/ocean.md). The game: the agent stands on
 * a line of `length` cells and walks left or right; reaching the goal at the right end pays 1 and
 * ends the episode, and after max_steps it is truncated. Small on purpose: every required piece of
 * the contract in ocean/ocean.h appears once, in the order the binding calls it. */
#include <stdlib.h>
#include "ocean.h"
#include "spec.h"  /* generated from spec.toml by setup.py: TemplateConfig and the sizes */

enum { TP_LEFT, TP_RIGHT, TP_ACTIONS };

typedef struct Template {
    OCEAN_SLOTS(unsigned char);  /* must come first: buffers, sizes, masks, rng, log. `masks` (row
                                  * liveness) stays as the binding set it, every row live: only a
                                  * turn-based env writes it (ocean/seats.h) */
    TemplateConfig cfg;          /* the options of spec.toml (cfg.length, cfg.max_steps), validated */
    int position, tick;          /* state */
    unsigned char *line;         /* an example of memory owned by the env: allocated in c_init only */
} Template;

/* Saved states (ocean.h): every pointer member c_init allocates, with its size in bytes, so that a
 * saved state carries what it points to and loading keeps this env's own memory. */
#define OCEAN_STATE_BLOCKS(X, env) X(line, (size_t)(env)->cfg.length)

/* Allocate here and only here: steps run with no allocation. */
static int c_init(Template *env) {
    env->line = (unsigned char *)calloc((size_t)env->cfg.length, 1);
    if (env->line == NULL) return ocean_fail(env, "out of memory for the line");
    return 0;
}

/* Left is illegal at the left end (the mask slot exists because spec.toml says mask = true). */
static void template_write_mask(Template *env) {
    env->action_masks[TP_LEFT] = env->position > 0;
    env->action_masks[TP_RIGHT] = 1;
}

/* Start an episode. Draw randomness only from env->rng so a seed reproduces a run. */
static void template_new_episode(Template *env) {
    int length = env->cfg.length;
    env->position = ocean_randint(&env->rng, length - 1);  /* anywhere but the goal */
    env->tick = 0;
    memset(env->line, 0, (size_t)length);
    env->line[env->position] = 1;
    env->line[length - 1] = 2;
    memcpy(env->observations, env->line, (size_t)length);
    template_write_mask(env);
}

static void c_reset(Template *env) { template_new_episode(env); }

static void c_step(Template *env) {
    int a = ocean_clamp(env->actions[0], TP_ACTIONS);  /* never trust an action as an index */
    env->line[env->position] = 0;
    env->observations[env->position] = 0;  /* patch only the cells that change */
    if (a == TP_LEFT && env->position > 0) env->position--;
    if (a == TP_RIGHT && env->position < env->cfg.length - 1) env->position++;
    env->line[env->position] = 1;
    env->observations[env->position] = 1;
    template_write_mask(env);
    env->tick++;
    int reached = env->position == env->cfg.length - 1;
    int timeout = !reached && env->tick >= env->cfg.max_steps;
    env->rewards[0] = reached ? 1.0f : 0.0f;
    env->terminals[0] = (unsigned char)reached;
    env->truncations[0] = (unsigned char)timeout;
    if (reached || timeout) {
        /* record the finished episode, then reset in the same step: the observation written now is
         * the first one of the next episode, while reward/terminal describe the one that ended */
        ocean_log_episode(&env->log, (float)reached, (float)env->tick, (float)reached, (float)reached);
        template_new_episode(env);
    }
}

#define TP_SCALE 16
static void c_frame_shape(Template *env, int *h, int *w) {
    *h = TP_SCALE;
    *w = env->cfg.length * TP_SCALE;
}

static void c_render_rgb(Template *env, unsigned char *frame) {
    static const unsigned char palette[3][3] = {{20, 20, 20}, {0, 180, 220}, {40, 200, 40}};
    ocean_render_grid(frame, env->line, 1, env->cfg.length, env->cfg.length, TP_SCALE, palette, 3);
}

static int c_render_text(Template *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_text_grid(&t, env->line, 1, env->cfg.length, env->cfg.length, ".@G", 3);
    return t.len;
}

static void c_close(Template *env) {
    free(env->line);
    env->line = NULL;
}
