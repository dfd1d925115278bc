/* Go on a small board (5x5 to 9x9): area scoring, komi, legal-move action masks, and either a
 * scripted opponent (one agent row) or two seats (both players are agent rows).
 *
 * Seats follow the turn-based convention of ocean/seats.h (docs/ocean.md):
 *   two_player=1: two rows per env, row r plays colour r (0 black, moves first). Only the row to
 *     move is live (`env.masks` True, derived in Python from the to_move field) and its action mask
 *     holds its legal moves; the waiting row's action is ignored and its action mask allows action 0
 *     only (a live row always has pass, so it is never {0} alone). Both rows
 *     observe the board (from their own side) on every step. The step that ends a game pays both
 *     rows (+1 and -1) and sets terminals on both; its observations already belong to the next game.
 *   two_player=0: one row; the scripted opponent moves inside the step. `seat` is the agent's
 *     colour: 0, 1, or -1 to alternate every game.
 *
 * Rules (fixed here, documented in docs/ocean.md):
 *   - Black moves first. A move places a stone on an empty point or passes; opposing groups left
 *     without liberties are captured, then the mover's own group must have a liberty: suicide
 *     (single- or multi-stone) is illegal.
 *   - Simple ko: a single stone that has just captured exactly one stone cannot be retaken at once.
 *     Longer cycles are not detected (positional superko costs a hash history); max_moves bounds
 *     every game.
 *   - The game ends after two consecutive passes or max_moves plies. Area scoring (Tromp-Taylor):
 *     stones plus empty regions that touch only one colour; white adds komi.
 *   - An illegal action (occupied point, suicide, ko) is played as a pass and costs illegal_reward.
 *     With action masks a policy never picks one; without them (as in training before masks reach
 *     the sampler) it is a penalty, not the end of the game.
 *
 * Actions: point r * size + c, or size * size for pass. Rewards: +1 win, -1 loss at the end of the
 * game (komi x.5 makes draws impossible), plus margin_reward times the change of the row's own area
 * margin (komi included) / points on every step. That term is a difference of potentials, so over a
 * game it sums to (final margin - starting margin) / points: it ranks losses (a random player loses
 * almost every game to the scripted one, so the win/loss reward alone carries no signal at first)
 * without rewarding anything the final score does not.
 *
 * The scripted opponent is one-ply capture-greedy: it plays the legal move that captures the most
 * stones, and otherwise a uniformly random legal move that does not fill one of its own eyes; it
 * passes only when no such move is left.
 *
 * Boards are bitboards: point (r, c) is bit r * S + c with S = size + 1, so column `size` of every
 * row is a sentinel that is never set and a shift by 1 cannot wrap a stone onto the next row. A 9x9
 * board needs 90 bits, so one unsigned __int128 holds any supported size; flood fills, liberties,
 * eyes and the legal-move mask are a few shifts and masks each.
 */
#ifndef OCEAN_GO_H
#define OCEAN_GO_H

#include "ocean.h"
#include "seats.h"
#include "spec.h"  /* GoConfig and the constants (GO_PLANES planes, GO_SCALARS scalars: see spec.toml) */

typedef unsigned __int128 go_bb;

enum { GO_BLACK = 0, GO_WHITE = 1 };

typedef struct Go {
    OCEAN_SLOTS(float);
    GoConfig cfg;      /* the options of spec.toml */
    /* derived in c_init */
    int size, stride, cells, n_actions, move_cap;
    go_bb on;          /* every point of the board */
    /* game state */
    go_bb stones[2];
    int ko;            /* the point the player to move may not play, or -1 */
    int to_move, passes, moves;
    OceanSeats seats;  /* row <-> colour; one-row mode: the agent's colour this game */
    int last_pass[2];  /* colour passed on its last turn */
    float margin;      /* black's area margin (komi included) when rewards were last paid */
    float ret[2];      /* summed reward of each colour this game, the result excluded */
} Go;

/* ---- bitboard helpers ---- */

static inline go_bb go_bit(int p) { return (go_bb)1 << p; }

/* SWAR popcount: the builds do not assume a CPU with POPCNT, and the library fallback of
 * __builtin_popcountll showed up in profiles. */
static inline int go_popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

static inline int go_popcount(go_bb b) { return go_popcount64((uint64_t)b) + go_popcount64((uint64_t)(b >> 64)); }

