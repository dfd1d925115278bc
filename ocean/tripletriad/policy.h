/* ocean/tripletriad/policy.h: the C twin of policy.py's per-move terms, for ocean/puffernet.h (which says
 * how a twin reaches it: a build defines PUFFERNET_TWIN as this file's path before including puffernet.h;
 * a page built by `puffer web` and `puffer eval --native` do). Default's MLP encodes the row, so the twin
 * only adds its terms. tests/test_export.py holds it to policy.py's logits within 1e-5.
 *
 * Each move (card slot s, cell c; action s * 9 + c) gains features of its own hints, the flips it makes
 * (gain) and the sides it exposes (risk), weighted by the coefficients the net computes from the whole
 * position (policy.py's `weights` layer, the twin's only tensors); a move the observation shows to be
 * impossible (a slot already played, a cell taken) gets TT_POLICY_ILLEGAL.
 */
#ifndef TRIPLETRIAD_POLICY_H
#define TRIPLETRIAD_POLICY_H

/* The observation layout of spec.toml, as policy.py reads it (float32 rows). */
#define TT_POLICY_CELLS 9
#define TT_POLICY_HAND 5
#define TT_POLICY_CELL_OBS 6 /* per cell: mine, theirs, 4 ranks */
#define TT_POLICY_CARD_OBS 5 /* per card in hand: held, 4 ranks */
#define TT_POLICY_HINTS (TT_POLICY_CELLS * TT_POLICY_CELL_OBS + 2 * TT_POLICY_HAND * TT_POLICY_CARD_OBS + 4)
#define TT_POLICY_FEATURES 5 /* gain, risk, gain^2, risk^2, gain * risk */
#define TT_POLICY_ILLEGAL (-1e4f)

static const char *tripletriad_policy_check(const PufferNet *net, size_t *scratch) {
    int moves = TT_POLICY_CELLS * TT_POLICY_HAND;
    *scratch = 0;
    if (net->num_params != 0 || net->twin_encodes || net->logit_size != moves ||
        net->row_bytes < 4 * (TT_POLICY_HINTS + 2 * moves) ||
        net->twin_floats != (size_t)TT_POLICY_FEATURES * ((size_t)net->hidden_size + 1))
        return "the weights do not fit tripletriad's policy twin (its observation, moves or terms layer)";
    return NULL;
}

static float tripletriad_policy_obs(const unsigned char *row, int i) {
    float v;
    memcpy(&v, row + 4 * (size_t)i, 4);
    return v;
}

static void tripletriad_policy_terms(const PufferNet *net, const unsigned char *row, const float *hidden,
                                     float *logits) {
    float coef[TT_POLICY_FEATURES];
    puffernet_linear(net->twin_w, net->twin_w + TT_POLICY_FEATURES * net->hidden_size, hidden, net->hidden_size,
                     TT_POLICY_FEATURES, coef, PUFFERNET_IDENTITY);
    int gain = TT_POLICY_HINTS, risk = gain + TT_POLICY_CELLS * TT_POLICY_HAND;
    int hand = TT_POLICY_CELLS * TT_POLICY_CELL_OBS;
    for (int s = 0; s < TT_POLICY_HAND; s++) {
        for (int c = 0; c < TT_POLICY_CELLS; c++) {
            int a = s * TT_POLICY_CELLS + c;
            float g = tripletriad_policy_obs(row, gain + c * TT_POLICY_HAND + s);
            float r = tripletriad_policy_obs(row, risk + c * TT_POLICY_HAND + s);
            float term = g * coef[0] + r * coef[1] + g * g * coef[2] + r * r * coef[3] + g * r * coef[4];
            float empty = 1.0f - tripletriad_policy_obs(row, c * TT_POLICY_CELL_OBS) -
                          tripletriad_policy_obs(row, c * TT_POLICY_CELL_OBS + 1);
            float held = tripletriad_policy_obs(row, hand + s * TT_POLICY_CARD_OBS);
            logits[a] = held * empty > 0.5f ? logits[a] + term : TT_POLICY_ILLEGAL;
        }
    }
}

#define PUFFERNET_TWIN_NAME "puffer_tripletriad"
#define PUFFERNET_TWIN_CHECK tripletriad_policy_check
#define PUFFERNET_TWIN_TERMS tripletriad_policy_terms

#endif
