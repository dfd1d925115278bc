/* Kuhn poker, exactly OpenSpiel's two-player `kuhn_poker`, so that a state here maps 1:1 to one there
 * and OpenSpiel can referee policies trained here (pufferlib/league/, tests/test_poker.py).
 *
 * Rules: a deck of three cards J < Q < K (ids 0, 1, 2). Both players ante 1; chance deals player 0 a
 * card uniformly, then player 1 one of the two left. Player 0 acts first. Actions: 0 pass, 1 bet
 * (a bet puts 1 more chip in). Sequences: pass pass and bet bet (or pass bet bet) go to showdown, the
 * higher card taking the pot (+1 or +2); a pass after a bet folds (the bettor wins +1).
 *
 * Observation of a player (float32, 11): OpenSpiel's information_state_tensor for that player:
 *   [0:2]  which player this row is (one-hot)
 *   [2:5]  its private card (one-hot J, Q, K)
 *   [5:11] the betting so far, three slots of (pass, bet), in order
 *
 * Seats follow ocean/seats.h: two_player=1 (default) gives two rows, row r is player r, only the row to
 * act live (its action mask holds both actions, the waiting row's only action 0, which is ignored),
 * and the hand's payoff on both rows on the step that ends it; two_player=0 gives one row against a
 * uniformly random player, in seat `seat` (0, 1, or -1 to alternate every hand).
 */
#include "ocean.h"
#include "seats.h"
#include "spec.h"  /* generated from spec.toml: KuhnConfig, KUHN_OBS, KUHN_ACTIONS */

enum { KUHN_PASS, KUHN_BET };
#define KUHN_CARD 2      /* offsets into one observation row */
#define KUHN_BETTING 5
#define KUHN_LIVE 100    /* kuhn_result: the hand goes on */

typedef struct Kuhn {
    OCEAN_SLOTS(float);
    KuhnConfig cfg;               /* options (spec.toml): two_player, seat */
    OceanSeats seats;
    int card[2];
    int moves[3], n_moves;        /* betting so far */
    int tick;                     /* steps in this hand */
} Kuhn;

static int c_init(Kuhn *env) {
    (void)env;
    return 0;
}

static inline int kuhn_to_act(const Kuhn *env) { return env->n_moves & 1; }

/* The observation row of `player`, or NULL when the env plays that seat itself. */
static inline float *kuhn_row(Kuhn *env, int player) {
    int row = seats_row(&env->seats, player);
    return row < 0 ? NULL : env->observations + row * KUHN_OBS;
}

/* Payoff to player 0 once the hand is over, else KUHN_LIVE. */
static inline int kuhn_result(const Kuhn *env) {
    int showdown = env->card[0] > env->card[1] ? 1 : -1;
    const int *m = env->moves;
    if (env->n_moves == 2) {
        if (m[0] == KUHN_PASS && m[1] == KUHN_PASS) return showdown;
        if (m[0] == KUHN_BET && m[1] == KUHN_PASS) return 1;  /* player 1 folds */
        if (m[0] == KUHN_BET && m[1] == KUHN_BET) return 2 * showdown;
        return KUHN_LIVE;                                     /* pass, bet: player 0 answers */
    }
    if (env->n_moves == 3) return m[2] == KUHN_BET ? 2 * showdown : -1;  /* player 0 calls or folds */
    return KUHN_LIVE;
}

static inline void kuhn_play(Kuhn *env, int action) {
    for (int p = 0; p < 2; p++) {
        float *row = kuhn_row(env, p);
        if (row) row[KUHN_BETTING + 2 * env->n_moves + action] = 1.0f;
    }
    env->moves[env->n_moves++] = action;
}

/* Both Kuhn actions are legal at every decision. */
static inline void kuhn_write_masks(Kuhn *env) {
    static const unsigned char legal[KUHN_ACTIONS] = {1, 1};
    seats_write_turn(&env->seats, env->masks, env->action_masks, KUHN_ACTIONS, kuhn_to_act(env), legal);
}

/* One-row mode: the built-in player moves until the agent is to act or the hand is over. */
static inline int kuhn_opponent_moves(Kuhn *env) {
    int result = kuhn_result(env);
    while (result == KUHN_LIVE && seats_builtin(&env->seats, kuhn_to_act(env))) {
        kuhn_play(env, ocean_randint(&env->rng, KUHN_ACTIONS));
        result = kuhn_result(env);
    }
    return result;
}