static inline int go_lowest(go_bb b) {  /* b != 0 */
    uint64_t lo = (uint64_t)b;
    return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(b >> 64));
}

/* Points next to b (b itself excluded unless adjacent to another point of b). */
static inline go_bb go_adjacent(const Go *env, go_bb b) {
    int s = env->stride;
    return ((b << 1) | (b >> 1) | (b << s) | (b >> s)) & env->on;
}

/* The connected part of `within` that contains `seed`. */
static inline go_bb go_flood(const Go *env, go_bb seed, go_bb within) {
    go_bb g = seed;
    for (;;) {
        go_bb next = (g | go_adjacent(env, g)) & within;
        if (next == g) return g;
        g = next;
    }
}

static inline go_bb go_empty(const Go *env) { return env->on & ~(env->stones[0] | env->stones[1]); }

static inline int go_point(const Go *env, int action) {  /* action index -> bit index */
    return (action / env->size) * env->stride + action % env->size;
}

static inline int go_action(const Go *env, int p) {      /* bit index -> action index */
    return (p / env->stride) * env->size + p % env->stride;
}

/* Is playing bit p legal for `color`? (p is a point index, not an action.) For the one move being
 * played; masks for every point come from go_analyze. */
static int go_legal_at(const Go *env, int color, int p) {
    go_bb bit = go_bit(p), empty = go_empty(env);
    if (!(empty & bit) || p == env->ko) return 0;
    go_bb around = go_adjacent(env, bit);
    if (around & empty) return 1;
    go_bb mine = env->stones[color], theirs = env->stones[!color];
    go_bb rest = around;
    while (rest) {
        go_bb q = go_bit(go_lowest(rest));
        rest &= rest - 1;
        if (q & mine) {       /* joining a friendly group that keeps another liberty */
            go_bb libs = go_adjacent(env, go_flood(env, q, mine)) & empty & ~bit;
            if (libs) return 1;
        } else {              /* capturing an opposing group whose last liberty is p */
            go_bb libs = go_adjacent(env, go_flood(env, q, theirs)) & empty;
            if (libs == bit) return 1;
        }
    }
    return 0;
}

/* What both colours can do in the current position, from one pass over every group. */
typedef struct GoInfo {
    go_bb legal[2];     /* legal points of each colour */
    go_bb capture[2];   /* legal points where each colour captures */
    go_bb atari[2];     /* stones of each colour whose group has one liberty */
    int n_hits[2];      /* capture points of each colour and the stones each takes (greedy player) */
    unsigned char hit_point[2][GO_MAX_SIZE * GO_MAX_SIZE], hit_stones[2][GO_MAX_SIZE * GO_MAX_SIZE];
} GoInfo;

/* A point with an empty neighbour is legal for both colours. An enclosed empty point is legal for a
 * colour when it is a liberty of one of its groups that has another liberty (that group survives),
 * or the last liberty of an opposing group (which is captured). */
static void go_analyze(const Go *env, GoInfo *info) {
    go_bb empty = go_empty(env);
    go_bb open = empty & go_adjacent(env, empty);
    go_bb safe[2];
    for (int color = 0; color < 2; color++) {
        go_bb own = env->stones[color], rest = own, atari = 0;
        int hits = 0;
        safe[color] = 0;
        while (rest) {
            go_bb g = go_flood(env, go_bit(go_lowest(rest)), own);
            rest &= ~g;
            go_bb libs = go_adjacent(env, g) & empty;
            if (libs & (libs - 1)) {
                safe[color] |= libs;
            } else if (libs) {  /* in atari: the other colour captures g at its liberty */
                atari |= g;
                info->hit_point[!color][hits] = (unsigned char)go_lowest(libs);
                info->hit_stones[!color][hits] = (unsigned char)go_popcount(g);
                hits++;
            }
        }
        info->atari[color] = atari;
        info->n_hits[!color] = hits;
    }
    for (int color = 0; color < 2; color++) {
        /* the ko ban binds only the player to move */
        go_bb allowed = env->ko >= 0 && color == env->to_move ? ~go_bit(env->ko) : ~(go_bb)0;
        go_bb capture = 0;
        for (int k = 0; k < info->n_hits[color]; k++) capture |= go_bit(info->hit_point[color][k]);
        info->capture[color] = capture & allowed;
        info->legal[color] = (open | safe[color] | capture) & empty & allowed;
    }
}

