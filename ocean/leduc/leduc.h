/* Leduc poker, exactly OpenSpiel's two-player `leduc_poker` (default parameters), so that a state here
 * maps 1:1 to one there and OpenSpiel can referee policies trained here.
 *
 * Rules: six cards, ids 0..5 = J1 J2 Q1 Q2 K1 K2 (rank id / 2, suit id % 2). Both players ante 1. Chance
 * deals player 0 a card uniformly, then player 1 one of the five left; after the first betting round a
 * public card is drawn from the four left. Actions: 0 fold, 1 call (a check when nothing is owed),
 * 2 raise. Each round allows at most two raises, of 2 chips in round 1 and 4 in round 2; fold is legal
 * only when facing a raise. Player 0 opens both rounds. A round ends when both checked, or when a raise
 * was called. Showdown: a pair with the public card beats any unpaired hand; otherwise the higher rank
 * wins, then the higher second card by rank; equal ranks split the pot (payoff 0). Payoffs are chips
 * won or lost. An action the mask forbids (fold when nothing is owed, a third raise) is played as a
 * call, like OpenSpiel's `action_mapping` option, so a policy that ignores masks still plays the game.
 *
 * Observation of a player (float32, 30): OpenSpiel's information_state_tensor for that player:
 *   [0:2]   which player this row is (one-hot)
 *   [2:8]   its private card (one-hot card id)
 *   [8:14]  the public card (one-hot card id; all zero in round 1)
 *   [14:22] round 1 betting: four slots of (call, raise), in order
 *   [22:30] round 2 betting, the same
 *
 * Seats follow ocean/seats.h, as in ocean/kuhn/kuhn.h: two_player=1 gives two rows, only the row to act
 * live (legal actions in its action mask; the waiting row's mask allows only action 0, which is
 * ignored), and the hand's payoff on both rows on the step that ends it; two_player=0 gives one row
 * against a uniformly random legal player, in seat `seat` (0, 1, or -1 to alternate every hand).
 */
#include "ocean.h"
#include "seats.h"
#include "spec.h"  /* generated from spec.toml: LeducConfig, LEDUC_OBS, LEDUC_ACTIONS */

enum { LEDUC_FOLD, LEDUC_CALL, LEDUC_RAISE };
#define LEDUC_PRIVATE 2   /* offsets into one observation row */
#define LEDUC_PUBLIC 8
#define LEDUC_BETTING 14  /* [round][slot][call, raise], 2 x 4 x 2 */
#define LEDUC_SLOTS 4     /* most actions one round can record: call raise raise call */
#define LEDUC_LIVE 100    /* leduc_result: the hand goes on */

typedef struct Leduc {
    OCEAN_SLOTS(float);
    LeducConfig cfg;              /* options (spec.toml): two_player, seat */
    OceanSeats seats;
    int card[2], public_card;     /* the public card is drawn with the deal and shown in round 2 */
    int round, to_act;            /* round 0 or 1 */
    int stakes, ante[2];          /* chips each player must reach, and has put in */
    int raises, calls;            /* in this round */
    int result;                   /* payoff to player 0 once the hand is over, else LEDUC_LIVE */
    unsigned char seq[2][LEDUC_SLOTS];  /* betting actions of each round, for rendering */
    int seq_len[2];
    int tick;                     /* steps in this hand */
} Leduc;

static int c_init(Leduc *env) {
    (void)env;
    return 0;
}

/* The observation row of `player`, or NULL when the env plays that seat itself. */
static inline float *leduc_row(Leduc *env, int player) {
    int row = seats_row(&env->seats, player);
    return row < 0 ? NULL : env->observations + row * LEDUC_OBS;
}

static inline void leduc_legal(const Leduc *env, unsigned char *legal) {
    legal[LEDUC_FOLD] = (unsigned char)(env->stakes > env->ante[env->to_act]);
    legal[LEDUC_CALL] = 1;
    legal[LEDUC_RAISE] = (unsigned char)(env->raises < 2);
}

/* OpenSpiel's hand rank: a pair outranks every unpaired hand, which rank by high card then low card. */
static inline int leduc_rank(int card, int public_card) {
    int lo = card < public_card ? card : public_card, hi = card < public_card ? public_card : card;
    if (lo / 2 == hi / 2) return 36 + lo;
    return (hi / 2) * 6 + lo / 2;
}

