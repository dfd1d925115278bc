/* seats.h: a two-player, turn-based game as agent rows (used by ocean/kuhn, ocean/leduc, ocean/connect4).
 *
 * The convention (also in docs/ocean.md):
 * - two_player: an env has two rows, row r is player r. On every step exactly one row is to act: its
 *   `masks` entry (row liveness, the OCEAN_SLOTS slot) is 1 and its action-mask row holds the legal
 *   actions. The waiting row's `masks` entry is 0, its action is ignored and its action mask allows
 *   action 0 alone, so a masked sampler stays well defined for it (one choice, log-probability 0).
 *   Both rows observe their own view on every step.
 * - one row (two_player off): the row is always to act, in seat `seat` (0 moves first, 1 second, -1
 *   alternates every game); the env moves the other seat itself, inside the step.
 * - The step that ends a game writes every row's payoff (its player's) and sets terminals on every row,
 *   whichever row acted; that step's observations already belong to the next game.
 */
#ifndef OCEAN_SEATS_H
#define OCEAN_SEATS_H

#include "ocean.h"

typedef struct OceanSeats {
    int two_player, seat;  /* copies of the env's options */
    int agent_seat;        /* one row: its seat in the current game */
    int games;             /* games started since reset: picks the seat when seat == -1 */
} OceanSeats;

static inline void seats_reset(OceanSeats *s, int two_player, int seat) {
    s->two_player = two_player;
    s->seat = seat;
    s->games = 0;
}

/* A new game: the one row's seat for it. */
static inline void seats_new_game(OceanSeats *s) {
    if (!s->two_player) s->agent_seat = s->seat >= 0 ? s->seat : s->games & 1;
    s->games++;
}

/* The row of `player`, or -1 when the env plays that seat itself. */
static inline int seats_row(const OceanSeats *s, int player) {
    if (s->two_player) return player;
    return player == s->agent_seat ? 0 : -1;
}

/* The player whose action is in row `row`. */
static inline int seats_player(const OceanSeats *s, int row) { return s->two_player ? row : s->agent_seat; }

/* Whether the env moves `player` itself (one-row mode, the other seat). */
static inline int seats_builtin(const OceanSeats *s, int player) { return !s->two_player && player != s->agent_seat; }

/* Write the rows' liveness (`masks`) and action masks for a turn of `to_act`, whose legal actions are
 * `legal` [n_actions]. */
static inline void seats_write_turn(const OceanSeats *s, unsigned char *masks, unsigned char *action_masks,
                                    int n_actions, int to_act, const unsigned char *legal) {
    int rows = s->two_player ? 2 : 1;
    for (int r = 0; r < rows; r++) {
        unsigned char *mask = action_masks + r * n_actions;
        masks[r] = (unsigned char)(seats_player(s, r) == to_act);
        if (masks[r]) {
            memcpy(mask, legal, (size_t)n_actions);
        } else {
            memset(mask, 0, (size_t)n_actions);
            mask[0] = 1;
        }
    }
}

/* The action by which a live row hands its move to the env's built-in player (the one that plays the
 * other seat in one-row mode), in either mode; an env that honours it says `builtin = true` under [action]
 * in its spec.toml. It lies outside every action space, so the Python step()'s check refuses it: only a
 * caller that writes the env's action buffer itself sends it, the league's arena, to put the built-in
 * player into an opponent pool at the cost of one C move (pufferlib/arena.py, BuiltinPlayer). */
#define SEATS_BUILTIN (-1)

/* Zero every row's reward and flags before a step adds its rewards to them (for games that pay more
 * than the final result, unlike seats_finish_step). */
static inline void seats_clear_step(const OceanSeats *s, float *rewards, unsigned char *terminals,
                                    unsigned char *truncations) {
    for (int r = 0; r < (s->two_player ? 2 : 1); r++) {  /* one or two rows: stores, not memset calls */
        rewards[r] = 0.0f;
        terminals[r] = truncations[r] = 0;
    }
}

/* Write every row's reward and flags for a step; when the game is `done`, pay each row its player's
 * share of the zero-sum `payoff0` (player 0's payoff) and log one episode per row. */
static inline void seats_finish_step(const OceanSeats *s, float *rewards, unsigned char *terminals,
                                     unsigned char *truncations, Log *log, int done, float payoff0, int length) {
    int rows = s->two_player ? 2 : 1;
    for (int r = 0; r < rows; r++) {
        float payoff = done ? (seats_player(s, r) == 0 ? payoff0 : -payoff0) : 0.0f;
        rewards[r] = payoff;
        terminals[r] = (unsigned char)done;
        truncations[r] = 0;
        if (done) ocean_log_episode(log, payoff, (float)length, payoff, payoff > 0 ? 1.0f : 0.0f);
    }
}

#endif
