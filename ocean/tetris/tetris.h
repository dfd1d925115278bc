/* Tetris: pieces drop into a well of n_rows x n_cols cells; a full row clears.
 *
 * Two action sets. Placements (placement=true, the default: one piece per step, as in most Tetris
 * RL work): action r * n_cols + c drops the piece turned r times with its leftmost cell in column c
 * (clamped to the field), straight down from the top; no hold. Moves (placement=false, the arcade
 * game): 0 nothing, 1 left, 2 right, 3 rotate clockwise, 4 soft drop (one row), 5 hard drop, 6 hold.
 * Pieces come from a 7-bag (every piece once per seven, shuffled); `preview` upcoming pieces are in
 * the observation. Gravity moves the piece down one row every `ticks_per_fall` steps; a piece that
 * cannot move down locks. A full row clears. The game ends when a new piece does not fit
 * (terminal), or is truncated after `max_ticks` steps. Optional garbage rows rise from the bottom
 * every `garbage_interval` steps.
 *
 * Rewards: +1 per cleared line (the score the baseline compares), +piece_reward per placed piece,
 * -hole_penalty per hole a placement makes (+ per hole it opens up again), -1 for topping out. The
 * piece term pays for surviving, which takes lines; without it, topping out early is the cheapest way
 * to stop paying for holes, and PPO finds that first.
 *
 * The board is a column of 32-bit row masks: bit TT_PAD + c is column c, the bits outside the field
 * are always set (walls) and the rows under the field are all ones (floor), so a collision test is
 * four AND operations and a full row is a compare with ~0. The observation (board, piece one-hots,
 * then each column's height and holes) is patched, not rebuilt: moving a piece rewrites its four
 * cells and its four landing ("ghost") cells; a lock writes four cells, or the rows down to the
 * piece after a clear, and the surface.
 */
#include "ocean.h"
#include "spec.h"  /* generated from spec.toml: TetrisConfig and the constants */

#define TT_ROTS 4
#define TT_PAD 4                 /* wall bits left of column 0 */

enum { TT_NOOP, TT_LEFT, TT_RIGHT, TT_ROTATE, TT_SOFT, TT_HARD, TT_HOLD };
enum { TT_EMPTY = 0, TT_BLOCK = 1, TT_PIECE = 2, TT_GHOST = 3 };  /* board values in the observation */

typedef struct Tetris {
    OCEAN_SLOTS(unsigned char);
    TetrisConfig cfg;          /* the options of spec.toml, validated */
    /* derived at init */
    uint32_t empty_row;          /* walls only */
    int board_size;              /* n_rows * n_cols */
    int surface_offset;          /* where the column heights and holes start in the observation */
    /* state */
    uint32_t rows[TT_MAX_ROWS + 4];
    unsigned char color[TT_MAX_ROWS * TT_MAX_COLS];  /* piece id + 1 per locked cell, for rendering */
    int piece, rot, row, col, ghost_row;
    int bag[TT_PIECES], bag_pos;
    int queue[TT_MAX_PREVIEW + 1], queue_head;       /* upcoming pieces, ring buffer */
    int hold, can_hold;
    int tick, fall_tick, garbage_tick;
    int lines, pieces, holes;
    unsigned char height[TT_MAX_COLS], col_holes[TT_MAX_COLS];  /* the surface, as observed */
    float episode_return;
    int plan_rot, plan_col, plan_ready, last_row, last_col, last_rot;  /* autopilot */
} Tetris;

/* Each piece in its 4x4 box as four row masks (bit c = box column c), top row first, for rotations
 * 0-3: rotation k + 1 is rotation k turned clockwise within the piece's box (4 wide for I and O, 3 for
 * the rest; O does not turn). One table shared by every env (read-only): a copy per env would cost
 * each step a cache miss. tests/test_ocean_enduro_tetris_rware.py checks it against the turning rule. */
