/* Bandit: one-step episodes with a constant observation; arm `best_arm` pays 1 with probability
 * best_prob, every other arm with other_prob. Checks the simplest credit assignment: the policy must
 * concentrate on the best arm. */
#include "ocean.h"
#include "spec.h"

typedef struct Bandit {
    OCEAN_SLOTS(unsigned char);
    BanditConfig cfg;  /* options (spec.toml) */
    uint32_t best_p, other_p;     /* probabilities as 32-bit thresholds: one compare per pull */
    int last_arm;
    float last_reward;
} Bandit;

static int c_init(Bandit *env) {
    env->best_p = (uint32_t)(env->cfg.best_prob * 4294967295.0);
    env->other_p = (uint32_t)(env->cfg.other_prob * 4294967295.0);
    env->last_arm = -1;
    return 0;
}

static void c_reset(Bandit *env) { env->observations[0] = 0; }

static void c_step(Bandit *env) {
    int arm = ocean_clamp(env->actions[0], env->cfg.num_arms);
    uint32_t threshold = arm == env->cfg.best_arm ? env->best_p : env->other_p;
    float reward = ocean_rand(&env->rng) < threshold ? 1.0f : 0.0f;
    env->rewards[0] = reward;
    env->terminals[0] = 1;  /* every pull is a whole episode */
    env->truncations[0] = 0;
    env->last_arm = arm;
    env->last_reward = reward;
    ocean_log_episode(&env->log, reward, 1.0f, (float)arm, arm == env->cfg.best_arm ? 1.0f : 0.0f);
}

static void c_frame_shape(Bandit *env, int *h, int *w) {
    *h = 32;
    *w = 16 * env->cfg.num_arms;
}

static void c_render_rgb(Bandit *env, unsigned char *frame) {
    static const unsigned char arm_rgb[3] = {90, 90, 90}, pulled[3] = {0, 160, 255}, paid[3] = {255, 210, 0};
    int w = 16 * env->cfg.num_arms;
    for (int i = 0; i < env->cfg.num_arms; i++)
        ocean_fill_rect(frame, 32, w, 16 * i + 2, 8, 12, 22,
                        i == env->last_arm ? (env->last_reward > 0 ? paid : pulled) : arm_rgb);
}

static int c_render_text(Bandit *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int i = 0; i < env->cfg.num_arms; i++)
        ocean_putc(&t, i == env->last_arm ? (env->last_reward > 0 ? '$' : 'x') : '|');
    ocean_puts(&t, "  last arm ");
    ocean_puti(&t, env->last_arm);
    ocean_puts(&t, "  reward ");
    ocean_puti(&t, (long)env->last_reward);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Bandit *env) {}
