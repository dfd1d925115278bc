/* Triple Triad: the card game from Final Fantasy VIII, basic rules with open hands, against a
 * scripted opponent (one agent row) or with two seats (both players are agent rows).
 *
 * Each player is dealt 5 cards; a card has four ranks (north, east, south, west), each drawn
 * uniformly from 1..max_rank. Players alternate placing a card on an empty cell of the 3x3 board;
 * a placed card turns every adjacent opposing card whose facing rank is lower than its own (no
 * Same/Plus/Combo rules). The first player places 5 cards, the second 4 and keeps one in hand. At
 * the end each player counts the cards it owns on the board plus those left in its hand (10 in
 * all): more than 5 wins. Player 0 moves first.
 *
 * Action: hand slot * 9 + cell (45 actions). An illegal action (a played slot or an occupied cell)
 * plays the first legal action instead and costs illegal_reward; action masks say which are legal.
 * Reward +1 win, -1 loss, 0 draw, at the end of the game.
 *
 * The scripted opponent is greedy on immediate flips: it plays the (card, cell) that turns the most
 * cards right now, ties broken uniformly at random.
 *
 * Seats follow the turn-based convention of ocean/seats.h (docs/ocean.md):
 *   two_player=1: two rows per env, row r is player r. Only the row to move is live (`env.masks`
 *     True, derived in Python from the to_move field: player 0's last placement may have the single
 *     legal action 0) and its action mask holds its legal actions; the waiting row's action is
 *     ignored and its action mask allows action 0 only. Both rows observe the game (from
 *     their own side) on every step. The step that ends a game pays both rows (+1/-1, or 0 for a
 *     draw) and sets terminals on both; its observations already belong to the next game.
 *   two_player=0: one row; the scripted opponent moves inside the step. `seat` is the agent's
 *     player index: 0 (moves first), 1, or -1 to alternate every game.
 */
#ifndef OCEAN_TRIPLETRIAD_H
#define OCEAN_TRIPLETRIAD_H

#include "ocean.h"
#include "seats.h"
#include "spec.h"  /* TripletriadConfig, TT_CELLS, TT_HAND, TT_MAX_RANK (spec.toml) */

#define TT_ACTIONS (TT_HAND * TT_CELLS)
#define TT_CELL_OBS 6   /* mine, theirs, 4 ranks / max_rank */
#define TT_CARD_OBS 5   /* in hand, 4 ranks / max_rank */
#define TT_HANDS_AT (TT_CELLS * TT_CELL_OBS)
#define TT_SCALARS_AT (TT_HANDS_AT + 2 * TT_HAND * TT_CARD_OBS)
#define TT_HINTS_AT (TT_SCALARS_AT + 4)
#define TT_OBS (TT_HINTS_AT + 2 * TT_ACTIONS)
#define TT_ALL_CELLS 0x1FF
/* Per-cell words are kept for TT_PAD cells: the 9 of the board, a dummy cell TT_OFF that sides off the
 * board point at (so patching a neighbour needs no bounds test; nothing reads it back), and room
 * for a 4-cell vector load at cell 8. */
#define TT_OFF 9
#define TT_PAD 12

enum { TT_N, TT_E, TT_S, TT_W };

/* The tables down to TT_OPEN_START are laid out by hand (one board row per line, or cells in aligned
 * columns), which clang-format's packing to the column limit would lose. */
/* clang-format off */
/* Neighbour of each cell (row-major) on each side, TT_OFF off the board; side d faces side (d + 2) & 3. */
static const unsigned char TT_NEIGHBOR[TT_CELLS][4] = {
    {TT_OFF, 1, 3, TT_OFF}, {TT_OFF, 2, 4, 0},      {TT_OFF, TT_OFF, 5, 1},
    {0, 4, 6, TT_OFF},      {1, 5, 7, 3},           {2, TT_OFF, 8, 4},
    {3, 7, TT_OFF, TT_OFF}, {4, 8, TT_OFF, 6},      {5, TT_OFF, TT_OFF, 7},
};

/* The cells a card on cell c turns, by which of its sides win (bit d = side d, see tt_sides): the
 * neighbours on those sides. Sides off the board never win (their threshold is unreachable). */
#define TT_TURNS(n, e, s, w) {0, n, e, n | e, s, n | s, e | s, n | e | s, w, n | w, e | w, n | e | w, s | w, \
                              n | s | w, e | s | w, n | e | s | w}