static const uint32_t TT_SHAPES[TT_PIECES][TT_ROTS][4] = {
    {{0x0, 0xf, 0x0, 0x0}, {0x4, 0x4, 0x4, 0x4}, {0x0, 0x0, 0xf, 0x0}, {0x2, 0x2, 0x2, 0x2}},  /* I */
    {{0x6, 0x6, 0x0, 0x0}, {0x6, 0x6, 0x0, 0x0}, {0x6, 0x6, 0x0, 0x0}, {0x6, 0x6, 0x0, 0x0}},  /* O */
    {{0x2, 0x7, 0x0, 0x0}, {0x2, 0x6, 0x2, 0x0}, {0x0, 0x7, 0x2, 0x0}, {0x2, 0x3, 0x2, 0x0}},  /* T */
    {{0x6, 0x3, 0x0, 0x0}, {0x2, 0x6, 0x4, 0x0}, {0x0, 0x6, 0x3, 0x0}, {0x1, 0x3, 0x2, 0x0}},  /* S */
    {{0x3, 0x6, 0x0, 0x0}, {0x4, 0x6, 0x2, 0x0}, {0x0, 0x3, 0x6, 0x0}, {0x2, 0x3, 0x1, 0x0}},  /* Z */
    {{0x1, 0x7, 0x0, 0x0}, {0x6, 0x2, 0x2, 0x0}, {0x0, 0x7, 0x4, 0x0}, {0x2, 0x2, 0x3, 0x0}},  /* J */
    {{0x4, 0x7, 0x0, 0x0}, {0x2, 0x2, 0x6, 0x0}, {0x0, 0x7, 0x1, 0x0}, {0x3, 0x2, 0x2, 0x0}},  /* L */
};
static const char TT_NAMES[] = "IOTSZJL";

static int c_init(Tetris *env) {
    env->empty_row = ~(((1u << env->cfg.n_cols) - 1) << TT_PAD);
    env->board_size = env->cfg.n_rows * env->cfg.n_cols;
    env->surface_offset = env->board_size + TT_PIECES * (env->cfg.preview + 2) + 2;
    return 0;  /* fixed-size state: nothing to allocate */
}

/* First and last filled box column of a piece in a rotation. */
static inline int tt_left(int piece, int rot) {
    const uint32_t *s = TT_SHAPES[piece][rot];
    return __builtin_ctz(s[0] | s[1] | s[2] | s[3]);
}

static inline int tt_right(int piece, int rot) {
    const uint32_t *s = TT_SHAPES[piece][rot];
    return 31 - __builtin_clz(s[0] | s[1] | s[2] | s[3]);
}

static inline int tt_fits(const Tetris *env, const uint32_t *rows, int piece, int rot, int row, int col) {
    const uint32_t *s = TT_SHAPES[piece][rot];
    int shift = col + TT_PAD;
    return !(((s[0] << shift) & rows[row]) | ((s[1] << shift) & rows[row + 1]) | ((s[2] << shift) & rows[row + 2]) |
             ((s[3] << shift) & rows[row + 3]));
}

static inline int tt_landing(const Tetris *env, const uint32_t *rows, int piece, int rot, int row, int col) {
    while (tt_fits(env, rows, piece, rot, row + 1, col)) row++;
    return row;
}

/* ---- observation ---- */

/* Set the cells of a piece placed at (row, col) to `value` in the board part of the observation. */
static inline void tt_paint(Tetris *env, int piece, int rot, int row, int col, unsigned char value) {
    const uint32_t *s = TT_SHAPES[piece][rot];
    for (int r = 0; r < 4; r++) {
        uint32_t m = s[r];
        int base = (row + r) * env->cfg.n_cols + col;  /* col may be negative: index, never a pointer, before 0 */
        while (m) {
            env->observations[base + __builtin_ctz(m)] = value;
            m &= m - 1;
        }
    }
}

static inline void tt_paint_piece(Tetris *env) {
    tt_paint(env, env->piece, env->rot, env->ghost_row, env->col, TT_GHOST);
    tt_paint(env, env->piece, env->rot, env->row, env->col, TT_PIECE);
}

static inline void tt_erase_piece(Tetris *env) {
    tt_paint(env, env->piece, env->rot, env->ghost_row, env->col, TT_EMPTY);
    tt_paint(env, env->piece, env->rot, env->row, env->col, TT_EMPTY);
}

/* Rewrite board rows [0, end) of the observation from the row masks. */
static void tt_write_rows(Tetris *env, int end) {
    unsigned char *o = env->observations;
    for (int r = 0; r < end; r++) {
        uint32_t m = env->rows[r] >> TT_PAD;
        for (int c = 0; c < env->cfg.n_cols; c++) *o++ = (unsigned char)((m >> c) & 1);
    }
}

