/* Squared: the agent starts in the centre of a grid, targets sit on the perimeter, and each target
 * pays 1/num_targets the first time the agent steps on it. Checks that a policy can follow spatial
 * observations to several goals, and that rewards paid once are not paid twice. */
#include <stdlib.h>
#include "ocean.h"
#include "spec.h"

enum { SQ_EMPTY = 0, SQ_AGENT = 1, SQ_TARGET = 2 };
enum { SQ_NOOP, SQ_UP, SQ_DOWN, SQ_LEFT, SQ_RIGHT, SQ_ACTIONS };

typedef struct Squared {
    OCEAN_SLOTS(unsigned char);
    SquaredConfig cfg;  /* options (spec.toml) */
    int row, col, tick, remaining;
    float episode_return;
    unsigned char *grid;  /* the truth; obs mirrors it and is only patched where a cell changed */
    int *perimeter;       /* cell indices of the border, shuffled to place targets */
    int perimeter_n;
} Squared;

/* Saved states (ocean.h): the memory c_init allocates (the perimeter's order is state: episodes
 * shuffle it in place). */
#define OCEAN_STATE_BLOCKS(X, env)                            \
    X(grid, (size_t)(env)->cfg.size *(size_t)(env)->cfg.size) \
    X(perimeter, sizeof(int) * (size_t)(env)->perimeter_n)

/* Border cells in a fixed order. Episodes shuffle the array in place, so a seeded reset restores
 * this order first: otherwise the targets would depend on the history before the seed. */
static void squared_fill_perimeter(Squared *env) {
    int s = env->cfg.size, k = 0;
    for (int r = 0; r < s; r++)
        for (int c = 0; c < s; c++)
            if (r == 0 || c == 0 || r == s - 1 || c == s - 1) env->perimeter[k++] = r * s + c;
}

static int c_init(Squared *env) {
    int s = env->cfg.size;
    env->grid = (unsigned char *)calloc((size_t)s * s, 1);
    env->perimeter_n = 4 * (s - 1);
    env->perimeter = (int *)malloc(sizeof(int) * env->perimeter_n);
    if (env->grid == NULL || env->perimeter == NULL) return ocean_fail(env, "out of memory for the grid");
    squared_fill_perimeter(env);
    return 0;
}

static void squared_new_episode(Squared *env) {
    int s = env->cfg.size;
    memset(env->grid, SQ_EMPTY, (size_t)s * s);
    /* partial Fisher-Yates: num_targets distinct border cells */
    for (int i = 0; i < env->cfg.num_targets; i++) {
        int j = i + ocean_randint(&env->rng, env->perimeter_n - i);
        int t = env->perimeter[i];
        env->perimeter[i] = env->perimeter[j];
        env->perimeter[j] = t;
        env->grid[env->perimeter[i]] = SQ_TARGET;
    }
    env->row = env->col = s / 2;
    env->grid[env->row * s + env->col] = SQ_AGENT;
    env->tick = 0;
    env->remaining = env->cfg.num_targets;
    env->episode_return = 0;
    memcpy(env->observations, env->grid, (size_t)s * s);
}

static void c_reset(Squared *env) {
    squared_fill_perimeter(env);
    squared_new_episode(env);
}

static void c_step(Squared *env) {
    int s = env->cfg.size;
    int a = ocean_clamp(env->actions[0], SQ_ACTIONS);
    int r = env->row, c = env->col;
    if (a == SQ_UP && r > 0) r--;
    else if (a == SQ_DOWN && r < s - 1) r++;
    else if (a == SQ_LEFT && c > 0) c--;
    else if (a == SQ_RIGHT && c < s - 1) c++;
    float reward = 0;
    if (r != env->row || c != env->col) {
        int old = env->row * s + env->col, cell = r * s + c;
        if (env->grid[cell] == SQ_TARGET) {
            reward = 1.0f / env->cfg.num_targets;
            env->remaining--;
        }
        env->grid[old] = SQ_EMPTY;
        env->observations[old] = SQ_EMPTY;
        env->grid[cell] = SQ_AGENT;
        env->observations[cell] = SQ_AGENT;
        env->row = r;
        env->col = c;
    }
    env->tick++;
    env->episode_return += reward;
    env->rewards[0] = reward;
    int done = env->remaining == 0, timeout = env->tick >= env->cfg.max_steps;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = (unsigned char)(timeout && !done);
    if (done || timeout) {
        float collected = (float)(env->cfg.num_targets - env->remaining);
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, collected,
                          collected / env->cfg.num_targets);
        squared_new_episode(env);
    }
}

#define SQ_SCALE 16
static void c_frame_shape(Squared *env, int *h, int *w) { *h = *w = env->cfg.size * SQ_SCALE; }

static void c_render_rgb(Squared *env, unsigned char *frame) {
    static const unsigned char palette[3][3] = {{6, 24, 24}, {0, 187, 187}, {187, 0, 0}};
    ocean_render_grid(frame, env->grid, env->cfg.size, env->cfg.size, env->cfg.size, SQ_SCALE, palette, 3);
}

static int c_render_text(Squared *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_text_grid(&t, env->grid, env->cfg.size, env->cfg.size, env->cfg.size, ".@*", 3);
    ocean_puts(&t, "targets left ");
    ocean_puti(&t, env->remaining);
    ocean_puts(&t, "  step ");
    ocean_puti(&t, env->tick);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Squared *env) {
    free(env->grid);
    env->grid = NULL;
    free(env->perimeter);
    env->perimeter = NULL;
}