static const unsigned short TT_TURNED[TT_CELLS][16] = {
    TT_TURNS(0, 1 << 1, 1 << 3, 0),           TT_TURNS(0, 1 << 2, 1 << 4, 1 << 0),
    TT_TURNS(0, 0, 1 << 5, 1 << 1),           TT_TURNS(1 << 0, 1 << 4, 1 << 6, 0),
    TT_TURNS(1 << 1, 1 << 5, 1 << 7, 1 << 3), TT_TURNS(1 << 2, 0, 1 << 8, 1 << 4),
    TT_TURNS(1 << 3, 1 << 7, 0, 0),           TT_TURNS(1 << 4, 1 << 8, 0, 1 << 6),
    TT_TURNS(1 << 5, 0, 0, 1 << 7),
};

/* open[] (below) on an empty board: byte d is 0xFF where cell c has a neighbour on side d. */
static const uint32_t TT_OPEN_START[TT_CELLS] = {
    0x00FFFF00u, 0xFFFFFF00u, 0xFFFF0000u,
    0x00FFFFFFu, 0xFFFFFFFFu, 0xFFFF00FFu,
    0x0000FFFFu, 0xFF00FFFFu, 0xFF0000FFu,
};
/* clang-format on */

/* A card is four ranks packed in one word, byte d = rank on side d, so a card's four comparisons
 * against its neighbours are one subtraction (see tt_beats). The words those comparisons need are
 * kept per cell and patched when a neighbour changes, so no move evaluation branches on the board:
 * need[v][c] byte d is what a card placed on c must reach on side d to turn the neighbour there
 * (that card's facing rank + 1 when player v owns it, else 0x7F: unreachable, ranks are <= 10), and
 * open[c] byte d is 0xFF when the neighbour on side d is an empty cell. */
typedef struct Tripletriad {
    OCEAN_SLOTS(float);
    TripletriadConfig cfg;        /* the options of spec.toml */
    /* game state */
    uint32_t hand[2][TT_HAND];  /* each player's cards */
    uint32_t board[TT_CELLS];   /* the card on each cell */
    uint32_t need[2][TT_PAD];   /* see above; TT_PAD: see there */
    uint32_t open[TT_PAD];
    int own[2];                 /* cells owned by each player (bitmask) */
    int held[2];                /* hand slots not yet played (bitmask) */
    int empty;                  /* empty cells (bitmask) */
    int to_move, plies;
    OceanSeats seats;           /* row <-> player; one-row mode: the agent's player this game */
    float ret[2];
} Tripletriad;

static inline int tt_popcount(int m) {  /* bits of a mask of up to 16 bits (no POPCNT assumed) */
    m = m - ((m >> 1) & 0x5555);
    m = (m & 0x3333) + ((m >> 2) & 0x3333);
    m = (m + (m >> 4)) & 0x0F0F;
    return (m + (m >> 8)) & 0x1F;
}

static inline int tt_lowest(int m) { return __builtin_ctz((unsigned)m); }

static inline int tt_nth(int m, int k) {  /* index of the k-th set bit of m */
    while (k--) m &= m - 1;
    return tt_lowest(m);
}

/* Cells next to any cell of m: columns are masked so a shift cannot wrap to the next row. */
static inline int tt_adjacent(int m) {
    return (((m << 1) & ~0x49) | ((m >> 1) & ~0x124) | (m << 3) | (m >> 3)) & TT_ALL_CELLS;
}

/* Cell j holds a card owned by `owner`: patch its neighbours' words (a side off the board patches
 * the dummy cell). `turned`: it was the other player's until now, so the other player's words held
 * its ranks; otherwise it was placed on an empty cell, which both players' words held as 0x7F and
 * open[] as open. */
static inline void tt_patch_neighbours(Tripletriad *env, int j, int owner, int turned) {
    uint32_t face = (env->board[j] >> 16 | env->board[j] << 16) + 0x01010101u;  /* byte d: rank on (d + 2) & 3, + 1 */
    for (int e = 0; e < 4; e++) {
        int c = TT_NEIGHBOR[j][e];
        uint32_t byte = 0xFFu << (8 * ((e + 2) & 3));  /* the side of c that faces j */
        env->need[owner][c] = (env->need[owner][c] & ~byte) | (face & byte);
        if (turned) env->need[!owner][c] |= 0x7F7F7F7Fu & byte;  /* ranks are below 0x7F: OR sets the byte */
        else env->open[c] &= ~byte;
    }
}

