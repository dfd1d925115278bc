/* 2048. A 4x4 board of tiles 2^k; a move slides every tile toward one side, and two equal tiles that
 * meet merge once per move into the next power. A move that changes nothing is masked (the action
 * masks); taken anyway, it is a no-op that costs illegal_reward and spawns nothing. After every move
 * that changes the board a 2 (or, with probability four_chance, a 4) appears on a random empty cell.
 * The game ends when no move changes the board, or is truncated after max_steps.
 *
 * Cells hold exponents (0 empty, k the tile 2^k) in one byte each. The four directions share one
 * slide: each move walks four lines of four cells, listed per direction in a constant table, so
 * there is no transpose and no per-direction code. The mask needs no trial moves: a line can move
 * toward its front iff some adjacent pair (front, back) has an empty front and a tile behind, or two
 * equal tiles. Per merge the reward is the new tile's exponent / 10: a log scale, so a 1024 pays 1
 * and the small merges that build it still count. */
#include "ocean.h"
#include "spec.h"

enum { G2_UP, G2_DOWN, G2_LEFT, G2_RIGHT, G2_ACTIONS };
#define G2_LAST_PLANE (G2_PLANES - 1)
#define G2_REWARD_SCALE 0.1f

/* For each direction, four lines of cell indices, front (where tiles slide to) first. */
static const unsigned char G2_LINES[G2_ACTIONS][G2_SIDE][G2_SIDE] = {
    {{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}},  /* up */
    {{12, 8, 4, 0}, {13, 9, 5, 1}, {14, 10, 6, 2}, {15, 11, 7, 3}},  /* down */
    {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}},  /* left */
    {{3, 2, 1, 0}, {7, 6, 5, 4}, {11, 10, 9, 8}, {15, 14, 13, 12}},  /* right */
};

typedef struct G2048 {
    OCEAN_SLOTS(unsigned char);
    G2048Config cfg;
    unsigned char cells[G2_CELLS];  /* exponents */
    unsigned char legal[G2_ACTIONS];
    int top;                        /* largest exponent on the board */
    int tick, points;               /* steps; the classic score (sum of merged tile values) */
    float episode_return;
} G2048;

static int c_init(G2048 *env) {
    (void)env;
    return 0;
}

static inline int g2_plane(int exponent) { return exponent < G2_LAST_PLANE ? exponent : G2_LAST_PLANE; }

/* Slide one line toward its front; returns the summed exponents of the tiles merged into. */
static inline int g2_slide(G2048 *env, const unsigned char *line, int *changed) {
    unsigned char *b = env->cells, packed[G2_SIDE] = {0, 0, 0, 0};
    int n = 0, gain = 0;
    for (int k = 0; k < G2_SIDE; k++)
        if (b[line[k]]) packed[n++] = b[line[k]];
    int out = 0;
    for (int k = 0; k < n; k++, out++) {
        unsigned char v = packed[k];
        if (k + 1 < n && packed[k + 1] == v) {
            v++;
            k++;
            gain += v;
            env->points += 1 << v;
            if (v > env->top) env->top = v;
        }
        if (b[line[out]] != v) *changed = 1;
        b[line[out]] = v;
    }
    for (; out < G2_SIDE; out++) {
        if (b[line[out]]) *changed = 1;
        b[line[out]] = 0;
    }
    return gain;
}

/* Which of the four moves change the board, from adjacent pairs alone. */
static void g2_write_mask(G2048 *env) {
    const unsigned char *b = env->cells;
    int up = 0, down = 0, left = 0, right = 0;
    for (int r = 0; r < G2_SIDE; r++)
        for (int c = 0; c + 1 < G2_SIDE; c++) {
            int a = b[r * G2_SIDE + c], z = b[r * G2_SIDE + c + 1];  /* a left of z */
            int same = a && a == z;
            left |= same | (!a && z);
            right |= same | (a && !z);
            a = b[c * G2_SIDE + r], z = b[(c + 1) * G2_SIDE + r];    /* a above z */
            same = a && a == z;
            up |= same | (!a && z);
            down |= same | (a && !z);
        }
    env->legal[G2_UP] = (unsigned char)up;
    env->legal[G2_DOWN] = (unsigned char)down;
    env->legal[G2_LEFT] = (unsigned char)left;
    env->legal[G2_RIGHT] = (unsigned char)right;
    memcpy(env->action_masks, env->legal, G2_ACTIONS);
}

