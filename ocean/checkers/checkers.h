/* English draughts (checkers) on 8x8. Player 0 moves first from the bottom three rows, player 1 from
 * the top three; pieces stand on the 32 dark squares. A man steps one square diagonally forward, a
 * king forward or back. Captures are forced: when any jump is available the mover must jump, and a
 * piece that has jumped must go on jumping while it can (one ply per jump, the same row moving again;
 * the action mask allows only that piece's jumps). A man reaching the far row is crowned, which ends
 * its move. A player with no legal move (no pieces, or all blocked) loses; max_plies plies make a draw.
 *
 * Seats follow ocean/seats.h: two_player=1 gives two rows (row r plays player r, only the row to move
 * live, its action mask the legal moves; the waiting row's mask allows action 0 alone and its action
 * is ignored). two_player=0 gives one row against the scripted player, which moves inside the step;
 * `seat` picks the row's seat (0, 1, or -1 to alternate every game). A live row's action SEATS_BUILTIN
 * (-1) lets the scripted player move for it, in either mode (the league's arena).
 *
 * Every row sees the board from its own side, turned 180 degrees for player 1 so that its men move up
 * too: one policy plays either seat. An action is (square, direction) in that view; whether it is a
 * step or a jump follows from the rule that captures are forced. An illegal action plays the legal
 * action of the lowest index and costs illegal_reward.
 *
 * Rewards: +1 win, -1 loss, 0 draw at the end, plus piece_reward times the change of the row's own
 * material lead (man 1, king 1.5) on every step: a difference of potentials that sums to the final
 * lead, so it ranks the many early losses without paying for anything a win does not need.
 *
 * The scripted player is one-ply greedy: each legal move scores the material it takes, 0.5 for a
 * crowning and for a jump that can go on, and -1 when it leaves the opponent a capture; ties are
 * broken uniformly at random.
 *
 * Boards are 64-bit bitboards, square (r, c) is bit 8r + c with row 0 at the top; a diagonal step is
 * a shift by 7 or 9 with one edge file masked, so move generation for every piece is a few shifts. */
#include "ocean.h"
#include "seats.h"
#include "spec.h"

#define CK_ACTIONS (CK_SQUARES * CK_DIRS)
#define CK_MAX_MOVES 64 /* 12 pieces x 4 directions bound the legal moves; 64 leaves room */
#define CK_FILE_A 0x0101010101010101ULL
#define CK_FILE_H 0x8080808080808080ULL
#define CK_TOP_ROW 0x00000000000000FFULL
#define CK_BOTTOM_ROW 0xFF00000000000000ULL
#define CK_KING_VALUE 1.5f
#define CK_MATERIAL_SCALE (1.0f / 12.0f)

enum { CK_UL, CK_UR, CK_DL, CK_DR };
enum { CK_MEN, CK_KINGS, CK_THEIR_MEN, CK_THEIR_KINGS, CK_THREATENED, CK_CAPTURABLE, CK_PLANES };

typedef struct CkBoard {
    uint64_t men[2], kings[2];
} CkBoard;

typedef struct CkMove {
    unsigned char from, dir, jump; /* absolute square (0..63) and direction */
} CkMove;

typedef struct Checkers {
    OCEAN_SLOTS(float);
    CheckersConfig cfg;
    OceanSeats seats;
    CkBoard b;
    int to_move, jumper, plies; /* jumper: the square of a piece in a multi-jump, or -1 */
    int n_moves;
    CkMove moves[CK_MAX_MOVES];         /* the mover's legal moves */
    unsigned char legal[CK_ACTIONS];    /* the same, as actions in the mover's view */
    float lead_paid[2], ret[2];         /* each player's material lead when last paid; summed rewards */
} Checkers;

/* The absolute square of dark square i (row-major from the top, four per row). */
static inline int ck_square(int i) {
    int r = i >> 2;
    return 8 * r + 2 * (i & 3) + ((r & 1) ^ 1);
}
static inline int ck_dark_index(int s) { return (s >> 3) * 4 + ((s & 7) >> 1); }

static inline uint64_t ck_bit(int s) { return 1ULL << s; }
static inline int ck_ctz(uint64_t x) { return __builtin_ctzll(x); }

/* One diagonal step of every bit in x toward d; bits that would leave the board vanish. */
static inline uint64_t ck_step(uint64_t x, int d) {
    switch (d) {
    case CK_UL:
        return (x & ~CK_FILE_A) >> 9;
    case CK_UR:
        return (x & ~CK_FILE_H) >> 7;
    case CK_DL:
        return (x & ~CK_FILE_A) << 7;
    default:
        return (x & ~CK_FILE_H) << 9;
    }
}