/* Place a stone of `color` at bit p (legal), capture, and set the ko point for the opponent. */
static void go_place(Go *env, int color, int p) {
    go_bb bit = go_bit(p);
    go_bb *mine = &env->stones[color], *theirs = &env->stones[!color];
    *mine |= bit;
    go_bb empty = go_empty(env), captured = 0;
    go_bb rest = go_adjacent(env, bit) & *theirs;
    while (rest) {
        go_bb q = go_bit(go_lowest(rest));
        rest &= rest - 1;
        if (captured & q) continue;
        go_bb g = go_flood(env, q, *theirs);
        if (!(go_adjacent(env, g) & empty)) captured |= g;
    }
    *theirs &= ~captured;
    env->ko = -1;
    /* simple ko: one stone captured by a lone stone whose only liberty is the captured point */
    if (captured && !(captured & (captured - 1)) && !(go_adjacent(env, bit) & *mine) &&
        (go_adjacent(env, bit) & go_empty(env)) == captured)
        env->ko = go_lowest(captured);
}

/* Tromp-Taylor area margin for black (stones + empty regions that reach only black), minus komi. */
static float go_margin(const Go *env) {
    go_bb empty = go_empty(env), b = env->stones[GO_BLACK], w = env->stones[GO_WHITE];
    go_bb reach_b = go_flood(env, b, empty | b) & empty;
    go_bb reach_w = go_flood(env, w, empty | w) & empty;
    int black = go_popcount(b) + go_popcount(reach_b & ~reach_w);
    int white = go_popcount(w) + go_popcount(reach_w & ~reach_b);
    return (float)(black - white) - env->cfg.komi;
}

/* ---- observations and masks ---- */

/* One plane (size * size values, row-major) from a bitboard, a board row at a time. */
static inline void go_expand(const Go *env, go_bb b, float *out) {
    for (int r = 0; r < env->size; r++) {
        uint32_t bits = (uint32_t)(b >> (r * env->stride));
        for (int c = 0; c < env->size; c++) *out++ = (float)((bits >> c) & 1u);
    }
}

/* Row `row` sees the board as `color`. The legal and capture planes (and the mask) describe the
 * row's own move, so they are zero while it is not its turn; passing is always allowed. */
static void go_write_row(Go *env, const GoInfo *info, int row, int color, float margin_black) {
    float *obs = env->observations + (size_t)row * env->obs_size;
    int n = env->cells;
    int my_turn = env->to_move == color;
    go_bb legal = my_turn ? info->legal[color] : 0;
    go_expand(env, env->stones[color], obs);
    go_expand(env, env->stones[!color], obs + n);
    go_expand(env, legal, obs + 2 * n);
    go_expand(env, my_turn ? info->capture[color] : 0, obs + 3 * n);
    go_expand(env, info->atari[color], obs + 4 * n);
    float *scalars = obs + GO_PLANES * n;
    scalars[0] = color == GO_BLACK ? 1.0f : 0.0f;
    scalars[1] = (float)my_turn;
    scalars[2] = (float)env->last_pass[!color];
    scalars[3] = (float)env->moves / (float)env->move_cap;
    float margin = (color == GO_BLACK ? margin_black : -margin_black) / (float)n;
    scalars[4] = margin > 2.0f ? 2.0f : (margin < -2.0f ? -2.0f : margin);  /* komi can pass +-1; the Box says +-2 */
    if (env->action_masks) {  /* NULL only when the binding is built without the spec's mask */
        unsigned char *mask = env->action_masks + (size_t)row * env->n_actions;
        if (my_turn) {
            for (int r = 0; r < env->size; r++) {
                uint32_t bits = (uint32_t)(legal >> (r * env->stride));
                for (int c = 0; c < env->size; c++) *mask++ = (unsigned char)((bits >> c) & 1u);
            }
            *mask = 1;  /* passing is always legal */
        } else {
            /* the waiting row: its action is ignored; one legal entry keeps a masked sampler defined */
            memset(mask, 0, (size_t)env->n_actions);
            mask[0] = 1;
        }
    }
}

static void go_write_obs(Go *env, float margin) {
    GoInfo info;
    go_analyze(env, &info);
    if (env->cfg.two_player) {
        go_write_row(env, &info, 0, GO_BLACK, margin);
        go_write_row(env, &info, 1, GO_WHITE, margin);
    } else {
        go_write_row(env, &info, 0, seats_player(&env->seats, 0), margin);
    }
}