/* Sides where `card` reaches its threshold: bit 7 of byte d. Bytes never borrow from each other
 * because 0x80 + rank - threshold stays in 1..0x8A. */
static inline uint32_t tt_beats(uint32_t card, uint32_t thresholds) {
    return ((card | 0x80808080u) - thresholds) & 0x80808080u;
}

/* The four bits of tt_beats gathered into bits 0..3 (bit d = side d) by one multiply: the four
 * shifted copies land on distinct bits, so nothing carries into the top nibble. */
static inline int tt_sides(uint32_t beats) { return (int)((beats * 0x00204081u) >> 28); }

static inline uint32_t tt_max_bytes(uint32_t a, uint32_t b) {  /* bytewise max of two cards */
    uint32_t a_wins = (tt_beats(a, b) >> 7) * 0xFFu;  /* bytes where a >= b */
    return (a & a_wins) | (b & ~a_wins);
}

static inline int tt_count_sides(uint32_t beats) { return (int)((((beats >> 7) * 0x01010101u)) >> 24); }

static inline int tt_legal(const Tripletriad *env, int player, int action) {
    return (env->held[player] >> (action / TT_CELLS)) & (env->empty >> (action % TT_CELLS)) & 1;
}

/* ---- observations: written in full at a new game, then only what a placement changes ---- */

static inline int tt_cards(const Tripletriad *env, int player) {  /* owned on the board + still in hand */
    return tt_popcount(env->own[player] | env->held[player] << TT_CELLS);
}

static inline int tt_viewers(const Tripletriad *env) { return env->cfg.two_player ? 2 : 1; }

static inline int tt_viewer(const Tripletriad *env, int row) { return seats_player(&env->seats, row); }

/* Observations are written four floats at a time where that saves instructions (the hints are the
 * hot part of a step: 90 values for the row to move), in GCC/Clang vector types, which compile to
 * SSE2 on x86-64 and NEON on arm64. */
typedef uint32_t tt_u4 __attribute__((vector_size(16)));
typedef int32_t tt_i4 __attribute__((vector_size(16)));
typedef float tt_f4 __attribute__((vector_size(16)));