static inline int tt_queue_at(const Tetris *env, int k) {
    return env->queue[(env->queue_head + k) % (TT_MAX_PREVIEW + 1)];
}

/* One-hots after the board: current piece and `preview` upcoming ones, the held piece, can-hold,
 * and whether gravity pulls on the next step. */
static void tt_write_side(Tetris *env) {
    unsigned char *o = env->observations + env->board_size;
    int n = TT_PIECES * (env->cfg.preview + 2) + 2;
    memset(o, 0, (size_t)n);
    o[env->piece] = 1;
    for (int k = 0; k < env->cfg.preview; k++) o[TT_PIECES * (k + 1) + tt_queue_at(env, k)] = 1;
    o += TT_PIECES * (env->cfg.preview + 1);
    if (env->hold >= 0) o[env->hold] = 1;
    o[TT_PIECES] = (unsigned char)env->can_hold;
    o[TT_PIECES + 1] = (unsigned char)(env->fall_tick + 1 >= env->cfg.ticks_per_fall);
}

/* ---- pieces ---- */

static int tt_draw(Tetris *env) {
    if (env->bag_pos == TT_PIECES) {
        for (int i = TT_PIECES - 1; i > 0; i--) {  /* Fisher-Yates */
            int j = ocean_randint(&env->rng, i + 1);
            int t = env->bag[i];
            env->bag[i] = env->bag[j];
            env->bag[j] = t;
        }
        env->bag_pos = 0;
    }
    return env->bag[env->bag_pos++];
}

static int tt_next_piece(Tetris *env) {
    int p = env->queue[env->queue_head];
    env->queue[env->queue_head] = tt_draw(env);
    env->queue_head = (env->queue_head + 1) % (TT_MAX_PREVIEW + 1);
    return p;
}

/* Put `piece` at the top; returns 0 when it does not fit (game over). */
static int tt_spawn(Tetris *env, int piece) {
    env->piece = piece;
    env->rot = 0;
    env->row = 0;
    env->col = (env->cfg.n_cols - 4) / 2 + (piece >= 2);  /* 3-wide boxes one column right: centred */
    env->fall_tick = 0;
    env->plan_ready = 0;
    if (!tt_fits(env, env->rows, piece, 0, 0, env->col)) return 0;
    if (!env->cfg.placement) env->ghost_row = tt_landing(env, env->rows, piece, 0, 0, env->col);
    return 1;
}

/* Bit count without the POPCNT instruction, which the portable build may not assume (the builtin
 * would become a library call). */