/* ---- the scripted opponent ---- */

/* One-ply capture-greedy move for `color`: an action index (n_actions - 1 = pass). */
static int go_scripted_move(Go *env, int color) {
    GoInfo info;
    go_analyze(env, &info);
    if (info.capture[color]) {
        /* stones taken per point: a point can be the last liberty of several groups */
        int best = -1, best_n = 0;
        for (int k = 0; k < info.n_hits[color]; k++) {
            int p = info.hit_point[color][k];
            if (!(info.capture[color] & go_bit(p))) continue;  /* the ko point */
            int n = 0;
            for (int j = 0; j < info.n_hits[color]; j++)
                if (info.hit_point[color][j] == p) n += info.hit_stones[color][j];
            if (n > best_n) best_n = n, best = p;
        }
        return go_action(env, best);
    }
    /* never fill an own eye: an empty point whose every neighbour is an own stone */
    go_bb not_own = env->on & ~env->stones[color];
    go_bb eyes = go_empty(env) & ~go_adjacent(env, not_own);
    go_bb choices = info.legal[color] & ~eyes;
    int count = go_popcount(choices);
    if (count == 0) return env->n_actions - 1;
    int k = ocean_randint(&env->rng, count);
    while (k--) choices &= choices - 1;
    return go_action(env, go_lowest(choices));
}

/* ---- game flow ---- */

/* Play `action` for the colour to move; an illegal point is a pass that costs illegal_reward. */
static void go_play(Go *env, int action) {
    int color = env->to_move;
    int pass = action >= env->cells;
    if (!pass) {
        int p = go_point(env, action);
        if (go_legal_at(env, color, p)) {
            go_place(env, color, p);
        } else {
            pass = 1;
            env->ret[color] += env->cfg.illegal_reward;
            if (env->cfg.two_player) env->rewards[color] += env->cfg.illegal_reward;
            else if (!seats_builtin(&env->seats, color)) env->rewards[0] += env->cfg.illegal_reward;
        }
    }
    if (pass) env->ko = -1;  /* a pass lifts the ko ban */
    env->last_pass[color] = pass;
    env->passes = pass ? env->passes + 1 : 0;
    env->moves++;
    env->to_move = !color;
}

static int go_over(const Go *env) { return env->passes >= 2 || env->moves >= env->move_cap; }

static void go_new_game(Go *env) {
    env->stones[0] = env->stones[1] = 0;
    env->ko = -1;
    env->to_move = GO_BLACK;
    env->passes = env->moves = 0;
    env->last_pass[0] = env->last_pass[1] = 0;
    env->ret[0] = env->ret[1] = 0;
    seats_new_game(&env->seats);
    if (seats_builtin(&env->seats, GO_BLACK)) go_play(env, go_scripted_move(env, GO_BLACK));
    env->margin = go_margin(env);
}

/* Pay every row margin_reward times the change of its margin since the last payment. */
static void go_pay_margin(Go *env, float margin) {
    float delta = env->cfg.margin_reward * (margin - env->margin) / (float)env->cells;
    env->margin = margin;
    for (int row = 0; row < env->num_agents; row++) {
        int color = seats_player(&env->seats, row);
        float r = color == GO_BLACK ? delta : -delta;
        env->rewards[row] += r;
        env->ret[color] += r;
    }
}

/* Score the game, pay every row, log each row's game (a win is perf 1), start the next one. */
static void go_finish(Go *env, float margin) {
    float black = margin > 0 ? 1.0f : (margin < 0 ? -1.0f : 0.0f);
    float result[2] = {black, -black};
    for (int row = 0; row < env->num_agents; row++) {
        int color = seats_player(&env->seats, row);
        env->rewards[row] += result[color];
        env->terminals[row] = 1;
        ocean_log_episode(&env->log, env->ret[color] + result[color], (float)((env->moves + 1 - color) / 2),
                          color == GO_BLACK ? margin : -margin, result[color] > 0 ? 1.0f : 0.0f);
    }
    go_new_game(env);
}

static int c_init(Go *env) {
    env->size = env->cfg.size;
    env->stride = env->size + 1;
    env->cells = env->size * env->size;
    env->n_actions = env->cells + 1;
    env->move_cap = env->cfg.max_moves > 0 ? env->cfg.max_moves : 3 * env->cells;
    env->on = 0;
    for (int r = 0; r < env->size; r++)
        for (int c = 0; c < env->size; c++) env->on |= go_bit(r * env->stride + c);
    return 0;
}

