/* Connect4 against a scripted opponent: the agent (first player) drops a piece in a column; the
 * opponent wins when it can, blocks the agent's immediate wins, and otherwise plays a random legal
 * column. +1 win, -1 loss, 0 draw. Dropping into a full column loses (-1), so the policy must learn
 * legality from the board it sees.
 *
 * Boards are bitboards: column c owns bits 7c..7c+5 (row 0 at the bottom) plus an always-empty
 * sentinel bit 7c+6, so a four-in-a-row test is four shift-and-mask pairs and the opponent's search
 * over seven columns costs a few dozen instructions. */
#include "ocean.h"
#include "spec.h"

/* C4_COLS and C4_ROWS come from spec.toml (they size the obs and the action) */
#define C4_CELLS (C4_COLS * C4_ROWS)

typedef struct Connect4 {
    OCEAN_SLOTS(float);
    Connect4Config cfg;  /* options (spec.toml) */
    uint64_t agent, opponent;   /* pieces */
    int height[C4_COLS];        /* pieces in each column */
    int moves, tick;
} Connect4;

static int c_init(Connect4 *env) { (void)env; return 0; }

static inline int c4_won(uint64_t b) {
    uint64_t m;
    m = b & (b >> 7); if (m & (m >> 14)) return 1;  /* horizontal */
    m = b & (b >> 6); if (m & (m >> 12)) return 1;  /* diagonal down-right */
    m = b & (b >> 8); if (m & (m >> 16)) return 1;  /* diagonal up-right */
    m = b & (b >> 1); if (m & (m >> 2)) return 1;   /* vertical */
    return 0;
}

static inline uint64_t c4_drop_bit(const Connect4 *env, int col) { return 1ULL << (7 * col + env->height[col]); }

/* obs is row-major with the top row first: +1 agent, -1 opponent, 0 empty */
static inline void c4_play(Connect4 *env, int col, int agent) {
    uint64_t bit = c4_drop_bit(env, col);
    int row = env->height[col]++;
    if (agent) env->agent |= bit; else env->opponent |= bit;
    env->observations[(C4_ROWS - 1 - row) * C4_COLS + col] = agent ? 1.0f : -1.0f;
    env->moves++;
}

static int c4_opponent_move(Connect4 *env) {
    int legal[C4_COLS], n = 0;
    for (int c = 0; c < C4_COLS; c++)
        if (env->height[c] < C4_ROWS) legal[n++] = c;
    for (int k = 0; k < n; k++)
        if (c4_won(env->opponent | c4_drop_bit(env, legal[k]))) return legal[k];
    for (int k = 0; k < n; k++)
        if (c4_won(env->agent | c4_drop_bit(env, legal[k]))) return legal[k];
    return legal[ocean_randint(&env->rng, n)];  /* n > 0: the caller checked the board is not full */
}

static void c4_new_episode(Connect4 *env) {
    env->agent = env->opponent = 0;
    memset(env->height, 0, sizeof(env->height));
    env->moves = env->tick = 0;
    memset(env->observations, 0, sizeof(float) * C4_CELLS);
}

static void c_reset(Connect4 *env) { c4_new_episode(env); }

static void c_step(Connect4 *env) {
    int col = ocean_clamp(env->actions[0], C4_COLS);
    float reward = 0;
    int done = 1;
    env->tick++;
    if (env->height[col] >= C4_ROWS) {
        reward = -1.0f;  /* illegal move: a loss */
    } else {
        c4_play(env, col, 1);
        if (c4_won(env->agent)) reward = 1.0f;
        else if (env->moves < C4_CELLS) {
            c4_play(env, c4_opponent_move(env), 0);
            if (c4_won(env->opponent)) reward = -1.0f;
            else done = env->moves == C4_CELLS;
        }
    }
    env->rewards[0] = reward;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = 0;
    if (done) {
        ocean_log_episode(&env->log, reward, (float)env->tick, reward, reward > 0 ? 1.0f : 0.0f);
        c4_new_episode(env);
    }
}

#define C4_SCALE 24
static void c_frame_shape(Connect4 *env, int *h, int *w) { *h = C4_ROWS * C4_SCALE; *w = C4_COLS * C4_SCALE; }

static void c_render_rgb(Connect4 *env, unsigned char *frame) {
    static const unsigned char board[3] = {20, 40, 160}, empty[3] = {10, 10, 30}, mine[3] = {230, 200, 30},
                               theirs[3] = {210, 40, 40};
    int h = C4_ROWS * C4_SCALE, w = C4_COLS * C4_SCALE;
    ocean_fill_rect(frame, h, w, 0, 0, w, h, board);
    for (int c = 0; c < C4_COLS; c++)
        for (int r = 0; r < C4_ROWS; r++) {
            uint64_t bit = 1ULL << (7 * c + r);
            const unsigned char *rgb = (env->agent & bit) ? mine : (env->opponent & bit) ? theirs : empty;
            ocean_fill_rect(frame, h, w, c * C4_SCALE + 3, (C4_ROWS - 1 - r) * C4_SCALE + 3, C4_SCALE - 6, C4_SCALE - 6, rgb);
        }
}

static int c_render_text(Connect4 *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int r = C4_ROWS - 1; r >= 0; r--) {
        for (int c = 0; c < C4_COLS; c++) {
            uint64_t bit = 1ULL << (7 * c + r);
            ocean_putc(&t, (env->agent & bit) ? 'X' : (env->opponent & bit) ? 'O' : '.');
        }
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "0123456\n");
    return t.len;
}

static void c_close(Connect4 *env) {}