static inline tt_u4 tt_load4(const uint32_t *p) {
    tt_u4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A card's four ranks * scale: lane d keeps byte d in place, and the lane's power of two brings it
 * down in the same multiply (exactly: the powers of two only shift the exponent). */
static inline void tt_write_ranks(float *out, uint32_t card, float scale) {
    static const tt_u4 bytes = {0xFFu, 0xFF00u, 0xFF0000u, 0xFF000000u};
    static const tt_f4 down = {1.0f, 1.0f / 256, 1.0f / 65536, 1.0f / 16777216};
    tt_f4 ranks = __builtin_convertvector((tt_i4)(((tt_u4){} + card) & bytes), tt_f4) * (down * scale);
    memcpy(out, &ranks, sizeof ranks);
}

static void tt_write_scalars(Tripletriad *env) {
    for (int row = 0; row < tt_viewers(env); row++) {
        int me = tt_viewer(env, row);
        float *s = env->observations + (size_t)row * TT_OBS + TT_SCALARS_AT;
        s[0] = env->to_move == me ? 1.0f : 0.0f;
        s[1] = me == 0 ? 1.0f : 0.0f;  /* moved first */
        s[2] = (float)(2 * tt_cards(env, me) - 2 * TT_HAND) * 0.1f;  /* the two players hold 10 cards */
        s[3] = (float)env->plies * (1.0f / TT_CELLS);
    }
}

/* Per lane: the bytes where a - b keeps bit 7 (a's byte, with bit 7 set, is at least b's), counted. */
static inline tt_u4 tt_count4(tt_u4 a, tt_u4 b) {
    tt_u4 y = ((a - b) >> 7) & 0x01010101u;
    y += y >> 16;
    return (y + (y >> 8)) & 7u;
}

static inline tt_f4 tt_quarters(tt_u4 counts) { return __builtin_convertvector((tt_i4)counts, tt_f4) * 0.25f; }

/* Lane i all ones where bit i of a 4-bit mask is set. */
static const tt_u4 TT_LANES[16] = {
#define TT_L(m) {(m) & 1 ? ~0u : 0u, (m) & 2 ? ~0u : 0u, (m) & 4 ? ~0u : 0u, (m) & 8 ? ~0u : 0u}
    TT_L(0), TT_L(1), TT_L(2),  TT_L(3),  TT_L(4),  TT_L(5),  TT_L(6),  TT_L(7),
    TT_L(8), TT_L(9), TT_L(10), TT_L(11), TT_L(12), TT_L(13), TT_L(14), TT_L(15),
#undef TT_L
};

/* One-ply hints for the row to move, per (cell, hand slot), cell-major (zero for illegal pairs and
 * while waiting): `gain`, the opposing cards the move turns now, and `risk`, how many sides of the
 * placed card that face an empty cell some card still in the opponent's hand would beat there (its
 * best rank per side, which may come from different cards). Both / 4. An MLP would otherwise have to
 * learn every rank comparison of the rules from rank values alone.
 * Both are counts of bytes where one word reaches another (tt_count4), four lanes at a time: slots
 * 0-3 of one cell per vector, and slot 4 of four cells per vector. Illegal pairs need no masking
 * afterwards: a played slot is given a card that turns nothing and is beaten nowhere, and an
 * occupied cell (in the slot-4 vectors) thresholds no card reaches and no open side; otherwise an
 * occupied cell is only written zeros (half the board is full on average). */
static void tt_write_hints(Tripletriad *env) {
    for (int row = 0; row < tt_viewers(env); row++) {
        int me = tt_viewer(env, row);
        float *gain = env->observations + (size_t)row * TT_OBS + TT_HINTS_AT, *risk = gain + TT_ACTIONS;
        if (env->to_move != me) {
            memset(gain, 0, sizeof(float) * 2 * TT_ACTIONS);
            continue;
        }
        /* per side, the opponent's best rank over its cards in hand (a played card counts as 0) */
        uint32_t in_hand[TT_HAND];
        for (int k = 0; k < TT_HAND; k++) in_hand[k] = env->hand[!me][k] & (0u - (uint32_t)(env->held[!me] >> k & 1));
        uint32_t best = tt_max_bytes(tt_max_bytes(in_hand[0], in_hand[1]), tt_max_bytes(in_hand[2], in_hand[3]));
        best = tt_max_bytes(best, in_hand[4]);
        /* the same ranks seen from the other side: byte d holds the best rank on side (d + 2) & 3 */
        uint32_t facing = (best >> 16) | (best << 16);
        /* each slot's card as the two comparisons take it: gain counts card | 0x80 - threshold >= 0x80
         * (a played slot: ranks 0, below every threshold), risk counts facing | 0x80 - (card + 1)
         * >= 0x80 (a played slot: 0x7F, above every rank) */
        uint32_t turns[TT_HAND], beaten[TT_HAND];
        for (int k = 0; k < TT_HAND; k++) {  /* masks, not ?: (GCC branches on those, and held is random) */
            uint32_t in = 0u - (uint32_t)(env->held[me] >> k & 1);
            turns[k] = (env->hand[me][k] & in) | 0x80808080u;
            beaten[k] = ((env->hand[me][k] + 0x01010101u) & in) | (0x7F7F7F7Fu & ~in);
        }
        const uint32_t *need = env->need[!me], *open = env->open;
        int empty = env->empty;
        /* slot 4 on cells 0-3, 4-7, 8 (lanes past cell 8 are computed and dropped) */
        float gain4[TT_PAD], risk4[TT_PAD];
        tt_u4 turns4 = (tt_u4){} + turns[4], beaten4 = (tt_u4){} + beaten[4];
        for (int c = 0; c < TT_PAD; c += 4) {
            tt_u4 free = TT_LANES[empty >> c & 15];
            tt_f4 g = tt_quarters(tt_count4(turns4, tt_load4(need + c) | (~free & 0x7F7F7F7Fu)));
            tt_f4 r = tt_quarters(tt_count4((tt_load4(open + c) & free & facing) | 0x80808080u, beaten4));
            memcpy(gain4 + c, &g, sizeof g);
            memcpy(risk4 + c, &r, sizeof r);
        }
        tt_u4 turns03 = tt_load4(turns), beaten03 = tt_load4(beaten);
        const tt_f4 zero = {0};
        for (int cells = ~empty & TT_ALL_CELLS; cells; cells &= cells - 1) {
            int c = tt_lowest(cells);
            memcpy(gain + c * TT_HAND, &zero, sizeof zero);
            memcpy(risk + c * TT_HAND, &zero, sizeof zero);
            gain[c * TT_HAND + 4] = risk[c * TT_HAND + 4] = 0.0f;
        }
        for (int cells = empty; cells; cells &= cells - 1) {
            int c = tt_lowest(cells);
            tt_f4 g = tt_quarters(tt_count4(turns03, (tt_u4){} + need[c]));
            tt_f4 r = tt_quarters(tt_count4((tt_u4){} + ((open[c] & facing) | 0x80808080u), beaten03));
            memcpy(gain + c * TT_HAND, &g, sizeof g);
            memcpy(risk + c * TT_HAND, &r, sizeof r);
            gain[c * TT_HAND + 4] = gain4[c];
            risk[c * TT_HAND + 4] = risk4[c];
        }
    }
}

static void tt_write_all(Tripletriad *env) {
    float scale = 1.0f / (float)env->cfg.max_rank;
    for (int row = 0; row < tt_viewers(env); row++) {
        int me = tt_viewer(env, row);
        float *obs = env->observations + (size_t)row * TT_OBS;
        /* a new game: the board is empty (stores written out: GCC makes a slow `rep stos` of a memset) */
        const tt_f4 zero = {0};
        for (int i = 0; i + 4 <= TT_HANDS_AT; i += 4) memcpy(obs + i, &zero, sizeof zero);
        for (int i = TT_HANDS_AT & ~3; i < TT_HANDS_AT; i++) obs[i] = 0.0f;
        for (int side = 0; side < 2; side++) {
            int p = side == 0 ? me : !me;
            for (int k = 0; k < TT_HAND; k++) {
                float *card = obs + TT_HANDS_AT + (side * TT_HAND + k) * TT_CARD_OBS;
                card[0] = 1.0f;
                tt_write_ranks(card + 1, env->hand[p][k], scale);
            }
        }
    }
}

/* Ownership of cell c in every row. */
static inline void tt_write_owner(Tripletriad *env, int c) {
    for (int row = 0; row < tt_viewers(env); row++) {
        int me = tt_viewer(env, row);
        float *cell = env->observations + (size_t)row * TT_OBS + c * TT_CELL_OBS;
        static const float flags[4][2] = {{0.0f, 0.0f}, {1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}};
        memcpy(cell, flags[(env->own[me] >> c & 1) | (env->own[!me] >> c & 1) << 1], sizeof flags[0]);
    }
}

/* Bytes 0..3 of TT_BYTES[m] are the bits of a 4-bit mask m, one byte each. */
static const uint32_t TT_BYTES[16] = {
    0x00000000u, 0x00000001u, 0x00000100u, 0x00000101u, 0x00010000u, 0x00010001u, 0x00010100u, 0x00010101u,
    0x01000000u, 0x01000001u, 0x01000100u, 0x01000101u, 0x01010000u, 0x01010001u, 0x01010100u, 0x01010101u,
};

/* What is legal for each row (`action_masks`): the mover's cards times the empty cells; a waiting row 0. */
static void tt_write_turn(Tripletriad *env) {
    if (!env->action_masks) return;
    /* the empty cells as 9 bytes: 8 in one word, the 9th alone */
    uint64_t cells = TT_BYTES[env->empty & 15] | (uint64_t)TT_BYTES[env->empty >> 4 & 15] << 32;
    unsigned char last = (unsigned char)(env->empty >> 8 & 1);
    for (int row = 0; row < tt_viewers(env); row++) {
        int me = tt_viewer(env, row);
        unsigned char *mask = env->action_masks + (size_t)row * TT_ACTIONS;
        if (env->to_move != me) {
            /* not this row's turn: its action is ignored; one legal entry keeps the distribution valid */
            memset(mask, 0, TT_ACTIONS);
            mask[0] = 1;
            continue;
        }
        for (int k = 0; k < TT_HAND; k++) {
            uint64_t held = 0 - (uint64_t)(env->held[me] >> k & 1);
            uint64_t bytes = cells & held;
            memcpy(mask + k * TT_CELLS, &bytes, sizeof bytes);
            mask[k * TT_CELLS + 8] = last & (unsigned char)held;
        }
    }
}

/* ---- rules ---- */

static void tt_place(Tripletriad *env, int player, int action) {
    int slot = action / TT_CELLS, cell = action % TT_CELLS;
    uint32_t card = env->hand[player][slot];
    int flips = TT_TURNED[cell][tt_sides(tt_beats(card, env->need[!player][cell]))];
    env->board[cell] = card;
    env->own[player] |= flips | 1 << cell;
    env->own[!player] &= ~flips;
    env->held[player] &= ~(1 << slot);
    env->empty &= ~(1 << cell);
    tt_patch_neighbours(env, cell, player, 0);
    tt_write_owner(env, cell);
    for (int f = flips; f; f &= f - 1) {  /* one loop for both: its varying length costs a mispredicted exit */
        tt_patch_neighbours(env, tt_lowest(f), player, 1);
        tt_write_owner(env, tt_lowest(f));
    }
    env->plies++;
    env->to_move = !player;
    /* observations: the new card, the turned cards, the emptied hand slot */
    float scale = 1.0f / (float)env->cfg.max_rank;
    for (int row = 0; row < tt_viewers(env); row++) {
        int me = tt_viewer(env, row);
        float *obs = env->observations + (size_t)row * TT_OBS;
        tt_write_ranks(obs + cell * TT_CELL_OBS + 2, card, scale);
        float *held = obs + TT_HANDS_AT + ((player == me ? 0 : TT_HAND) + slot) * TT_CARD_OBS;
        memset(held, 0, sizeof(float) * TT_CARD_OBS);
    }
}

/* Greedy on immediate flips, ties broken uniformly at random. Only cells next to the victim's
 * cards can turn anything; when none can, every legal move ties. */
static int tt_scripted_move(Tripletriad *env, int player) {
    int held = env->held[player];
    int targets = env->empty & tt_adjacent(env->own[!player]);
    /* Ties are collected without branching on the counts (they follow random cards): every move is
     * written at the end of the list and kept by advancing the end only when it ties the best.
     * A played slot is scored as a card of ranks 0, which turns nothing, so the inner loop always
     * runs over all five slots (a loop of varying length costs a mispredicted exit). */
    int best = 1, n_ties = 0;  /* moves that turn nothing never tie */
    unsigned char ties[TT_ACTIONS];
    uint32_t cards[TT_HAND];
    for (int slot = 0; slot < TT_HAND; slot++)
        cards[slot] = env->hand[player][slot] & (0u - (uint32_t)(held >> slot & 1));
    for (; targets; targets &= targets - 1) {
        int cell = tt_lowest(targets);
        uint32_t thresholds = env->need[!player][cell];
        for (int slot = 0; slot < TT_HAND; slot++) {
            int n = tt_count_sides(tt_beats(cards[slot], thresholds));
            n_ties = n > best ? 0 : n_ties;
            best = n > best ? n : best;
            ties[n_ties] = (unsigned char)(slot * TT_CELLS + cell);
            n_ties += n == best;
        }
    }
    if (n_ties) return ties[ocean_randint(&env->rng, n_ties)];
    int n_cells = tt_popcount(env->empty);
    int k = ocean_randint(&env->rng, tt_popcount(held) * n_cells);
    return tt_nth(held, k / n_cells) * TT_CELLS + tt_nth(env->empty, k % n_cells);
}

/* ---- game flow ---- */

static void tt_new_game(Tripletriad *env) {
    /* One draw per card: the 32 bits are a fraction in [0, 1); each rank is the integer part of
     * fraction * max_rank and the fractional part goes on to the next rank. After four ranks the
     * bias is below max_rank^4 / 2^32 (2.3e-6 at 10), and a new game waits on half as many draws. */
    uint32_t ranks = (uint32_t)env->cfg.max_rank;
    for (int p = 0; p < 2; p++)
        for (int k = 0; k < TT_HAND; k++) {
            uint32_t fraction = ocean_rand(&env->rng), card = 0;
            for (int d = 0; d < 4; d++) {
                uint64_t x = (uint64_t)fraction * ranks;
                card |= (uint32_t)(1 + (x >> 32)) << (8 * d);
                fraction = (uint32_t)x;
            }
            env->hand[p][k] = card;
        }
    env->own[0] = env->own[1] = 0;
    env->held[0] = env->held[1] = (1 << TT_HAND) - 1;
    for (int c = 0; c < TT_PAD; c++) {
        env->need[0][c] = env->need[1][c] = 0x7F7F7F7Fu;
        env->open[c] = c < TT_CELLS ? TT_OPEN_START[c] : 0;
    }
    env->empty = TT_ALL_CELLS;
    env->plies = 0;
    env->ret[0] = env->ret[1] = 0;
    env->to_move = 0;
    seats_new_game(&env->seats);
    tt_write_all(env);
    if (seats_builtin(&env->seats, 0)) tt_place(env, 0, tt_scripted_move(env, 0));
}

/* Play `action` for the player to move; an illegal one becomes the first legal action. */
static void tt_play(Tripletriad *env, int action) {
    int player = env->to_move;
    /* no branch: random actions are illegal at random */
    int legal = tt_legal(env, player, action);
    float penalty = legal ? 0.0f : env->cfg.illegal_reward;
    env->ret[player] += penalty;
    env->rewards[env->cfg.two_player ? player : 0] += penalty;
    tt_place(env, player, legal ? action : tt_lowest(env->held[player]) * TT_CELLS + tt_lowest(env->empty));
}

static void tt_finish(Tripletriad *env) {
    int diff = tt_cards(env, 0) - tt_cards(env, 1);
    float result[2] = {diff > 0 ? 1.0f : (diff < 0 ? -1.0f : 0.0f), diff > 0 ? -1.0f : (diff < 0 ? 1.0f : 0.0f)};
    /* every row's game is logged: in two-player mode perf averages the two seats' wins */
    for (int row = 0; row < tt_viewers(env); row++) {
        int me = tt_viewer(env, row);
        env->rewards[row] += result[me];
        env->terminals[row] = 1;
        ocean_log_episode(&env->log, env->ret[me] + result[me], (float)(me == 0 ? 5 : 4), (float)tt_cards(env, me),
                          result[me] > 0 ? 1.0f : 0.0f);
    }
    tt_new_game(env);
}

static int c_init(Tripletriad *env) { return 0; }

static void c_reset(Tripletriad *env) {
    seats_reset(&env->seats, env->cfg.two_player, env->cfg.seat);
    tt_new_game(env);
    tt_write_scalars(env);
    tt_write_hints(env);
    tt_write_turn(env);
}

static void c_step(Tripletriad *env) {
    seats_clear_step(&env->seats, env->rewards, env->terminals, env->truncations);
    if (env->cfg.two_player) {
        tt_play(env, ocean_clamp(env->actions[env->to_move], TT_ACTIONS));
    } else {
        tt_play(env, ocean_clamp(env->actions[0], TT_ACTIONS));
        if (env->plies < TT_CELLS) tt_place(env, env->to_move, tt_scripted_move(env, env->to_move));
    }
    if (env->plies == TT_CELLS) tt_finish(env);
    tt_write_scalars(env);
    tt_write_hints(env);
    tt_write_turn(env);
}

/* ---- rendering ---- */

#define TT_CARD_PX 48
#define TT_GAP 4
#define TT_DIGIT_W 3
#define TT_DIGIT_H 5

/* Ranks drawn as 3x5 pixel digits ('A' for 10). */
static void tt_draw_rank(unsigned char *frame, int fh, int fw, int x, int y, int rank, const unsigned char rgb[3]) {
    static const unsigned short font[11] = {
        0x7B6F, 0x2C97, 0x73E7, 0x73CF, 0x5BC9, 0x79CF, 0x79EF, 0x7249, 0x7BEF, 0x7BCF, 0x2BED /* A */,
    };
    unsigned short g = font[rank >= 10 ? 10 : rank];
    for (int r = 0; r < TT_DIGIT_H; r++)
        for (int c = 0; c < TT_DIGIT_W; c++)
            if (g >> (14 - (r * TT_DIGIT_W + c)) & 1) ocean_fill_rect(frame, fh, fw, x + 2 * c, y + 2 * r, 2, 2, rgb);
}

static inline int tt_rank(uint32_t card, int side) { return (int)(card >> (8 * side) & 0xFF); }

static void tt_draw_card(unsigned char *frame, int fh, int fw, int x, int y, uint32_t card, const unsigned char bg[3]) {
    static const unsigned char ink[3] = {250, 250, 250};
    ocean_fill_rect(frame, fh, fw, x, y, TT_CARD_PX, TT_CARD_PX, bg);
    int mid = TT_CARD_PX / 2 - TT_DIGIT_W;
    tt_draw_rank(frame, fh, fw, x + mid, y + 3, tt_rank(card, TT_N), ink);
    tt_draw_rank(frame, fh, fw, x + TT_CARD_PX - 9, y + mid - 2, tt_rank(card, TT_E), ink);
    tt_draw_rank(frame, fh, fw, x + mid, y + TT_CARD_PX - 13, tt_rank(card, TT_S), ink);
    tt_draw_rank(frame, fh, fw, x + 3, y + mid - 2, tt_rank(card, TT_W), ink);
}

/* Layout: player 0's hand column, the 3x3 board, player 1's hand column. */
static void c_frame_shape(Tripletriad *env, int *h, int *w) {
    *h = TT_HAND * (TT_CARD_PX / 2 + TT_GAP) + TT_CARD_PX / 2 + 2 * TT_GAP;
    if (*h < 3 * (TT_CARD_PX + TT_GAP) + TT_GAP) *h = 3 * (TT_CARD_PX + TT_GAP) + TT_GAP;
    *w = 5 * (TT_CARD_PX + TT_GAP) + 3 * TT_GAP;
}

static void c_render_rgb(Tripletriad *env, unsigned char *frame) {
    static const unsigned char table[3] = {24, 60, 40}, cell[3] = {40, 90, 60},
                               colors[2][3] = {{40, 90, 200}, {200, 50, 50}};
    int h, w;
    c_frame_shape(env, &h, &w);
    ocean_fill_rect(frame, h, w, 0, 0, w, h, table);
    int board_x = TT_CARD_PX + 3 * TT_GAP;
    for (int c = 0; c < TT_CELLS; c++) {
        int x = board_x + (c % 3) * (TT_CARD_PX + TT_GAP), y = TT_GAP + (c / 3) * (TT_CARD_PX + TT_GAP);
        if (env->empty >> c & 1) ocean_fill_rect(frame, h, w, x, y, TT_CARD_PX, TT_CARD_PX, cell);
        else tt_draw_card(frame, h, w, x, y, env->board[c], colors[env->own[1] >> c & 1]);
    }
    /* hands: cards still held, stacked and overlapping */
    for (int p = 0; p < 2; p++) {
        int x = p == 0 ? TT_GAP : board_x + 3 * (TT_CARD_PX + TT_GAP) + TT_GAP;
        for (int k = 0; k < TT_HAND; k++)
            if (env->held[p] >> k & 1)
                tt_draw_card(frame, h, w, x, TT_GAP + k * (TT_CARD_PX / 2 + TT_GAP), env->hand[p][k], colors[p]);
    }
}

static void tt_text_card(OceanText *t, uint32_t card) {
    static const char digits[] = "0123456789A";
    for (int d = 0; d < 4; d++) ocean_putc(t, digits[tt_rank(card, d)]);
}

static int c_render_text(Tripletriad *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "cards: A ");
    ocean_puti(&t, tt_cards(env, 0));
    ocean_puts(&t, "  B ");
    ocean_puti(&t, tt_cards(env, 1));
    ocean_puts(&t, env->to_move == 0 ? "  (A to move)" : "  (B to move)");
    if (!env->cfg.two_player) ocean_puts(&t, seats_player(&env->seats, 0) == 0 ? "  agent: A" : "  agent: B");
    ocean_puts(&t, "\nboard (owner + ranks N E S W):\n");
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) {
            int cell = r * 3 + c;
            if (env->empty >> cell & 1) {
                ocean_puts(&t, " .....");
            } else {
                ocean_putc(&t, ' ');
                ocean_putc(&t, (env->own[1] >> cell & 1) ? 'B' : 'A');
                tt_text_card(&t, env->board[cell]);
            }
        }
        ocean_putc(&t, '\n');
    }
    for (int p = 0; p < 2; p++) {
        ocean_puts(&t, p == 0 ? "hand A:" : "hand B:");
        for (int k = 0; k < TT_HAND; k++) {
            ocean_putc(&t, ' ');
            if (!(env->held[p] >> k & 1)) ocean_puts(&t, "----");
            else tt_text_card(&t, env->hand[p][k]);
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Tripletriad *env) {}

#endif