static void c_reset(Go *env) {
    seats_reset(&env->seats, env->cfg.two_player, env->cfg.seat);
    go_new_game(env);
    go_write_obs(env, env->margin);
}

static void c_step(Go *env) {
    seats_clear_step(&env->seats, env->rewards, env->terminals, env->truncations);
    if (env->cfg.two_player) {
        /* only the row whose colour is to move acts; the other row's action is ignored */
        go_play(env, ocean_clamp(env->actions[env->to_move], env->n_actions));
    } else {
        go_play(env, ocean_clamp(env->actions[0], env->n_actions));
        if (!go_over(env)) go_play(env, go_scripted_move(env, env->to_move));
    }
    float margin = go_margin(env);
    go_pay_margin(env, margin);
    if (go_over(env)) {
        go_finish(env, margin);
        margin = env->margin;  /* the next game's */
    }
    go_write_obs(env, margin);
}

/* ---- rendering ---- */

#define GO_SCALE 24
#define GO_MARGIN 12

static void c_frame_shape(Go *env, int *h, int *w) { *h = *w = (env->size - 1) * GO_SCALE + 2 * GO_MARGIN; }

static void c_render_rgb(Go *env, unsigned char *frame) {
    static const unsigned char wood[3] = {214, 170, 96}, line[3] = {60, 40, 20}, black[3] = {20, 20, 20},
                               white[3] = {240, 240, 235}, ko[3] = {200, 40, 40};
    int h, w;
    c_frame_shape(env, &h, &w);
    ocean_fill_rect(frame, h, w, 0, 0, w, h, wood);
    int origin = GO_MARGIN;  /* centre of the first point */
    int span = (env->size - 1) * GO_SCALE;
    for (int i = 0; i < env->size; i++) {
        ocean_fill_rect(frame, h, w, origin, origin + i * GO_SCALE, span + 1, 1, line);
        ocean_fill_rect(frame, h, w, origin + i * GO_SCALE, origin, 1, span + 1, line);
    }
    int radius = GO_SCALE / 2 - 2;
    for (int r = 0; r < env->size; r++)
        for (int c = 0; c < env->size; c++) {
            int p = r * env->stride + c;
            const unsigned char *rgb = (env->stones[GO_BLACK] & go_bit(p))   ? black
                                       : (env->stones[GO_WHITE] & go_bit(p)) ? white
                                                                             : NULL;
            int cx = origin + c * GO_SCALE, cy = origin + r * GO_SCALE;
            if (p == env->ko) ocean_fill_rect(frame, h, w, cx - 3, cy - 3, 7, 7, ko);
            if (!rgb) continue;
            for (int dy = -radius; dy <= radius; dy++)
                for (int dx = -radius; dx <= radius; dx++)
                    if (dx * dx + dy * dy <= radius * radius) ocean_fill_rect(frame, h, w, cx + dx, cy + dy, 1, 1, rgb);
        }
}

static int c_render_text(Go *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, env->to_move == GO_BLACK ? "black (X) to move" : "white (O) to move");
    ocean_puts(&t, ", move ");
    ocean_puti(&t, env->moves);
    ocean_puts(&t, ", black area margin ");
    float m = go_margin(env);  /* komi is x.5 by default: print one decimal without printf */
    int tenths = (int)(m * 10.0f + (m < 0 ? -0.5f : 0.5f));
    if (tenths < 0) ocean_putc(&t, '-'), tenths = -tenths;
    ocean_puti(&t, tenths / 10);
    ocean_putc(&t, '.');
    ocean_puti(&t, tenths % 10);
    if (!env->cfg.two_player) ocean_puts(&t, seats_player(&env->seats, 0) == GO_BLACK ? " (agent: X)" : " (agent: O)");
    ocean_putc(&t, '\n');
    for (int r = 0; r < env->size; r++) {
        for (int c = 0; c < env->size; c++) {
            int p = r * env->stride + c;
            char ch = (env->stones[GO_BLACK] & go_bit(p))   ? 'X'
                      : (env->stones[GO_WHITE] & go_bit(p)) ? 'O'
                      : p == env->ko                        ? '*'
                                                            : '.';
            ocean_putc(&t, ch);
            if (c + 1 < env->size) ocean_putc(&t, ' ');
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Go *env) {}

#endif