/* The squares whose neighbour toward d is in x. */
static inline uint64_t ck_back(uint64_t x, int d) {
    switch (d) {
    case CK_UL:
        return (x << 9) & ~CK_FILE_A;
    case CK_UR:
        return (x << 7) & ~CK_FILE_H;
    case CK_DL:
        return (x >> 7) & ~CK_FILE_A;
    default:
        return (x >> 9) & ~CK_FILE_H;
    }
}

/* Player 0's men move up, player 1's down; the view of player 1 is turned, so its directions are 3 - d. */
static inline int ck_forward(int player, int d) { return player == 0 ? d <= CK_UR : d >= CK_DL; }
static inline uint64_t ck_pieces(const CkBoard *b, int p) { return b->men[p] | b->kings[p]; }
static inline uint64_t ck_empty(const CkBoard *b) { return ~(ck_pieces(b, 0) | ck_pieces(b, 1)); }
static inline uint64_t ck_movers(const CkBoard *b, int p, int d) {
    return (ck_forward(p, d) ? b->men[p] : 0) | b->kings[p];
}

/* Pieces of p (within `only`) that can jump toward d. */
static inline uint64_t ck_jumpers(const CkBoard *b, int p, int d, uint64_t only) {
    return ck_movers(b, p, d) & only & ck_back(ck_pieces(b, 1 - p) & ck_back(ck_empty(b), d), d);
}

static inline uint64_t ck_any_jump(const CkBoard *b, int p, uint64_t only) {
    return ck_jumpers(b, p, CK_UL, only) | ck_jumpers(b, p, CK_UR, only) | ck_jumpers(b, p, CK_DL, only) |
           ck_jumpers(b, p, CK_DR, only);
}

/* Pieces of 1 - p that p could jump now. */
static uint64_t ck_victims(const CkBoard *b, int p) {
    uint64_t out = 0;
    for (int d = 0; d < CK_DIRS; d++) out |= ck_step(ck_jumpers(b, p, d, ~0ULL), d);
    return out;
}

static inline float ck_material(const CkBoard *b, int p) {
    return (float)__builtin_popcountll(b->men[p]) + CK_KING_VALUE * (float)__builtin_popcountll(b->kings[p]);
}

/* Play move m for player p on b; returns 1 when that piece must go on jumping (it jumped, was not
 * crowned, and can jump again), and the material taken in *taken. */
static int ck_apply(CkBoard *b, int p, CkMove m, float *taken) {
    uint64_t from = ck_bit(m.from), mid = ck_step(from, m.dir), to = m.jump ? ck_step(mid, m.dir) : mid;
    int king = (b->kings[p] & from) != 0;
    *taken = 0.0f;
    if (m.jump) {
        *taken = (b->kings[1 - p] & mid) ? CK_KING_VALUE : 1.0f;
        b->men[1 - p] &= ~mid;
        b->kings[1 - p] &= ~mid;
    }
    uint64_t far = p == 0 ? CK_TOP_ROW : CK_BOTTOM_ROW;
    int crowned = !king && (to & far);
    if (king || crowned) {
        b->kings[p] = (b->kings[p] & ~from) | to;
    } else {
        b->men[p] = (b->men[p] & ~from) | to;
    }
    return m.jump && !crowned && ck_any_jump(b, p, to) != 0;
}

/* The legal moves of the player to move, as a list (absolute) and as actions in its view. */
static void ck_generate(Checkers *env) {
    const CkBoard *b = &env->b;
    int p = env->to_move;
    uint64_t only = env->jumper >= 0 ? ck_bit(env->jumper) : ~0ULL;
    uint64_t from[CK_DIRS];
    int jump = env->jumper >= 0 || ck_any_jump(b, p, only);
    uint64_t empty = ck_empty(b);
    for (int d = 0; d < CK_DIRS; d++)
        from[d] = jump ? ck_jumpers(b, p, d, only) : ck_movers(b, p, d) & ck_back(empty, d);
    memset(env->legal, 0, sizeof(env->legal));
    int n = 0;
    for (int d = 0; d < CK_DIRS; d++)
        for (uint64_t x = from[d]; x; x &= x - 1) {
            int s = ck_ctz(x), i = ck_dark_index(s);
            int view = p == 0 ? i * CK_DIRS + d : (CK_SQUARES - 1 - i) * CK_DIRS + (CK_DIRS - 1 - d);
            env->legal[view] = 1;
            if (n < CK_MAX_MOVES) env->moves[n++] = (CkMove){(unsigned char)s, (unsigned char)d, (unsigned char)jump};
        }
    env->n_moves = n;
}

