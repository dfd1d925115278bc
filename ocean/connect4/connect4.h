/* Connect Four. Player 0 moves first; a move drops a piece in a column. +1 win, -1 loss, 0 draw.
 * Dropping into a full column loses (-1): the action mask says which columns are open, and a policy
 * that ignores it must learn legality from the board.
 *
 * Seats follow ocean/seats.h: two_player=1 gives two rows, row r is player r, only the row to move live
 * (its action mask: the open columns; the waiting row's mask allows only column 0, and its action is
 * ignored), and the result on both rows on the step that ends the game. two_player=0 (the default) gives
 * one row against a scripted opponent, which wins when it can, blocks the agent's immediate wins, and
 * otherwise plays a random open column; `seat` picks the row's seat (0 first, 1 second, -1 alternate).
 * In either mode a live row's action SEATS_BUILTIN (-1) has that scripted player move for the row's seat.
 * Every row sees the board from its own side: +1 its pieces, -1 the opponent's, so one policy can play
 * either seat.
 *
 * Boards are bitboards: column c owns bits 7c..7c+5 (row 0 at the bottom) plus an always-empty
 * sentinel bit 7c+6, so a four-in-a-row test is four shift-and-mask pairs and the opponent's search
 * over seven columns costs a few dozen instructions. */
#include "ocean.h"
#include "seats.h"
#include "spec.h"

/* C4_COLS and C4_ROWS come from spec.toml (they size the obs and the action) */
#define C4_CELLS (C4_COLS * C4_ROWS)

typedef struct Connect4 {
    OCEAN_SLOTS(float);
    Connect4Config cfg;         /* options (spec.toml): two_player, seat */
    OceanSeats seats;
    uint64_t pieces[2];         /* each player's pieces */
    int height[C4_COLS];        /* pieces in each column */
    int moves, tick;            /* moves this game: player moves & 1 is to move */
} Connect4;

static int c_init(Connect4 *env) {
    (void)env;
    return 0;
}

static inline int c4_won(uint64_t b) {
    uint64_t m;
    m = b & (b >> 7);
    if (m & (m >> 14)) return 1;  /* horizontal */
    m = b & (b >> 6);
    if (m & (m >> 12)) return 1;  /* diagonal down-right */
    m = b & (b >> 8);
    if (m & (m >> 16)) return 1;  /* diagonal up-right */
    m = b & (b >> 1);
    if (m & (m >> 2)) return 1;   /* vertical */
    return 0;
}

static inline int c4_to_move(const Connect4 *env) { return env->moves & 1; }

static inline uint64_t c4_drop_bit(const Connect4 *env, int col) { return 1ULL << (7 * col + env->height[col]); }

/* obs rows are row-major with the top row first; each row that belongs to a player sees +1 for its own
 * pieces and -1 for the other's */
static inline void c4_play(Connect4 *env, int col, int player) {
    env->pieces[player] |= c4_drop_bit(env, col);
    int cell = (C4_ROWS - 1 - env->height[col]) * C4_COLS + col;
    env->height[col]++;
    env->moves++;
    for (int p = 0; p < 2; p++) {
        int row = seats_row(&env->seats, p);
        if (row >= 0) env->observations[row * C4_CELLS + cell] = p == player ? 1.0f : -1.0f;
    }
}

/* The scripted opponent's column for `player`: win, else block, else a random open column. */
static int c4_scripted_move(Connect4 *env, int player) {
    int legal[C4_COLS], n = 0;
    for (int c = 0; c < C4_COLS; c++)
        if (env->height[c] < C4_ROWS) legal[n++] = c;
    for (int k = 0; k < n; k++)
        if (c4_won(env->pieces[player] | c4_drop_bit(env, legal[k]))) return legal[k];
    for (int k = 0; k < n; k++)
        if (c4_won(env->pieces[1 - player] | c4_drop_bit(env, legal[k]))) return legal[k];
    return legal[ocean_randint(&env->rng, n)];  /* n > 0: the caller checked the board is not full */
}