static inline int tt_popcount(uint32_t x) {
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    return (int)((((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24);
}

/* The stack's surface, written after the side one-hots: each column's height and holes (empty cells
 * under its top block). They are in the board too, but a small MLP learns placements much faster
 * when the profile a piece must fit is spelled out. Returns the holes in all.
 * Holes are counted in byte lanes of two 64-bit words (columns 0-7, 8-15): a row's gap bits are
 * spread to bytes four at a time through TT_SPREAD and added, so a row costs a few adds whatever the
 * number of holes in it. */
#define TT_S(b)                                                                                 \
    ((uint32_t)((b) & 1) | (uint32_t)(((b) >> 1) & 1) << 8 | (uint32_t)(((b) >> 2) & 1) << 16 | \
     (uint32_t)(((b) >> 3) & 1) << 24)
static const uint32_t TT_SPREAD[16] = {TT_S(0), TT_S(1), TT_S(2),  TT_S(3),  TT_S(4),  TT_S(5),  TT_S(6),  TT_S(7),
                                       TT_S(8), TT_S(9), TT_S(10), TT_S(11), TT_S(12), TT_S(13), TT_S(14), TT_S(15)};

static int tt_write_surface(Tetris *env) {
    unsigned char *heights = env->height, *holes = env->col_holes;
    int n_rows = env->cfg.n_rows, n_cols = env->cfg.n_cols, r = 0, total = 0;
    uint32_t field = ~env->empty_row, covered = 0;
    uint64_t lo = 0, hi = 0;
    memset(heights, 0, (size_t)n_cols);
    while (r < n_rows && !(env->rows[r] & field)) r++;  /* empty rows on top */
    for (; r < n_rows; r++) {
        uint32_t filled = env->rows[r] & field;
        for (uint32_t top = (filled & ~covered) >> TT_PAD; top; top &= top - 1)
            heights[__builtin_ctz(top)] = (unsigned char)(n_rows - r);
        uint32_t gap = (covered & ~filled) >> TT_PAD;  /* n_cols <= 16 bits */
        if (gap) {
            lo += (uint64_t)TT_SPREAD[gap & 15] | (uint64_t)TT_SPREAD[(gap >> 4) & 15] << 32;
            hi += (uint64_t)TT_SPREAD[(gap >> 8) & 15] | (uint64_t)TT_SPREAD[(gap >> 12) & 15] << 32;
            total += tt_popcount(gap);
        }
        covered |= filled;
    }
    for (int c = 0; c < n_cols; c++) holes[c] = (unsigned char)((c < 8 ? lo >> (8 * c) : hi >> (8 * (c - 8))) & 0xFF);
    unsigned char *o = env->observations + env->surface_offset;
    memcpy(o, heights, (size_t)n_cols);
    memcpy(o + n_cols, holes, (size_t)n_cols);
    return total;
}

/* The top and bottom box row of each box column of a piece (-1: the column is empty). Every
 * tetromino's cells in one column are contiguous, whatever the rotation. */
static inline void tt_profile(int piece, int rot, int top[4], int bottom[4]) {
    const uint32_t *s = TT_SHAPES[piece][rot];
    for (int c = 0; c < 4; c++) top[c] = bottom[c] = -1;
    for (int r = 0; r < 4; r++)
        for (uint32_t m = s[r]; m; m &= m - 1) {
            int c = __builtin_ctz(m);
            if (top[c] < 0) top[c] = r;
            bottom[c] = r;
        }
}

/* Where a piece dropped straight down from `row` comes to rest: from the column heights when every
 * one of its columns is still above that column's top block (always so for placements on a board
 * with no piece inside it), else by walking down. Both give the row tt_landing gives. */
static inline int tt_drop(const Tetris *env, int piece, int rot, int row, int col) {
    int top[4], bottom[4], land = 1 << 30;
    tt_profile(piece, rot, top, bottom);
    for (int c = 0; c < 4; c++) {
        if (top[c] < 0) continue;
        int t = env->cfg.n_rows - env->height[col + c];  /* row of the column's top block (n_rows: none) */
        if (row + bottom[c] >= t) return tt_landing(env, env->rows, piece, rot, row, col);
        if (t - 1 - bottom[c] < land) land = t - 1 - bottom[c];
    }
    return land;
}

/* The surface after locking a piece that cleared nothing: when it rests on top of every column it
 * covers, each such column's height becomes the piece's top there and the cells between the piece and
 * the old top become holes (the common case, O(4)); else (a piece slid under an overhang) recount
 * the board. Returns the holes in all. */
static int tt_surface_after_lock(Tetris *env, int piece, int rot, int row, int col) {
    int top[4], bottom[4], n_rows = env->cfg.n_rows, n_cols = env->cfg.n_cols, total = env->holes;
    tt_profile(piece, rot, top, bottom);
    for (int c = 0; c < 4; c++)
        if (top[c] >= 0 && row + bottom[c] >= n_rows - env->height[col + c]) return tt_write_surface(env);
    unsigned char *o = env->observations + env->surface_offset;
    for (int c = 0; c < 4; c++) {
        if (top[c] < 0) continue;
        int x = col + c, gap = n_rows - env->height[x] - 1 - (row + bottom[c]);
        env->height[x] = (unsigned char)(n_rows - row - top[c]);
        env->col_holes[x] = (unsigned char)(env->col_holes[x] + gap);
        total += gap;
        o[x] = env->height[x];
        o[n_cols + x] = env->col_holes[x];
    }
    return total;
}

/* Holes: empty cells with a filled cell somewhere above them in the same column. */
static int tt_count_holes(const Tetris *env, const uint32_t *rows) {
    uint32_t field = ~env->empty_row, covered = 0;
    int r = 0, holes = 0;
    while (r < env->cfg.n_rows && !(rows[r] & field)) r++;  /* empty rows on top hold no holes */
    for (; r < env->cfg.n_rows; r++) {
        uint32_t filled = rows[r] & field;
        holes += tt_popcount(covered & ~filled);
        covered |= filled;
    }
    return holes;
}

/* Write the piece into `rows` and clear full rows; returns the number cleared. `color` may be NULL. */
static int tt_lock_into(const Tetris *env, uint32_t *rows, unsigned char *color, int piece, int rot, int row, int col) {
    const uint32_t *s = TT_SHAPES[piece][rot];
    int cleared = 0;
    for (int r = 0; r < 4; r++) {
        if (!s[r]) continue;
        rows[row + r] |= s[r] << (col + TT_PAD);
        if (color) {
            uint32_t m = s[r];
            while (m) {
                color[(row + r) * env->cfg.n_cols + col + __builtin_ctz(m)] = (unsigned char)(piece + 1);
                m &= m - 1;
            }
        }
    }
    for (int r = row; r < row + 4 && r < env->cfg.n_rows; r++) {
        if (rows[r] != 0xFFFFFFFFu) continue;
        memmove(rows + 1, rows, sizeof(uint32_t) * (size_t)r);  /* everything above drops one row */
        rows[0] = env->empty_row;
        if (color) {
            memmove(color + env->cfg.n_cols, color, (size_t)(r * env->cfg.n_cols));
            memset(color, 0, (size_t)env->cfg.n_cols);
        }
        cleared++;
    }
    return cleared;
}

/* ---- the scripted placer (autopilot) ----
 * For the current piece it tries every rotation and column reachable by turning and sliding at the
 * top and then dropping straight down, and keeps the placement with the best score: lines cleared
 * now, fewest holes, then lowest stack. It never uses hold or the preview. */
static float tt_placement_score(const Tetris *env, const uint32_t *rows, int cleared) {
    uint32_t field = ~env->empty_row;
    int holes = tt_count_holes(env, rows), top = env->cfg.n_rows;
    for (int r = 0; r < env->cfg.n_rows; r++)
        if (rows[r] & field) {
            top = r;
            break;
        }
    return 1.0f * cleared - 1.0f * holes - 0.1f * (float)(env->cfg.n_rows - top);
}

static void tt_plan(Tetris *env) {
    float best = -1e30f;
    env->plan_rot = env->rot;
    env->plan_col = env->col;
    for (int rot = 0; rot < TT_ROTS; rot++) {
        if (!env->cfg.placement && !tt_fits(env, env->rows, env->piece, rot, env->row, env->col)) continue;
        for (int col = -TT_PAD + 1; col < env->cfg.n_cols; col++) {
            if (!tt_fits(env, env->rows, env->piece, rot, env->row, col)) continue;
            /* moving, the slide from the current column must be free; placing teleports */
            int step = col < env->col ? -1 : 1, ok = 1;
            for (int c = env->col; c != col && ok && !env->cfg.placement; c += step)
                ok = tt_fits(env, env->rows, env->piece, rot, env->row, c + step);
            if (!ok) continue;
            uint32_t rows[TT_MAX_ROWS + 4];
            memcpy(rows, env->rows, sizeof(uint32_t) * (size_t)(env->cfg.n_rows + 4));
            int land = tt_landing(env, rows, env->piece, rot, env->row, col);
            int cleared = tt_lock_into(env, rows, NULL, env->piece, rot, land, col);
            float score = tt_placement_score(env, rows, cleared);
            if (score > best) {
                best = score;
                env->plan_rot = rot;
                env->plan_col = col;
            }
        }
    }
    env->plan_ready = 1;
}

static int tt_scripted_action(Tetris *env) {
    if (env->cfg.placement) {
        tt_plan(env);
        return env->plan_rot * env->cfg.n_cols + env->plan_col + tt_left(env->piece, env->plan_rot);
    }
    if (!env->plan_ready) tt_plan(env);
    else if (env->row == env->last_row && env->col == env->last_col && env->rot == env->last_rot)
        return TT_HARD;  /* the last move was blocked: take what we have */
    env->last_row = env->row;
    env->last_col = env->col;
    env->last_rot = env->rot;
    if (env->rot != env->plan_rot) return TT_ROTATE;
    if (env->col < env->plan_col) return TT_RIGHT;
    if (env->col > env->plan_col) return TT_LEFT;
    return TT_HARD;
}

/* ---- episode ---- */

static void tt_new_episode(Tetris *env) {
    for (int r = 0; r < env->cfg.n_rows; r++) env->rows[r] = env->empty_row;
    for (int r = env->cfg.n_rows; r < env->cfg.n_rows + 4; r++) env->rows[r] = 0xFFFFFFFFu;
    memset(env->color, 0, sizeof(env->color));
    for (int i = 0; i < TT_PIECES; i++) env->bag[i] = i;
    env->bag_pos = TT_PIECES;
    env->queue_head = 0;
    for (int k = 0; k <= TT_MAX_PREVIEW; k++) env->queue[k] = tt_draw(env);
    env->hold = -1;
    env->can_hold = 1;
    env->tick = env->garbage_tick = 0;
    env->lines = env->pieces = env->holes = 0;
    env->episode_return = 0;
    env->last_row = env->last_col = env->last_rot = -100;
    tt_spawn(env, tt_next_piece(env));  /* an empty board always fits */
    tt_write_rows(env, env->cfg.n_rows);
    tt_write_surface(env);
    if (!env->cfg.placement) tt_paint_piece(env);
    tt_write_side(env);
}

static void c_reset(Tetris *env) { tt_new_episode(env); }

/* The observation's board mirrors `rows` everywhere but under the falling piece and its ghost (moves
 * only): steps erase that overlay first, change the board, and paint it again at the end. */

/* Push a garbage row (full but for one random gap) in from the bottom; 0 when the stack overflows. */
static int tt_add_garbage(Tetris *env) {
    if (env->rows[0] != env->empty_row) return 0;
    memmove(env->rows, env->rows + 1, sizeof(uint32_t) * (size_t)(env->cfg.n_rows - 1));
    memmove(env->color, env->color + env->cfg.n_cols, (size_t)((env->cfg.n_rows - 1) * env->cfg.n_cols));
    int gap = ocean_randint(&env->rng, env->cfg.n_cols);
    env->rows[env->cfg.n_rows - 1] = 0xFFFFFFFFu & ~(1u << (gap + TT_PAD));
    unsigned char *line = env->color + (env->cfg.n_rows - 1) * env->cfg.n_cols;
    for (int c = 0; c < env->cfg.n_cols; c++) line[c] = c == gap ? 0 : TT_PIECES + 1;
    if (!tt_fits(env, env->rows, env->piece, env->rot, env->row, env->col) && env->row > 0) env->row--;
    return tt_fits(env, env->rows, env->piece, env->rot, env->row, env->col);
}

/* Lock the current piece; returns the reward of the placement and sets *over when the next piece
 * does not fit. */
static float tt_lock(Tetris *env, int *over) {
    int cleared = tt_lock_into(env, env->rows, env->color, env->piece, env->rot, env->row, env->col);
    /* a clear moves every row above it; the piece may also have left cells below the lowest clear */
    if (cleared) tt_write_rows(env, env->row + 4 < env->cfg.n_rows ? env->row + 4 : env->cfg.n_rows);
    else tt_paint(env, env->piece, env->rot, env->row, env->col, TT_BLOCK);
    int holes = cleared ? tt_write_surface(env) : tt_surface_after_lock(env, env->piece, env->rot, env->row, env->col);
    float reward = (float)cleared + env->cfg.piece_reward - env->cfg.hole_penalty * (float)(holes - env->holes);
    env->holes = holes;
    env->lines += cleared;
    env->pieces++;
    env->can_hold = 1;
    *over = !tt_spawn(env, tt_next_piece(env));
    return reward;
}

/* End-of-step bookkeeping shared by both action sets: garbage, flags, the log, the overlay. */
static void tt_finish(Tetris *env, float reward, int over) {
    if (!over && env->cfg.garbage_interval > 0 && ++env->garbage_tick >= env->cfg.garbage_interval) {
        env->garbage_tick = 0;
        over = !tt_add_garbage(env);
        if (!over) {
            env->ghost_row = tt_landing(env, env->rows, env->piece, env->rot, env->row, env->col);
            env->holes = tt_write_surface(env);
            tt_write_rows(env, env->cfg.n_rows);
        }
    }
    if (over) reward -= 1.0f;
    env->episode_return += reward;
    env->rewards[0] = reward;
    int timeout = !over && env->tick >= env->cfg.max_ticks;
    env->terminals[0] = (unsigned char)over;
    env->truncations[0] = (unsigned char)timeout;
    if (over || timeout) {
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)env->lines,
                          (float)env->tick / (float)env->cfg.max_ticks);
        tt_new_episode(env);
        return;
    }
    if (!env->cfg.placement) tt_paint_piece(env);  /* placing, the piece has no position yet */
    tt_write_side(env);
}

static int tt_hold(Tetris *env) {
    if (!env->can_hold) return 1;
    int next = env->hold >= 0 ? env->hold : tt_next_piece(env);
    env->hold = env->piece;
    env->can_hold = 0;
    return tt_spawn(env, next);
}

/* Every placement action places the current piece: there is no hold here, because a step that
 * places nothing is a free way to stall (a probe learned to hold forever rather than risk holes). */
static void tt_step_placement(Tetris *env) {
    int a = env->cfg.autopilot ? tt_scripted_action(env) : ocean_clamp(env->actions[0], TT_ROTS * env->cfg.n_cols);
    float reward = 0;
    int over = 0;
    env->tick++;
    int rot = a / env->cfg.n_cols, p = env->piece;
    int col = a % env->cfg.n_cols - tt_left(p, rot), last = env->cfg.n_cols - 1 - tt_right(p, rot);
    if (col > last) col = last;
    if (tt_fits(env, env->rows, p, rot, 0, col)) {
        env->rot = rot;
        env->col = col;
        env->row = tt_drop(env, p, rot, 0, col);
        reward = tt_lock(env, &over);
    } else {
        over = 1;  /* no room at the top: topped out */
    }
    tt_finish(env, reward, over);
}

static void tt_step_moves(Tetris *env) {
    int a = env->cfg.autopilot ? tt_scripted_action(env) : ocean_clamp(env->actions[0], TT_MOVE_ACTIONS);
    float reward = 0;
    int over = 0, locked = 0, rot = env->rot, col = env->col;
    env->tick++;
    tt_erase_piece(env);

    switch (a) {
    case TT_LEFT:
    case TT_RIGHT: {
        int c = env->col + (a == TT_LEFT ? -1 : 1);
        if (tt_fits(env, env->rows, env->piece, env->rot, env->row, c)) env->col = c;
        break;
    }
    case TT_ROTATE: {
        static const int kicks[5] = {0, -1, 1, -2, 2};
        int r = (env->rot + 1) % TT_ROTS;
        for (int k = 0; k < 5; k++)
            if (tt_fits(env, env->rows, env->piece, r, env->row, env->col + kicks[k])) {
                env->rot = r;
                env->col += kicks[k];
                break;
            }
        break;
    }
    case TT_SOFT:
        if (tt_fits(env, env->rows, env->piece, env->rot, env->row + 1, env->col)) env->row++;
        else locked = 1;
        env->fall_tick = 0;
        break;
    case TT_HARD:
        env->row = env->ghost_row;
        locked = 1;
        break;
    case TT_HOLD:
        over = !tt_hold(env);
        break;
    }
    if (!locked && !over) {
        if (env->rot != rot || env->col != col)
            env->ghost_row = tt_landing(env, env->rows, env->piece, env->rot, env->row, env->col);
        if (++env->fall_tick >= env->cfg.ticks_per_fall) {
            env->fall_tick = 0;
            if (env->row < env->ghost_row) env->row++;
            else locked = 1;
        }
    }
    if (locked) reward += tt_lock(env, &over);
    tt_finish(env, reward, over);
}

static void c_step(Tetris *env) {
    if (env->cfg.placement) tt_step_placement(env);
    else tt_step_moves(env);
}

/* ---- rendering ---- */

#define TT_SCALE 12
#define TT_SIDE 6  /* side panel width in cells: preview and hold */

static void c_frame_shape(Tetris *env, int *h, int *w) {
    *h = env->cfg.n_rows * TT_SCALE;
    *w = (env->cfg.n_cols + TT_SIDE) * TT_SCALE;
}

static const unsigned char TT_RGB[TT_PIECES + 2][3] = {{16, 16, 24},   {0, 200, 220},  {230, 210, 0},
                                                       {170, 60, 200}, {40, 200, 60},  {220, 40, 40},
                                                       {40, 80, 220},  {240, 140, 20}, {110, 110, 110}};

static void tt_render_piece(unsigned char *frame, int h, int w, const Tetris *env, int piece, int rot, int row, int col,
                            const unsigned char rgb[3]) {
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            if ((TT_SHAPES[piece][rot][r] >> c) & 1)
                ocean_fill_rect(frame, h, w, (col + c) * TT_SCALE + 1, (row + r) * TT_SCALE + 1, TT_SCALE - 2,
                                TT_SCALE - 2, rgb);
}

static void c_render_rgb(Tetris *env, unsigned char *frame) {
    if (env->cfg.placement) env->ghost_row = tt_landing(env, env->rows, env->piece, env->rot, env->row, env->col);
    int h, w;
    c_frame_shape(env, &h, &w);
    static const unsigned char panel[3] = {40, 40, 52}, ghost[3] = {70, 70, 90};
    ocean_fill_rect(frame, h, w, 0, 0, env->cfg.n_cols * TT_SCALE, h, TT_RGB[0]);
    ocean_fill_rect(frame, h, w, env->cfg.n_cols * TT_SCALE, 0, TT_SIDE * TT_SCALE, h, panel);
    for (int r = 0; r < env->cfg.n_rows; r++)
        for (int c = 0; c < env->cfg.n_cols; c++) {
            int v = env->color[r * env->cfg.n_cols + c];
            if (v)
                ocean_fill_rect(frame, h, w, c * TT_SCALE + 1, r * TT_SCALE + 1, TT_SCALE - 2, TT_SCALE - 2, TT_RGB[v]);
        }
    tt_render_piece(frame, h, w, env, env->piece, env->rot, env->ghost_row, env->col, ghost);
    tt_render_piece(frame, h, w, env, env->piece, env->rot, env->row, env->col, TT_RGB[env->piece + 1]);
    for (int k = 0; k < env->cfg.preview && 3 * k + 4 <= env->cfg.n_rows; k++) {
        int p = tt_queue_at(env, k);
        tt_render_piece(frame, h, w, env, p, 0, 3 * k, env->cfg.n_cols + 1, TT_RGB[p + 1]);
    }
    if (env->hold >= 0)
        tt_render_piece(frame, h, w, env, env->hold, 0, env->cfg.n_rows - 3, env->cfg.n_cols + 1,
                        TT_RGB[env->hold + 1]);
}

static int c_render_text(Tetris *env, char *out, int cap) {
    if (env->cfg.placement) env->ghost_row = tt_landing(env, env->rows, env->piece, env->rot, env->row, env->col);
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "lines ");
    ocean_puti(&t, env->lines);
    ocean_puts(&t, "  pieces ");
    ocean_puti(&t, env->pieces);
    ocean_puts(&t, "  next ");
    for (int k = 0; k < env->cfg.preview; k++) ocean_putc(&t, TT_NAMES[tt_queue_at(env, k)]);
    ocean_puts(&t, "  hold ");
    ocean_putc(&t, env->hold >= 0 ? TT_NAMES[env->hold] : '-');
    ocean_putc(&t, '\n');
    for (int r = 0; r < env->cfg.n_rows; r++) {
        ocean_putc(&t, '|');
        for (int c = 0; c < env->cfg.n_cols; c++) {
            int pr = r - env->row, pc = c - env->col, gr = r - env->ghost_row;
            char ch = env->color[r * env->cfg.n_cols + c] ? '#' : '.';
            if (pc >= 0 && pc < 4 && gr >= 0 && gr < 4 && ((TT_SHAPES[env->piece][env->rot][gr] >> pc) & 1)) ch = '+';
            if (pc >= 0 && pc < 4 && pr >= 0 && pr < 4 && ((TT_SHAPES[env->piece][env->rot][pr] >> pc) & 1)) ch = '@';
            ocean_putc(&t, ch);
        }
        ocean_puts(&t, "|\n");
    }
    return t.len;
}

static void c_close(Tetris *env) {}