/* The scripted player's move for the player to move (there is at least one legal move). */
static CkMove ck_scripted_move(Checkers *env) {
    int p = env->to_move, best = 0, ties = 0;
    float best_score = -1e9f;
    for (int k = 0; k < env->n_moves; k++) {
        CkBoard b = env->b;
        CkMove m = env->moves[k];
        int king = (b.kings[p] & ck_bit(m.from)) != 0;
        float taken, score;
        int more = ck_apply(&b, p, m, &taken);
        score = taken + (!king && (b.kings[p] & ~env->b.kings[p]) ? 0.5f : 0.0f);
        if (more) score += 0.5f;
        else if (ck_any_jump(&b, 1 - p, ~0ULL)) score -= 1.0f;
        if (score > best_score) {
            best_score = score;
            best = k;
            ties = 1;
        } else if (score == best_score && ocean_randint(&env->rng, ++ties) == 0) {
            best = k; /* reservoir sampling: each tied move kept with equal probability */
        }
    }
    return env->moves[best];
}

/* Play m for the player to move; returns 1 when the game is over and sets *winner (-1: a draw). */
static int ck_play(Checkers *env, CkMove m, int *winner) {
    float taken;
    int p = env->to_move;
    int more = ck_apply(&env->b, p, m, &taken);
    env->plies++;
    env->jumper = more ? ck_ctz(ck_step(ck_step(ck_bit(m.from), m.dir), m.dir)) : -1;
    if (!more) env->to_move = 1 - p;
    ck_generate(env);
    if (env->n_moves == 0) {
        *winner = 1 - env->to_move;
        return 1;
    }
    if (env->plies >= env->cfg.max_plies) {
        *winner = -1;
        return 1;
    }
    return 0;
}

/* The observation of `row`, whose player is q, from q's side. */
static void ck_write_obs(Checkers *env, int row) {
    int q = seats_player(&env->seats, row);
    const CkBoard *b = &env->b;
    float *obs = env->observations + (size_t)row * (size_t)env->obs_size;
    uint64_t planes[CK_PLANES] = {b->men[q],       b->kings[q],          b->men[1 - q],
                                  b->kings[1 - q], ck_victims(b, 1 - q), ck_victims(b, q)};
    for (int k = 0; k < CK_PLANES; k++) {
        float *plane = obs + k * CK_SQUARES;
        for (int i = 0; i < CK_SQUARES; i++) {
            int s = ck_square(q == 0 ? i : CK_SQUARES - 1 - i);
            plane[i] = (float)((planes[k] >> s) & 1);
        }
    }
    float *scalars = obs + CK_PLANES * CK_SQUARES;
    float lead = (ck_material(b, q) - ck_material(b, 1 - q)) * CK_MATERIAL_SCALE;
    scalars[0] = (float)(env->to_move == q);
    scalars[1] = (float)(env->to_move == q && env->jumper >= 0);
    scalars[2] = (float)env->plies / (float)env->cfg.max_plies;
    scalars[3] = lead < -1.0f ? -1.0f : (lead > 1.0f ? 1.0f : lead);
}

static void ck_write_turn(Checkers *env) {
    seats_write_turn(&env->seats, env->masks, env->action_masks, CK_ACTIONS, env->to_move, env->legal);
    for (int row = 0; row < env->num_agents; row++) ck_write_obs(env, row);
}

static void ck_new_game(Checkers *env) {
    env->b.men[0] = 0x55AA550000000000ULL; /* rows 5-7: the dark squares, (r + c) odd */
    env->b.men[1] = 0x0000000000AA55AAULL; /* rows 0-2 */
    env->b.kings[0] = env->b.kings[1] = 0;
    env->to_move = 0;
    env->jumper = -1;
    env->plies = 0;
    env->lead_paid[0] = env->lead_paid[1] = 0.0f;
    env->ret[0] = env->ret[1] = 0.0f;
    seats_new_game(&env->seats);
    ck_generate(env);
    int winner;
    while (seats_builtin(&env->seats, env->to_move)) ck_play(env, ck_scripted_move(env), &winner);
    ck_write_turn(env);
}

static int c_init(Checkers *env) {
    (void)env;
    return 0;
}

static void c_reset(Checkers *env) {
    seats_reset(&env->seats, env->cfg.two_player, env->cfg.seat);
    ck_new_game(env);
}

