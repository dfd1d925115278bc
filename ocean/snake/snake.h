/* Snake: many snakes share one arena with food. Each snake is an agent that sees the square of
 * cells around its head. Eating pays +1 and grows the snake (up to max_length); running into a wall
 * or any snake pays -1 and ends that snake's episode: it respawns at once (same-step autoreset, per
 * agent) while the others play on. Snakes move one after another in agent order, so a step is
 * deterministic.
 *
 * The grid carries a border of walls as wide as the vision radius, so every crop is a plain copy of
 * 2*vision+1 rows with no bounds checks. */
#include <stdlib.h>
#include "ocean.h"
#include "spec.h"

enum { SN_EMPTY = 0, SN_FOOD = 1, SN_WALL = 2, SN_SNAKE = 3 };
enum { SN_UP, SN_DOWN, SN_LEFT, SN_RIGHT, SN_ACTIONS };

typedef struct Snake {
    OCEAN_SLOTS(unsigned char);
    SnakeConfig cfg;  /* options (spec.toml) */
    int stride, rows;
    unsigned char *grid;  /* [rows * stride] */
    int *body;            /* [num_snakes * max_length] ring buffers of cell indices */
    int *head;            /* ring position of each head */
    int *length;
    int *tick;            /* steps in the current life */
    float *returns;
} Snake;

/* Saved states (ocean.h): the memory c_init allocates. */
#define OCEAN_STATE_BLOCKS(X, env)                                                       \
    X(grid, (size_t)(env)->rows *(size_t)(env)->stride)                                  \
    X(body, sizeof(int) * (size_t)(env)->cfg.num_snakes * (size_t)(env)->cfg.max_length) \
    X(head, sizeof(int) * (size_t)(env)->cfg.num_snakes)                                 \
    X(length, sizeof(int) * (size_t)(env)->cfg.num_snakes)                               \
    X(tick, sizeof(int) * (size_t)(env)->cfg.num_snakes)                                 \
    X(returns, sizeof(float) * (size_t)(env)->cfg.num_snakes)

static int c_init(Snake *env) {
    env->stride = env->cfg.width + 2 * env->cfg.vision;
    env->rows = env->cfg.height + 2 * env->cfg.vision;
    env->grid = (unsigned char *)calloc((size_t)env->rows * env->stride, 1);
    env->body = (int *)calloc((size_t)env->cfg.num_snakes * env->cfg.max_length, sizeof(int));
    env->head = (int *)calloc((size_t)env->cfg.num_snakes, sizeof(int));
    env->length = (int *)calloc((size_t)env->cfg.num_snakes, sizeof(int));
    env->tick = (int *)calloc((size_t)env->cfg.num_snakes, sizeof(int));
    env->returns = (float *)calloc((size_t)env->cfg.num_snakes, sizeof(float));
    if (!env->grid || !env->body || !env->head || !env->length || !env->tick || !env->returns)
        return ocean_fail(env, "out of memory for the arena and the snakes");
    return 0;
}

/* A random empty cell: a few random probes, then a scan, which the spec's check guarantees succeeds
 * (snakes and food can never fill more than half the arena). */
static int snake_empty_cell(Snake *env) {
    for (int tries = 0; tries < 16; tries++) {
        int r = env->cfg.vision + ocean_randint(&env->rng, env->cfg.height);
        int c = env->cfg.vision + ocean_randint(&env->rng, env->cfg.width);
        int cell = r * env->stride + c;
        if (env->grid[cell] == SN_EMPTY) return cell;
    }
    int start = ocean_randint(&env->rng, env->cfg.width * env->cfg.height);
    for (int k = 0; k < env->cfg.width * env->cfg.height; k++) {
        int i = (start + k) % (env->cfg.width * env->cfg.height);
        int cell = (env->cfg.vision + i / env->cfg.width) * env->stride + env->cfg.vision + i % env->cfg.width;
        if (env->grid[cell] == SN_EMPTY) return cell;
    }
    return -1;  /* unreachable with a validated config */
}

static void snake_spawn(Snake *env, int i) {
    int cell = snake_empty_cell(env);
    env->head[i] = 0;
    env->length[i] = cell >= 0;
    env->tick[i] = 0;
    env->returns[i] = 0;
    if (cell >= 0) {
        env->body[i * env->cfg.max_length] = cell;
        env->grid[cell] = SN_SNAKE;
    }
}

static void snake_clear_body(Snake *env, int i) {
    int L = env->cfg.max_length, *ring = env->body + i * L;
    for (int k = 0; k < env->length[i]; k++) env->grid[ring[(env->head[i] - k + L) % L]] = SN_EMPTY;
    env->length[i] = 0;
}

static void snake_place_food(Snake *env) {
    int cell = snake_empty_cell(env);
    if (cell >= 0) env->grid[cell] = SN_FOOD;
}

