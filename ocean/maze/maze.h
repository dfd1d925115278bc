/* Maze: a new maze every episode (randomised depth-first carving, any odd size), an 11x11 view
 * centred on the agent, and a reward of 1 only on reaching the goal. The grid is padded with walls
 * as wide as the view radius so a crop is 11 row copies with no bounds checks; the carving stack is
 * allocated once in c_init. */
#include <stdlib.h>
#include "ocean.h"
#include "spec.h"

#define MZ_SIDE (2 * MZ_VIEW + 1)  /* MZ_VIEW (5) comes from spec.toml: it sizes the obs */
enum { MZ_FLOOR = 0, MZ_WALL = 1, MZ_GOAL = 2 };
enum { MZ_UP, MZ_DOWN, MZ_LEFT, MZ_RIGHT, MZ_ACTIONS };

typedef struct Maze {
    OCEAN_SLOTS(unsigned char);
    MazeConfig cfg;  /* options (spec.toml) */
    int stride;
    unsigned char *grid;           /* [(height + 2*VIEW) * stride] */
    int *stack;                    /* carving stack: one entry per room */
    int agent, goal, tick;
} Maze;

/* Saved states (ocean.h): the memory c_init allocates. */
#define OCEAN_STATE_BLOCKS(X, env)                                             \
    X(grid, (size_t)((env)->cfg.height + 2 * MZ_VIEW) * (size_t)(env)->stride) \
    X(stack, sizeof(int) * (size_t)(((env)->cfg.width / 2) * ((env)->cfg.height / 2) + 1))

static int c_init(Maze *env) {
    env->stride = env->cfg.width + 2 * MZ_VIEW;
    env->grid = (unsigned char *)malloc((size_t)(env->cfg.height + 2 * MZ_VIEW) * env->stride);
    env->stack = (int *)malloc(sizeof(int) * (size_t)((env->cfg.width / 2) * (env->cfg.height / 2) + 1));
    if (env->grid == NULL || env->stack == NULL) return ocean_fail(env, "out of memory for the maze");
    return 0;
}

static inline int mz_cell(const Maze *env, int r, int c) { return (r + MZ_VIEW) * env->stride + c + MZ_VIEW; }

static void maze_random_room(Maze *env, int *r, int *c) {
    *r = 1 + 2 * ocean_randint(&env->rng, env->cfg.height / 2);
    *c = 1 + 2 * ocean_randint(&env->rng, env->cfg.width / 2);
}

/* Rooms sit at odd coordinates; carving a passage clears the wall between two rooms. */
static void maze_generate(Maze *env) {
    memset(env->grid, MZ_WALL, (size_t)(env->cfg.height + 2 * MZ_VIEW) * env->stride);
    int r, c, top = 0;
    maze_random_room(env, &r, &c);
    env->grid[mz_cell(env, r, c)] = MZ_FLOOR;
    env->stack[top++] = mz_cell(env, r, c);
    const int dr[4] = {-2, 2, 0, 0}, dc[4] = {0, 0, -2, 2};
    while (top > 0) {
        int cell = env->stack[top - 1];
        int cr = cell / env->stride - MZ_VIEW, cc = cell % env->stride - MZ_VIEW;
        int options[4], n = 0;
        for (int d = 0; d < 4; d++) {
            int nr = cr + dr[d], nc = cc + dc[d];
            if (nr > 0 && nr < env->cfg.height - 1 && nc > 0 && nc < env->cfg.width - 1 &&
                env->grid[mz_cell(env, nr, nc)] == MZ_WALL)
                options[n++] = d;
        }
        if (n == 0) {
            top--;
            continue;
        }
        int d = options[ocean_randint(&env->rng, n)];
        env->grid[mz_cell(env, cr + dr[d] / 2, cc + dc[d] / 2)] = MZ_FLOOR;
        env->grid[mz_cell(env, cr + dr[d], cc + dc[d])] = MZ_FLOOR;
        env->stack[top++] = mz_cell(env, cr + dr[d], cc + dc[d]);
    }
}

static void maze_write_obs(Maze *env) {
    const unsigned char *src = env->grid + env->agent - MZ_VIEW * env->stride - MZ_VIEW;
    for (int r = 0; r < MZ_SIDE; r++) memcpy(env->observations + r * MZ_SIDE, src + r * env->stride, MZ_SIDE);
}

static void maze_new_episode(Maze *env) {
    maze_generate(env);
    int r, c;
    maze_random_room(env, &r, &c);
    env->agent = mz_cell(env, r, c);
    do {  /* a maze has at least two rooms (the spec's ranges guarantee it) */
        maze_random_room(env, &r, &c);
        env->goal = mz_cell(env, r, c);
    } while (env->goal == env->agent);
    env->grid[env->goal] = MZ_GOAL;
    env->tick = 0;
    maze_write_obs(env);
}

static void c_reset(Maze *env) { maze_new_episode(env); }

static void c_step(Maze *env) {
    const int delta[MZ_ACTIONS] = {-env->stride, env->stride, -1, 1};
    int next = env->agent + delta[ocean_clamp(env->actions[0], MZ_ACTIONS)];
    int moved = env->grid[next] != MZ_WALL;
    if (moved) env->agent = next;
    env->tick++;
    int reached = env->agent == env->goal;
    int timeout = !reached && env->tick >= env->cfg.max_steps;
    env->rewards[0] = reached ? 1.0f : 0.0f;
    env->terminals[0] = (unsigned char)reached;
    env->truncations[0] = (unsigned char)timeout;
    if (reached || timeout) {
        ocean_log_episode(&env->log, (float)reached, (float)env->tick, (float)reached, (float)reached);
        maze_new_episode(env);
    } else if (moved) {
        maze_write_obs(env);  /* a bump into a wall leaves the view as it was */
    }
}

#define MZ_SCALE 8
static void c_frame_shape(Maze *env, int *h, int *w) {
    *h = env->cfg.height * MZ_SCALE;
    *w = env->cfg.width * MZ_SCALE;
}

static void c_render_rgb(Maze *env, unsigned char *frame) {
    static const unsigned char palette[3][3] = {{230, 230, 230}, {30, 30, 60}, {40, 200, 40}};
    static const unsigned char agent_rgb[3] = {220, 40, 40};
    int h = env->cfg.height * MZ_SCALE, w = env->cfg.width * MZ_SCALE;
    ocean_render_grid(frame, env->grid + mz_cell(env, 0, 0), env->cfg.height, env->cfg.width, env->stride, MZ_SCALE,
                      palette, 3);
    int r = env->agent / env->stride - MZ_VIEW, c = env->agent % env->stride - MZ_VIEW;
    ocean_fill_rect(frame, h, w, c * MZ_SCALE + 1, r * MZ_SCALE + 1, MZ_SCALE - 2, MZ_SCALE - 2, agent_rgb);
}

static int c_render_text(Maze *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int r = 0; r < env->cfg.height; r++) {
        for (int c = 0; c < env->cfg.width; c++) {
            int cell = mz_cell(env, r, c);
            ocean_putc(&t, cell == env->agent ? '@' : " #G"[env->grid[cell]]);
        }
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "step ");
    ocean_puti(&t, env->tick);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Maze *env) {
    free(env->grid);
    env->grid = NULL;
    free(env->stack);
    env->stack = NULL;
}