static void c_step(Checkers *env) {
    seats_clear_step(&env->seats, env->rewards, env->terminals, env->truncations);
    int p = env->to_move, row = seats_row(&env->seats, p), winner = -1;
    int32_t action = env->actions[row];
    CkMove m;
    if (action == SEATS_BUILTIN) {
        m = ck_scripted_move(env);
    } else {
        int a = ocean_clamp(action, CK_ACTIONS);
        if (!env->legal[a]) {
            a = 0;
            while (!env->legal[a]) a++; /* a live row always has a legal move */
            env->rewards[row] += env->cfg.illegal_reward;
        }
        int i = a / CK_DIRS, d = a % CK_DIRS;
        if (p == 1) i = CK_SQUARES - 1 - i, d = CK_DIRS - 1 - d;
        m = env->moves[0];
        for (int k = 0; k < env->n_moves; k++)
            if (env->moves[k].from == ck_square(i) && env->moves[k].dir == d) m = env->moves[k];
    }
    int done = ck_play(env, m, &winner);
    while (!done && seats_builtin(&env->seats, env->to_move)) done = ck_play(env, ck_scripted_move(env), &winner);
    for (int r = 0; r < env->num_agents; r++) {
        int q = seats_player(&env->seats, r);
        float lead = ck_material(&env->b, q) - ck_material(&env->b, 1 - q);
        env->rewards[r] += env->cfg.piece_reward * (lead - env->lead_paid[q]);
        env->lead_paid[q] = lead;
        env->ret[q] += env->rewards[r];
    }
    if (!done) {
        ck_write_turn(env);
        return;
    }
    for (int r = 0; r < env->num_agents; r++) {
        int q = seats_player(&env->seats, r);
        float result = winner < 0 ? 0.0f : (winner == q ? 1.0f : -1.0f);
        env->rewards[r] += result;
        env->terminals[r] = 1;
        ocean_log_episode(&env->log, env->ret[q] + result, (float)((env->plies + 1 - q) / 2), result,
                          result > 0.0f ? 1.0f : 0.0f);
    }
    ck_new_game(env);
}

#define CK_SCALE 24
static void c_frame_shape(Checkers *env, int *h, int *w) {
    (void)env;
    *h = *w = 8 * CK_SCALE;
}

/* Player 0 red (bottom), player 1 white (top); a king has a dark centre. */
static void c_render_rgb(Checkers *env, unsigned char *frame) {
    static const unsigned char light[3] = {230, 210, 170}, dark[3] = {120, 80, 50}, red[3] = {200, 40, 40},
                               white[3] = {240, 240, 230}, crown[3] = {40, 30, 20};
    int side = 8 * CK_SCALE;
    for (int s = 0; s < 64; s++) {
        int r = s >> 3, c = s & 7;
        ocean_fill_rect(frame, side, side, c * CK_SCALE, r * CK_SCALE, CK_SCALE, CK_SCALE, (r + c) & 1 ? dark : light);
        for (int p = 0; p < 2; p++)
            if (ck_pieces(&env->b, p) & ck_bit(s)) {
                ocean_fill_rect(frame, side, side, c * CK_SCALE + 4, r * CK_SCALE + 4, CK_SCALE - 8, CK_SCALE - 8,
                                p == 0 ? red : white);
                if (env->b.kings[p] & ck_bit(s))
                    ocean_fill_rect(frame, side, side, c * CK_SCALE + 9, r * CK_SCALE + 9, CK_SCALE - 18, CK_SCALE - 18,
                                    crown);
            }
    }
}

/* x / X: player 0's man / king, o / O: player 1's. */
static int c_render_text(Checkers *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int r = 0; r < 8; r++) {
        for (int c = 0; c < 8; c++) {
            uint64_t bit = ck_bit(8 * r + c);
            char ch = (r + c) & 1 ? '.' : ' ';
            if (env->b.men[0] & bit) ch = 'x';
            if (env->b.kings[0] & bit) ch = 'X';
            if (env->b.men[1] & bit) ch = 'o';
            if (env->b.kings[1] & bit) ch = 'O';
            ocean_putc(&t, ch);
        }
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, env->to_move == 0 ? "x to move" : "o to move");
    if (env->jumper >= 0) ocean_puts(&t, " (jumping)");
    if (!env->seats.two_player) ocean_puts(&t, env->seats.agent_seat == 0 ? "  agent: x" : "  agent: o");
    ocean_puts(&t, "  ply ");
    ocean_puti(&t, env->plies);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Checkers *env) { (void)env; }