/* A 2 (or a 4) on a uniformly random empty cell; the caller knows one is empty. */
static void g2_spawn(G2048 *env) {
    int empty[G2_CELLS], n = 0;
    for (int i = 0; i < G2_CELLS; i++) empty[n] = i, n += !env->cells[i];
    int cell = empty[ocean_randint(&env->rng, n)];
    int v = ocean_randf(&env->rng) < env->cfg.four_chance ? 2 : 1;
    env->cells[cell] = (unsigned char)v;
    if (v > env->top) env->top = v;
}

static void g2_write_obs(G2048 *env) {
    unsigned char *obs = env->observations;
    memset(obs, 0, G2_CELLS * G2_PLANES);
    for (int i = 0; i < G2_CELLS; i++) obs[i * G2_PLANES + g2_plane(env->cells[i])] = 1;
}

static void g2_new_game(G2048 *env) {
    memset(env->cells, 0, sizeof(env->cells));
    env->top = env->tick = env->points = 0;
    env->episode_return = 0.0f;
    g2_spawn(env);
    g2_spawn(env);
    g2_write_obs(env);
    g2_write_mask(env);
}

static void c_reset(G2048 *env) { g2_new_game(env); }

static void c_step(G2048 *env) {
    int a = ocean_clamp(env->actions[0], G2_ACTIONS);
    float reward;
    env->tick++;
    if (env->legal[a]) {
        int changed = 0, gain = 0;
        for (int k = 0; k < G2_SIDE; k++) gain += g2_slide(env, G2_LINES[a][k], &changed);
        g2_spawn(env);  /* a legal move always changes the board, so a cell is empty */
        g2_write_obs(env);
        g2_write_mask(env);
        reward = G2_REWARD_SCALE * (float)gain;
    } else {
        reward = env->cfg.illegal_reward;
    }
    env->episode_return += reward;
    int over = !(env->legal[0] | env->legal[1] | env->legal[2] | env->legal[3]);
    int timeout = !over && env->tick >= env->cfg.max_steps;
    env->rewards[0] = reward;
    env->terminals[0] = (unsigned char)over;
    env->truncations[0] = (unsigned char)timeout;
    if (over || timeout) {
        int tile = 1 << env->top;
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)tile,
                          tile >= env->cfg.goal ? 1.0f : 0.0f);
        g2_new_game(env);
    }
}

#define G2_SCALE 32
#define G2_GAP 3
static void c_frame_shape(G2048 *env, int *h, int *w) {
    (void)env;
    *h = *w = G2_SIDE * G2_SCALE;
}

/* One colour per exponent, darker to brighter; digits are for the text view. */
static void c_render_rgb(G2048 *env, unsigned char *frame) {
    static const unsigned char palette[12][3] = {
        {60, 56, 50},  {238, 228, 218}, {237, 224, 200}, {242, 177, 121}, {245, 149, 99}, {246, 124, 95},
        {246, 94, 59}, {237, 207, 114}, {237, 204, 97},  {237, 200, 80},  {237, 197, 63}, {237, 194, 46},
    };
    static const unsigned char board[3] = {187, 173, 160}, beyond[3] = {60, 58, 50};
    int side = G2_SIDE * G2_SCALE;
    ocean_fill_rect(frame, side, side, 0, 0, side, side, board);
    for (int i = 0; i < G2_CELLS; i++) {
        int v = env->cells[i];
        const unsigned char *rgb = v < 12 ? palette[v] : beyond;
        ocean_fill_rect(frame, side, side, (i % G2_SIDE) * G2_SCALE + G2_GAP, (i / G2_SIDE) * G2_SCALE + G2_GAP,
                        G2_SCALE - 2 * G2_GAP, G2_SCALE - 2 * G2_GAP, rgb);
    }
}

static int c_render_text(G2048 *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int r = 0; r < G2_SIDE; r++) {
        for (int c = 0; c < G2_SIDE; c++) {
            int v = env->cells[r * G2_SIDE + c];
            long tile = v ? 1L << v : 0;
            int width = 1;
            for (long x = tile; x >= 10; x /= 10) width++;
            for (int pad = width; pad < 6; pad++) ocean_putc(&t, ' ');
            if (v) ocean_puti(&t, tile);
            else ocean_putc(&t, '.');
        }
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "score ");
    ocean_puti(&t, env->points);
    ocean_puts(&t, "  top ");
    ocean_puti(&t, 1L << env->top);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(G2048 *env) { (void)env; }