static void kuhn_new_hand(Kuhn *env) {
    env->card[0] = ocean_randint(&env->rng, 3);
    env->card[1] = (env->card[0] + 1 + ocean_randint(&env->rng, 2)) % 3;  /* one of the other two */
    env->n_moves = 0;
    env->tick = 0;
    seats_new_game(&env->seats);
    memset(env->observations, 0, sizeof(float) * KUHN_OBS * env->num_agents);
    for (int p = 0; p < 2; p++) {
        float *row = kuhn_row(env, p);
        if (row == NULL) continue;
        row[p] = 1.0f;
        row[KUHN_CARD + env->card[p]] = 1.0f;
    }
    kuhn_opponent_moves(env);  /* one-row mode, agent second: player 0 opens, which never ends a hand */
    kuhn_write_masks(env);
}

static void c_reset(Kuhn *env) {
    seats_reset(&env->seats, env->cfg.two_player, env->cfg.seat);
    kuhn_new_hand(env);
}

static void c_step(Kuhn *env) {
    env->tick++;
    int row = seats_row(&env->seats, kuhn_to_act(env));
    kuhn_play(env, ocean_clamp(env->actions[row], KUHN_ACTIONS));
    int result = kuhn_opponent_moves(env), done = result != KUHN_LIVE;
    seats_finish_step(&env->seats, env->rewards, env->terminals, env->truncations, &env->log, done,
                      done ? (float)result : 0.0f, env->tick);
    if (done) kuhn_new_hand(env);
    else kuhn_write_masks(env);
}

/* ---- rendering: player 1 on top, player 0 below; pips give the rank, chips the bet ---- */

#define KUHN_W 120
#define KUHN_H 112
static void c_frame_shape(Kuhn *env, int *h, int *w) {
    *h = KUHN_H;
    *w = KUHN_W;
}

static void c_render_rgb(Kuhn *env, unsigned char *frame) {
    static const unsigned char felt[3] = {20, 90, 50}, card[3] = {240, 240, 230}, pip[3] = {30, 30, 30},
                               chip[3] = {220, 180, 40}, turn[3] = {250, 250, 250};
    ocean_fill_rect(frame, KUHN_H, KUHN_W, 0, 0, KUHN_W, KUHN_H, felt);
    int to_act = kuhn_to_act(env);
    for (int p = 0; p < 2; p++) {
        int y = p == 0 ? 62 : 10;
        int bets = 1;  /* the ante */
        for (int i = 0; i < env->n_moves; i++) bets += (i & 1) == p && env->moves[i] == KUHN_BET;
        if (p == to_act) ocean_fill_rect(frame, KUHN_H, KUHN_W, 6, y - 4, 36, 48, turn);
        ocean_fill_rect(frame, KUHN_H, KUHN_W, 8, y - 2, 32, 44, card);
        for (int k = 0; k <= env->card[p]; k++) ocean_fill_rect(frame, KUHN_H, KUHN_W, 20, y + 4 + 12 * k, 8, 8, pip);
        for (int c = 0; c < bets; c++) ocean_fill_rect(frame, KUHN_H, KUHN_W, 56 + 18 * c, y + 14, 14, 14, chip);
    }
}

static int c_render_text(Kuhn *env, char *out, int cap) {
    static const char ranks[3] = {'J', 'Q', 'K'};
    OceanText t = {out, 0, cap};
    int to_act = kuhn_to_act(env);
    for (int p = 0; p < 2; p++) {
        ocean_puts(&t, "player ");
        ocean_puti(&t, p);
        if (!env->seats.two_player) ocean_puts(&t, seats_builtin(&env->seats, p) ? " (random)  " : " (agent)   ");
        ocean_puts(&t, "  card ");
        ocean_putc(&t, ranks[env->card[p]]);
        if (p == to_act) ocean_puts(&t, "  <- to act");
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "betting: ");
    for (int i = 0; i < env->n_moves; i++) ocean_putc(&t, env->moves[i] == KUHN_BET ? 'b' : 'p');
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Kuhn *env) {}