/* Play `col` for the player to move; returns 1 when that ends the game and sets *payoff0 (player 0's). */
static int c4_move(Connect4 *env, int col, int *payoff0) {
    int player = c4_to_move(env), sign = player == 0 ? 1 : -1;
    if (env->height[col] >= C4_ROWS) {  /* an illegal move loses */
        *payoff0 = -sign;
        return 1;
    }
    c4_play(env, col, player);
    if (c4_won(env->pieces[player])) {
        *payoff0 = sign;
        return 1;
    }
    *payoff0 = 0;
    return env->moves == C4_CELLS;  /* a full board is a draw */
}

static void c4_write_turn(Connect4 *env) {
    unsigned char open[C4_COLS];
    for (int c = 0; c < C4_COLS; c++) open[c] = (unsigned char)(env->height[c] < C4_ROWS);
    seats_write_turn(&env->seats, env->masks, env->action_masks, C4_COLS, c4_to_move(env), open);
}

static void c4_new_game(Connect4 *env) {
    env->pieces[0] = env->pieces[1] = 0;
    memset(env->height, 0, sizeof(env->height));
    env->moves = env->tick = 0;
    seats_new_game(&env->seats);
    memset(env->observations, 0, sizeof(float) * C4_CELLS * env->num_agents);
    int payoff0;
    if (seats_builtin(&env->seats, 0))
        c4_move(env, c4_scripted_move(env, 0), &payoff0);  /* one move never ends a game */
    c4_write_turn(env);
}

static void c_reset(Connect4 *env) {
    seats_reset(&env->seats, env->cfg.two_player, env->cfg.seat);
    c4_new_game(env);
}

static void c_step(Connect4 *env) {
    env->tick++;
    int payoff0 = 0;
    int player = c4_to_move(env), action = env->actions[seats_row(&env->seats, player)];
    int col = action == SEATS_BUILTIN ? c4_scripted_move(env, player) : ocean_clamp(action, C4_COLS);
    int done = c4_move(env, col, &payoff0);
    if (!done && seats_builtin(&env->seats, c4_to_move(env)))
        done = c4_move(env, c4_scripted_move(env, c4_to_move(env)), &payoff0);
    seats_finish_step(&env->seats, env->rewards, env->terminals, env->truncations, &env->log, done, (float)payoff0,
                      env->tick);
    if (done) c4_new_game(env);
    else c4_write_turn(env);
}

#define C4_SCALE 24
static void c_frame_shape(Connect4 *env, int *h, int *w) {
    *h = C4_ROWS * C4_SCALE;
    *w = C4_COLS * C4_SCALE;
}

/* Player 0 yellow, player 1 red. */
static void c_render_rgb(Connect4 *env, unsigned char *frame) {
    static const unsigned char board[3] = {20, 40, 160}, empty[3] = {10, 10, 30}, first[3] = {230, 200, 30},
                               second[3] = {210, 40, 40};
    int h = C4_ROWS * C4_SCALE, w = C4_COLS * C4_SCALE;
    ocean_fill_rect(frame, h, w, 0, 0, w, h, board);
    for (int c = 0; c < C4_COLS; c++)
        for (int r = 0; r < C4_ROWS; r++) {
            uint64_t bit = 1ULL << (7 * c + r);
            const unsigned char *rgb = (env->pieces[0] & bit) ? first : (env->pieces[1] & bit) ? second : empty;
            ocean_fill_rect(frame, h, w, c * C4_SCALE + 3, (C4_ROWS - 1 - r) * C4_SCALE + 3, C4_SCALE - 6, C4_SCALE - 6,
                            rgb);
        }
}

/* X: player 0, O: player 1; one-row mode says which one the agent is. */
static int c_render_text(Connect4 *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int r = C4_ROWS - 1; r >= 0; r--) {
        for (int c = 0; c < C4_COLS; c++) {
            uint64_t bit = 1ULL << (7 * c + r);
            ocean_putc(&t, (env->pieces[0] & bit) ? 'X' : (env->pieces[1] & bit) ? 'O' : '.');
        }
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "0123456\n");
    if (!env->seats.two_player)
        ocean_puts(&t, env->seats.agent_seat == 0 ? "agent X, scripted O\n" : "scripted X, agent O\n");
    ocean_puts(&t, c4_to_move(env) == 0 ? "X to move\n" : "O to move\n");
    return t.len;
}

static void c_close(Connect4 *env) {}