static inline void leduc_showdown(Leduc *env) {
    int r0 = leduc_rank(env->card[0], env->public_card), r1 = leduc_rank(env->card[1], env->public_card);
    env->result = r0 > r1 ? env->ante[1] : (r0 < r1 ? -env->ante[0] : 0);  /* antes are equal here */
}

static inline void leduc_record(Leduc *env, int action) {
    int slot = env->seq_len[env->round]++;
    env->seq[env->round][slot] = (unsigned char)action;
    int bit = LEDUC_BETTING + env->round * 2 * LEDUC_SLOTS + 2 * slot + (action == LEDUC_RAISE);
    for (int p = 0; p < 2; p++) {
        float *row = leduc_row(env, p);
        if (row) row[bit] = 1.0f;
    }
}

static void leduc_play(Leduc *env, int action) {
    unsigned char legal[LEDUC_ACTIONS];
    leduc_legal(env, legal);
    if (!legal[action]) action = LEDUC_CALL;
    int p = env->to_act;
    if (action == LEDUC_FOLD) {
        env->result = p == 0 ? -env->ante[0] : env->ante[1];
        return;
    }
    leduc_record(env, action);
    if (action == LEDUC_RAISE) {
        env->stakes += env->round == 0 ? 2 : 4;
        env->ante[p] = env->stakes;
        env->raises++;
        env->calls = 0;
        env->to_act = 1 - p;
        return;
    }
    env->ante[p] = env->stakes;
    env->calls++;
    int round_over = env->raises == 0 ? env->calls == 2 : env->calls == 1;
    if (!round_over) {
        env->to_act = 1 - p;
    } else if (env->round == 1) {
        leduc_showdown(env);
    } else {
        env->round = 1;
        env->raises = env->calls = 0;
        env->to_act = 0;
        for (int q = 0; q < 2; q++) {
            float *row = leduc_row(env, q);
            if (row) row[LEDUC_PUBLIC + env->public_card] = 1.0f;
        }
    }
}

/* Call is always legal, and so is fold or raise (a player who cannot raise faces a raise). */
static inline void leduc_write_masks(Leduc *env) {
    unsigned char legal[LEDUC_ACTIONS];
    leduc_legal(env, legal);
    seats_write_turn(&env->seats, env->masks, env->action_masks, LEDUC_ACTIONS, env->to_act, legal);
}

/* One-row mode: the built-in player moves until the agent is to act or the hand is over. */
static inline void leduc_opponent_moves(Leduc *env) {
    while (env->result == LEDUC_LIVE && seats_builtin(&env->seats, env->to_act)) {
        unsigned char legal[LEDUC_ACTIONS];
        leduc_legal(env, legal);
        int n = legal[0] + legal[1] + legal[2];
        int pick = ocean_randint(&env->rng, n), action = 0;
        while (!legal[action] || pick-- > 0) action++;  /* the pick-th legal action */
        leduc_play(env, action);
    }
}

static void leduc_new_hand(Leduc *env) {
    /* Deal as OpenSpiel's chance nodes do: uniform over the cards left, player 0, player 1, public. */
    int deck[6] = {0, 1, 2, 3, 4, 5};
    for (int k = 0; k < 3; k++) {
        int pick = k + ocean_randint(&env->rng, 6 - k);
        int c = deck[pick];
        deck[pick] = deck[k];
        deck[k] = c;
    }
    env->card[0] = deck[0];
    env->card[1] = deck[1];
    env->public_card = deck[2];
    env->round = env->to_act = 0;
    env->stakes = env->ante[0] = env->ante[1] = 1;
    env->raises = env->calls = 0;
    env->result = LEDUC_LIVE;
    env->seq_len[0] = env->seq_len[1] = 0;
    env->tick = 0;
    seats_new_game(&env->seats);
    memset(env->observations, 0, sizeof(float) * LEDUC_OBS * env->num_agents);
    for (int p = 0; p < 2; p++) {
        float *row = leduc_row(env, p);
        if (row == NULL) continue;
        row[p] = 1.0f;
        row[LEDUC_PRIVATE + env->card[p]] = 1.0f;
    }
    leduc_opponent_moves(env);  /* one-row mode, agent second: player 0 opens, which never ends a hand */
    leduc_write_masks(env);
}

static void c_reset(Leduc *env) {
    seats_reset(&env->seats, env->cfg.two_player, env->cfg.seat);
    leduc_new_hand(env);
}