static void snake_write_obs(Snake *env) {
    int v = env->cfg.vision, side = 2 * v + 1, L = env->cfg.max_length;
    for (int i = 0; i < env->cfg.num_snakes; i++) {
        unsigned char *obs = env->observations + (size_t)i * side * side;
        const unsigned char *src = env->grid + env->body[i * L + env->head[i]] - v * env->stride - v;
        for (int r = 0; r < side; r++) memcpy(obs + r * side, src + r * env->stride, (size_t)side);
    }
}

static void c_reset(Snake *env) {
    memset(env->grid, SN_WALL, (size_t)env->rows * env->stride);
    for (int r = 0; r < env->cfg.height; r++)
        memset(env->grid + (r + env->cfg.vision) * env->stride + env->cfg.vision, SN_EMPTY, (size_t)env->cfg.width);
    for (int i = 0; i < env->cfg.num_snakes; i++) snake_spawn(env, i);
    for (int f = 0; f < env->cfg.num_food; f++) snake_place_food(env);
    snake_write_obs(env);
}

static void c_step(Snake *env) {
    int L = env->cfg.max_length;
    const int delta[SN_ACTIONS] = {-env->stride, env->stride, -1, 1};
    for (int i = 0; i < env->cfg.num_snakes; i++) {
        int *ring = env->body + i * L;
        int next = ring[env->head[i]] + delta[ocean_clamp(env->actions[i], SN_ACTIONS)];
        int cell = env->grid[next];
        float reward = 0;
        int died = cell == SN_WALL || cell == SN_SNAKE;
        if (died) {
            reward = -1.0f;
        } else {
            if (cell == SN_FOOD) reward = 1.0f;
            if (cell != SN_FOOD || env->length[i] == L) {  /* move: the tail cell frees up */
                int tail = (env->head[i] - env->length[i] + 1 + L) % L;
                env->grid[ring[tail]] = SN_EMPTY;
                env->length[i]--;
            }
            env->head[i] = (env->head[i] + 1) % L;
            ring[env->head[i]] = next;
            env->length[i]++;
            env->grid[next] = SN_SNAKE;
            if (cell == SN_FOOD) snake_place_food(env);  /* after the head moved in, never onto it */
        }
        env->tick[i]++;
        env->returns[i] += reward;
        env->rewards[i] = reward;
        int timeout = !died && env->tick[i] >= env->cfg.max_steps;
        env->terminals[i] = (unsigned char)died;
        env->truncations[i] = (unsigned char)timeout;
        if (died || timeout) {
            float length = (float)env->length[i];
            ocean_log_episode(&env->log, env->returns[i], (float)env->tick[i], length, length / L);
            snake_clear_body(env, i);
            snake_spawn(env, i);
        }
    }
    snake_write_obs(env);
}

#define SN_SCALE 4
static void c_frame_shape(Snake *env, int *h, int *w) {
    *h = env->cfg.height * SN_SCALE;
    *w = env->cfg.width * SN_SCALE;
}

static void c_render_rgb(Snake *env, unsigned char *frame) {
    static const unsigned char palette[4][3] = {{6, 24, 24}, {0, 200, 80}, {120, 120, 120}, {0, 120, 220}};
    static const unsigned char head_rgb[3] = {250, 220, 60};
    int v = env->cfg.vision, h = env->cfg.height * SN_SCALE, w = env->cfg.width * SN_SCALE;
    ocean_render_grid(frame, env->grid + v * env->stride + v, env->cfg.height, env->cfg.width, env->stride, SN_SCALE,
                      palette, 4);
    for (int i = 0; i < env->cfg.num_snakes; i++) {
        int cell = env->body[i * env->cfg.max_length + env->head[i]];
        int r = cell / env->stride - v, c = cell % env->stride - v;
        ocean_fill_rect(frame, h, w, c * SN_SCALE, r * SN_SCALE, SN_SCALE, SN_SCALE, head_rgb);
    }
}

static int c_render_text(Snake *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    int v = env->cfg.vision;
    for (int r = 0; r < env->cfg.height; r++) {
        for (int c = 0; c < env->cfg.width; c++) {
            int cell = (r + v) * env->stride + c + v;
            char ch = " *#o"[env->grid[cell]];
            for (int i = 0; i < env->cfg.num_snakes && ch == 'o'; i++)
                if (env->body[i * env->cfg.max_length + env->head[i]] == cell) ch = '@';
            ocean_putc(&t, ch);
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Snake *env) {
    free(env->grid);
    free(env->body);
    free(env->head);
    free(env->length);
    free(env->tick);
    free(env->returns);
    env->grid = NULL;
    env->body = env->head = env->length = env->tick = NULL;
    env->returns = NULL;
}
