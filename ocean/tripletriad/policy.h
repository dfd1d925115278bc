/* ocean/tripletriad/policy.h: the C twin of policy.py's per-action terms, for ocean/puffernet.h (which
 * says how a policy's own terms reach it). Include it before puffernet.h; a page built by `puffer web` and
 * `puffer eval --native` do. tests/test_export.py holds it to policy.py's logits within 1e-5.
 *
 * Each move (card slot s, cell c; action s * 9 + c) gains features of its own hints, the flips it makes
 * (gain) and the sides it exposes (risk), weighted by the coefficients the net computed from the whole
 * position; a move the observation shows to be impossible (a slot already played, a cell taken) gets
 * TT_POLICY_ILLEGAL.
 */
#ifndef TRIPLETRIAD_POLICY_H
#define TRIPLETRIAD_POLICY_H

/* The observation layout of spec.toml, as policy.py reads it. */
#define TT_POLICY_CELLS 9
#define TT_POLICY_HAND 5
#define TT_POLICY_CELL_OBS 6 /* per cell: mine, theirs, 4 ranks */
#define TT_POLICY_CARD_OBS 5 /* per card in hand: held, 4 ranks */
#define TT_POLICY_HINTS (TT_POLICY_CELLS * TT_POLICY_CELL_OBS + 2 * TT_POLICY_HAND * TT_POLICY_CARD_OBS + 4)
#define TT_POLICY_ILLEGAL (-1e4f)

static void tripletriad_policy_terms(const float *input, const float *coef, float *logits) {
    const float *gain = input + TT_POLICY_HINTS, *risk = gain + TT_POLICY_CELLS * TT_POLICY_HAND;
    const float *hand = input + TT_POLICY_CELLS * TT_POLICY_CELL_OBS;
    for (int s = 0; s < TT_POLICY_HAND; s++) {
        for (int c = 0; c < TT_POLICY_CELLS; c++) {
            int a = s * TT_POLICY_CELLS + c;
            float g = gain[c * TT_POLICY_HAND + s], r = risk[c * TT_POLICY_HAND + s];
            float term = g * coef[0] + r * coef[1] + g * g * coef[2] + r * r * coef[3] + g * r * coef[4];
            float empty = 1.0f - input[c * TT_POLICY_CELL_OBS] - input[c * TT_POLICY_CELL_OBS + 1];
            logits[a] = hand[s * TT_POLICY_CARD_OBS] * empty > 0.5f ? logits[a] + term : TT_POLICY_ILLEGAL;
        }
    }
}

#define PUFFERNET_TERMS tripletriad_policy_terms

#endif