static void c_step(Leduc *env) {
    env->tick++;
    int row = seats_row(&env->seats, env->to_act);
    leduc_play(env, ocean_clamp(env->actions[row], LEDUC_ACTIONS));
    leduc_opponent_moves(env);
    int done = env->result != LEDUC_LIVE;
    seats_finish_step(&env->seats, env->rewards, env->terminals, env->truncations, &env->log, done,
                      done ? (float)env->result : 0.0f, env->tick);
    if (done) leduc_new_hand(env);
    else leduc_write_masks(env);
}

/* ---- rendering: player 1 on top, player 0 below, the public card between; chips on the right ---- */

#define LEDUC_W 160
#define LEDUC_H 168
static void c_frame_shape(Leduc *env, int *h, int *w) {
    *h = LEDUC_H;
    *w = LEDUC_W;
}

static void leduc_draw_card(unsigned char *frame, int x, int y, int card, int face_up) {
    static const unsigned char back[3] = {60, 60, 140}, face[3] = {240, 240, 230},
                               suits[2][3] = {{200, 30, 30}, {20, 20, 20}};
    if (!face_up) {
        ocean_fill_rect(frame, LEDUC_H, LEDUC_W, x, y, 30, 44, back);
        return;
    }
    ocean_fill_rect(frame, LEDUC_H, LEDUC_W, x, y, 30, 44, face);
    for (int k = 0; k <= card / 2; k++)  /* pips: 1 J, 2 Q, 3 K; their colour is the suit */
        ocean_fill_rect(frame, LEDUC_H, LEDUC_W, x + 11, y + 6 + 12 * k, 8, 8, suits[card % 2]);
}

static void c_render_rgb(Leduc *env, unsigned char *frame) {
    static const unsigned char felt[3] = {20, 90, 50}, chip[3] = {220, 180, 40}, turn[3] = {250, 250, 250};
    ocean_fill_rect(frame, LEDUC_H, LEDUC_W, 0, 0, LEDUC_W, LEDUC_H, felt);
    for (int p = 0; p < 2; p++) {
        int y = p == 0 ? 116 : 8;
        if (p == env->to_act) ocean_fill_rect(frame, LEDUC_H, LEDUC_W, 6, y - 2, 34, 48, turn);
        leduc_draw_card(frame, 8, y, env->card[p], 1);
        for (int c = 0; c < env->ante[p]; c++)  /* one chip per unit in the pot, in rows of eight */
            ocean_fill_rect(frame, LEDUC_H, LEDUC_W, 52 + 13 * (c % 8), y + 6 + 13 * (c / 8), 10, 10, chip);
    }
    leduc_draw_card(frame, 8, 62, env->public_card, env->round == 1);
}

static int c_render_text(Leduc *env, char *out, int cap) {
    static const char *actions[3] = {"fold", "call", "raise"};
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "round ");
    ocean_puti(&t, env->round + 1);
    ocean_puts(&t, "  pot ");
    ocean_puti(&t, env->ante[0] + env->ante[1]);
    ocean_puts(&t, "  public ");
    if (env->round == 1) {
        ocean_putc(&t, "JQK"[env->public_card / 2]);
        ocean_puti(&t, env->public_card % 2 + 1);
    } else {
        ocean_puts(&t, "??");
    }
    ocean_putc(&t, '\n');
    for (int p = 0; p < 2; p++) {
        ocean_puts(&t, "player ");
        ocean_puti(&t, p);
        if (!env->seats.two_player) ocean_puts(&t, seats_builtin(&env->seats, p) ? " (random)" : " (agent) ");
        ocean_puts(&t, "  card ");
        ocean_putc(&t, "JQK"[env->card[p] / 2]);
        ocean_puti(&t, env->card[p] % 2 + 1);
        ocean_puts(&t, "  in pot ");
        ocean_puti(&t, env->ante[p]);
        if (p == env->to_act) ocean_puts(&t, "  <- to act");
        ocean_putc(&t, '\n');
    }
    for (int r = 0; r < 2; r++) {
        ocean_puts(&t, "round ");
        ocean_puti(&t, r + 1);
        ocean_putc(&t, ':');
        for (int i = 0; i < env->seq_len[r]; i++) {
            ocean_putc(&t, ' ');
            ocean_puts(&t, actions[env->seq[r][i]]);
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Leduc *env) {}
