/* Cartpole: the classic control task with the same constants, Euler integration and termination
 * rule as Gymnasium's CartPole-v1, so the two can be compared step for step. Reward 1 per step;
 * terminal when the pole passes 12 degrees or the cart leaves [-2.4, 2.4]; truncated at max_steps. */
#include <math.h>
#include "ocean.h"
#include "spec.h"

#define CP_GRAVITY 9.8f
#define CP_MASS_CART 1.0f
#define CP_MASS_POLE 0.1f
#define CP_TOTAL_MASS (CP_MASS_CART + CP_MASS_POLE)
#define CP_HALF_LENGTH 0.5f
#define CP_POLE_MASS_LENGTH (CP_MASS_POLE * CP_HALF_LENGTH)
#define CP_FORCE 10.0f
#define CP_TAU 0.02f
#define CP_THETA_LIMIT (12.0f * 2.0f * 3.14159265358979f / 360.0f)
#define CP_X_LIMIT 2.4f

typedef struct Cartpole {
    OCEAN_SLOTS(float);
    CartpoleConfig cfg;  /* options (spec.toml) */
    float x, x_dot, theta, theta_dot;
    int tick;
} Cartpole;

static int c_init(Cartpole *env) {
    (void)env;
    return 0;
}

static void cartpole_write_obs(Cartpole *env) {
    env->observations[0] = env->x;
    env->observations[1] = env->x_dot;
    env->observations[2] = env->theta;
    env->observations[3] = env->theta_dot;
}

static void cartpole_new_episode(Cartpole *env) {
    env->x = 0.1f * ocean_randf(&env->rng) - 0.05f;
    env->x_dot = 0.1f * ocean_randf(&env->rng) - 0.05f;
    env->theta = 0.1f * ocean_randf(&env->rng) - 0.05f;
    env->theta_dot = 0.1f * ocean_randf(&env->rng) - 0.05f;
    env->tick = 0;
    cartpole_write_obs(env);
}

static void c_reset(Cartpole *env) { cartpole_new_episode(env); }

static void c_step(Cartpole *env) {
    float force = ocean_clamp(env->actions[0], 2) ? CP_FORCE : -CP_FORCE;
    float cos_t = cosf(env->theta), sin_t = sinf(env->theta);
    float temp = (force + CP_POLE_MASS_LENGTH * env->theta_dot * env->theta_dot * sin_t) / CP_TOTAL_MASS;
    float theta_acc = (CP_GRAVITY * sin_t - cos_t * temp) /
                      (CP_HALF_LENGTH * (4.0f / 3.0f - CP_MASS_POLE * cos_t * cos_t / CP_TOTAL_MASS));
    float x_acc = temp - CP_POLE_MASS_LENGTH * theta_acc * cos_t / CP_TOTAL_MASS;
    env->x += CP_TAU * env->x_dot;
    env->x_dot += CP_TAU * x_acc;
    env->theta += CP_TAU * env->theta_dot;
    env->theta_dot += CP_TAU * theta_acc;
    env->tick++;
    int fell =
        env->x < -CP_X_LIMIT || env->x > CP_X_LIMIT || env->theta < -CP_THETA_LIMIT || env->theta > CP_THETA_LIMIT;
    int timeout = !fell && env->tick >= env->cfg.max_steps;
    env->rewards[0] = 1.0f;
    env->terminals[0] = (unsigned char)fell;
    env->truncations[0] = (unsigned char)timeout;
    if (fell || timeout) {
        ocean_log_episode(&env->log, (float)env->tick, (float)env->tick, (float)env->tick,
                          (float)env->tick / env->cfg.max_steps);
        cartpole_new_episode(env);
    } else {
        cartpole_write_obs(env);
    }
}

#define CP_W 240
#define CP_H 160
static void c_frame_shape(Cartpole *env, int *h, int *w) {
    *h = CP_H;
    *w = CP_W;
}

static void c_render_rgb(Cartpole *env, unsigned char *frame) {
    static const unsigned char track[3] = {120, 120, 120}, cart[3] = {40, 40, 200}, pole[3] = {200, 140, 60};
    float scale = CP_W / (2 * CP_X_LIMIT);
    int cx = (int)(CP_W / 2 + env->x * scale), cy = 120;
    ocean_fill_rect(frame, CP_H, CP_W, 0, cy + 10, CP_W, 2, track);
    ocean_fill_rect(frame, CP_H, CP_W, cx - 15, cy, 30, 10, cart);
    for (int i = 0; i < 80; i++) {  /* the pole as a dotted line from the cart's top */
        int px = cx + (int)(i * sinf(env->theta)), py = cy - (int)(i * cosf(env->theta));
        ocean_fill_rect(frame, CP_H, CP_W, px - 1, py - 1, 3, 3, pole);
    }
}

static int c_render_text(Cartpole *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    int col = (int)((env->x + CP_X_LIMIT) / (2 * CP_X_LIMIT) * 40);
    col = col < 0 ? 0 : col > 40 ? 40 : col;
    int lean = env->theta > 0.02f ? 1 : env->theta < -0.02f ? -1 : 0;
    for (int i = 0; i <= 40; i++) ocean_putc(&t, i == col + lean ? (lean > 0 ? '/' : lean < 0 ? '\\' : '|') : ' ');
    ocean_putc(&t, '\n');
    for (int i = 0; i <= 40; i++) ocean_putc(&t, i == col ? '#' : '_');
    ocean_puts(&t, "\nstep ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, "  angle mrad ");
    ocean_puti(&t, (long)(env->theta * 1000));
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Cartpole *env) {}
