/* Password: guess a fixed binary string one bit per step; the reward (1) comes only at the end and
 * only if every bit was right. The string is the same for every env of a run (it comes from the
 * config, not the env's rng), so a shared policy can learn it. Checks that exploration does not
 * collapse before the one rewarded sequence out of 2^length is found. */
#include "ocean.h"
#include "spec.h"

typedef struct Password {
    OCEAN_SLOTS(unsigned char);
    PasswordConfig cfg;  /* options (spec.toml) */
    int tick;
    unsigned char password[PW_MAX];
    unsigned char guess[PW_MAX];
} Password;

static int c_init(Password *env) {
    uint64_t s = ocean_seed_mix(env->cfg.password_seed, 0x5A55);
    for (int i = 0; i < env->cfg.length; i++) env->password[i] = (unsigned char)(ocean_rand(&s) & 1);
    return 0;
}

static void password_new_episode(Password *env) {
    env->tick = 0;
    memset(env->guess, 0, (size_t)env->cfg.length);
    memset(env->observations, 0, (size_t)env->cfg.length);
}

static void c_reset(Password *env) { password_new_episode(env); }

/* obs[i]: 0 not guessed yet, 1 guessed 0, 2 guessed 1 */
static void c_step(Password *env) {
    int bit = ocean_clamp(env->actions[0], 2);
    int t = env->tick;
    env->guess[t] = (unsigned char)(bit + 1);
    env->observations[t] = (unsigned char)(bit + 1);
    env->tick = ++t;
    env->rewards[0] = 0;
    env->terminals[0] = 0;
    env->truncations[0] = 0;
    if (t == env->cfg.length) {
        int right = 0;
        for (int i = 0; i < env->cfg.length; i++) right += env->guess[i] == env->password[i] + 1;
        float reward = right == env->cfg.length ? 1.0f : 0.0f;
        env->rewards[0] = reward;
        env->terminals[0] = 1;
        ocean_log_episode(&env->log, reward, (float)t, (float)right, reward);
        password_new_episode(env);
    }
}

static void c_frame_shape(Password *env, int *h, int *w) {
    *h = 32;
    *w = 16 * env->cfg.length;
}

static void c_render_rgb(Password *env, unsigned char *frame) {
    static const unsigned char palette[3][3] = {{40, 40, 40}, {0, 0, 200}, {200, 200, 0}};
    int w = 16 * env->cfg.length;
    for (int i = 0; i < env->cfg.length; i++)  /* top row: guesses so far; bottom row: the password */
        ocean_fill_rect(frame, 32, w, 16 * i + 1, 1, 14, 14, palette[env->guess[i]]);
    for (int i = 0; i < env->cfg.length; i++)
        ocean_fill_rect(frame, 32, w, 16 * i + 1, 17, 14, 14, palette[env->password[i] + 1]);
}

static int c_render_text(Password *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "guess    ");
    for (int i = 0; i < env->cfg.length; i++) ocean_putc(&t, "_01"[env->guess[i]]);
    ocean_puts(&t, "\npassword ");
    for (int i = 0; i < env->cfg.length; i++) ocean_putc(&t, (char)('0' + env->password[i]));
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Password *env) {}
