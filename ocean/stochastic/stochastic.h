/* Stochastic: the observation never changes, and at the end of each episode of `horizon` steps the
 * reward is 1 - |q - p|, where q is the fraction of steps the agent played action 0. With nothing to
 * condition on, the best policy plays 0 with probability p and 1 otherwise: it checks that a policy
 * can stay stochastic instead of collapsing to its most rewarded action. */
#include "ocean.h"
#include "spec.h"

typedef struct Stochastic {
    OCEAN_SLOTS(unsigned char);
    StochasticConfig cfg;  /* options (spec.toml) */
    int tick, zeros;
} Stochastic;

static int c_init(Stochastic *env) {
    (void)env;
    return 0;
}

static void stochastic_new_episode(Stochastic *env) {
    env->tick = 0;
    env->zeros = 0;
    env->observations[0] = 0;
}

static void c_reset(Stochastic *env) { stochastic_new_episode(env); }

static void c_step(Stochastic *env) {
    env->zeros += ocean_clamp(env->actions[0], 2) == 0;
    env->tick++;
    env->rewards[0] = 0;
    env->terminals[0] = 0;
    env->truncations[0] = 0;
    if (env->tick == env->cfg.horizon) {
        float q = (float)env->zeros / env->cfg.horizon;
        float gap = q > env->cfg.p ? q - env->cfg.p : env->cfg.p - q;
        float reward = 1.0f - gap;
        env->rewards[0] = reward;
        env->terminals[0] = 1;
        ocean_log_episode(&env->log, reward, (float)env->cfg.horizon, q, reward);
        stochastic_new_episode(env);
    }
}

static void c_frame_shape(Stochastic *env, int *h, int *w) {
    *h = 32;
    *w = 128;
}

static void c_render_rgb(Stochastic *env, unsigned char *frame) {
    static const unsigned char target[3] = {200, 200, 0}, played[3] = {0, 120, 220};
    int so_far = env->tick ? (int)(128.0f * env->zeros / env->tick) : 0;
    ocean_fill_rect(frame, 32, 128, 0, 0, (int)(128 * env->cfg.p), 14, target);
    ocean_fill_rect(frame, 32, 128, 0, 18, so_far, 14, played);
}

static int c_render_text(Stochastic *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "step ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, "/");
    ocean_puti(&t, env->cfg.horizon);
    ocean_puts(&t, "  action-0 count ");
    ocean_puti(&t, env->zeros);
    ocean_puts(&t, "  target fraction ");
    ocean_puti(&t, (long)(env->cfg.p * 100));
    ocean_puts(&t, "%\n");
    return t.len;
}

static void c_close(Stochastic *env) {}
