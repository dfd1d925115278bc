/* Mixed: targets sit on a line in [-1, 1]; the observation shows where, and which one is asked for. An
 * action picks a target (its discrete part) and aims at a point (its Box part); the reward is paid only
 * when the pick is the asked target, and more the closer the aim: 1 - |aim - target|, at least 0. Every
 * step is a whole episode. Checks that a policy learns both heads of a mixed action space at once: the
 * logged perf (pick right and aim within `tolerance`) needs both, `picked` and `aimed` show each. */
#include "spec.h"
#include "ocean.h"

typedef struct Mixed {
    OCEAN_SLOTS(float);
    MixedConfig cfg; /* options (spec.toml) */
    float positions[MX_MAX_TARGETS];
    int asked;
    int last_pick; /* -1 before the first step */
    float last_aim, last_reward;
} Mixed;

static int c_init(Mixed *env) {
    env->last_pick = -1;
    return 0;
}

static void mixed_new_episode(Mixed *env) {
    int n = env->cfg.num_targets;
    for (int i = 0; i < n; i++) {
        env->positions[i] = 2.0f * ocean_randf(&env->rng) - 1.0f;
        env->observations[i] = env->positions[i];
        env->observations[n + i] = 0.0f;
    }
    env->asked = ocean_randint(&env->rng, n);
    env->observations[n + env->asked] = 1.0f;
}

static void c_reset(Mixed *env) {
    env->last_pick = -1;
    mixed_new_episode(env);
}

static void c_step(Mixed *env) {
    int pick = ocean_choice(env->cont_actions[0], env->cfg.num_targets);
    float aim = ocean_cont_action(env, 1);
    float miss = fabsf(aim - env->positions[env->asked]);
    int picked = pick == env->asked, aimed = miss <= env->cfg.tolerance;
    float reward = picked && miss < 1.0f ? 1.0f - miss : 0.0f;
    env->rewards[0] = reward;
    env->terminals[0] = 1; /* every step is a whole episode */
    env->truncations[0] = 0;
    env->last_pick = pick;
    env->last_aim = aim;
    env->last_reward = reward;
    ocean_log_episode(&env->log, reward, 1.0f, reward, picked && aimed ? 1.0f : 0.0f);
    env->log.picked += (float)picked;
    env->log.aimed += (float)aimed;
    mixed_new_episode(env);
}

#define MX_WIDTH 256
#define MX_HEIGHT 48
static int mixed_x(float position) { return (int)((position + 1.0f) * 0.5f * (MX_WIDTH - 1)); }

static void c_frame_shape(Mixed *env, int *h, int *w) {
    (void)env;
    *h = MX_HEIGHT;
    *w = MX_WIDTH;
}

static void c_render_rgb(Mixed *env, unsigned char *frame) {
    static const unsigned char line[3] = {60, 60, 60}, target[3] = {0, 160, 255}, asked[3] = {255, 210, 0},
                               aim_rgb[3] = {230, 40, 40}, pick_rgb[3] = {255, 255, 255};
    ocean_fill_rect(frame, MX_HEIGHT, MX_WIDTH, 0, MX_HEIGHT / 2, MX_WIDTH, 1, line);
    for (int i = 0; i < env->cfg.num_targets; i++) {
        int x = mixed_x(env->positions[i]);
        ocean_fill_rect(frame, MX_HEIGHT, MX_WIDTH, x - 3, MX_HEIGHT / 2 - 6, 7, 13, i == env->asked ? asked : target);
    }
    if (env->last_pick >= 0) {
        ocean_fill_rect(frame, MX_HEIGHT, MX_WIDTH, mixed_x(env->last_aim), 4, 1, MX_HEIGHT - 8, aim_rgb);
        ocean_fill_rect(frame, MX_HEIGHT, MX_WIDTH, 4 + 8 * env->last_pick, 2, 6, 6, pick_rgb);
    }
}

static int c_render_text(Mixed *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    char row[65];
    for (int i = 0; i < 64; i++) row[i] = '-';
    row[64] = '\0';
    for (int i = 0; i < env->cfg.num_targets; i++)
        row[(int)((env->positions[i] + 1.0f) * 0.5f * 63.0f)] = i == env->asked ? '*' : (char)('0' + i % 10);
    ocean_puts(&t, row);
    ocean_puts(&t, "  asked ");
    ocean_puti(&t, env->asked);
    if (env->last_pick >= 0) {
        ocean_puts(&t, "  last: picked ");
        ocean_puti(&t, env->last_pick);
        ocean_puts(&t, ", reward x1000 ");
        ocean_puti(&t, (long)(1000.0f * env->last_reward));
    }
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Mixed *env) { (void)env; }
