/* Rocket lander: a rocket falls towards a pad under gravity and must touch down inside it, slowly and
 * upright, before the fuel runs out. The main engine pushes along the rocket's axis (at full throttle
 * twice the weight, so half throttle, action 0, holds it); side thrusters turn it. Box mode reads two
 * floats (throttle, turn); discrete mode the four buttons of the classic game (nothing, main engine,
 * turn left, turn right), each at full strength.
 *
 * Reward: the change of a potential that grows as the rocket nears the pad, slows down and stands up
 * (so the sum over an episode depends only on where it started and ended), minus a little per unit of
 * fuel burnt, plus 3 for a landing or minus 1 for a crash (touching down anywhere else, too fast or
 * tilted, or leaving the world). perf is 1 for a landing, else 0; score counts landings. */
#include <math.h>
#include "ocean.h"
#include "spec.h"

#define RL_DT 0.05f
#define RL_GRAVITY 9.81f
#define RL_MAIN (2.0f * RL_GRAVITY) /* acceleration at full throttle */
#define RL_TURN 2.0f                /* angular acceleration of the side thrusters, rad/s^2 */
#define RL_SPIN_DRAG 0.2f           /* per second */
#define RL_BURN (1.0f / 15.0f)      /* tank units per second of full main thrust */
#define RL_SIDE_BURN (1.0f / 60.0f)
#define RL_MAX_SPEED 20.0f
#define RL_MAX_SPIN 4.0f
#define RL_PI 3.14159265f
#define RL_SAFE_DOWN 3.0f  /* m/s: touchdown speeds and angles that still count as a landing */
#define RL_SAFE_ACROSS 2.0f
#define RL_SAFE_TILT 0.3f
#define RL_FUEL_COST 0.3f
#define RL_LANDED 3.0f

typedef struct RocketLander {
    OCEAN_SLOTS(float);
    RocketLanderConfig cfg; /* options (spec.toml) */
    float x, y, vx, vy, tilt, spin, fuel, throttle, turn;
    float ret;
    int tick, landed, crashed;
} RocketLander;

static int c_init(RocketLander *env) {
    (void)env;
    return 0;
}

static void c_close(RocketLander *env) { (void)env; }

static float rl_uniform(RocketLander *env, float lo, float hi) { return lo + (hi - lo) * ocean_randf(&env->rng); }

static float rl_potential(const RocketLander *env) {
    return -(fabsf(env->x) / 10.0f + env->y / 10.0f + fabsf(env->vx) / 5.0f + fabsf(env->vy) / 5.0f + fabsf(env->tilt));
}

static void rl_write_obs(RocketLander *env) {
    float *o = env->observations;
    o[0] = ocean_clampf(env->x / RL_HALF_WIDTH, -1.0f, 1.0f);
    o[1] = ocean_clampf(env->y / RL_CEILING, 0.0f, 1.0f);
    o[2] = env->vx / RL_MAX_SPEED;
    o[3] = env->vy / RL_MAX_SPEED;
    o[4] = env->tilt / RL_PI;
    o[5] = env->spin / RL_MAX_SPIN;
    o[6] = env->fuel / env->cfg.fuel;
}

static void rl_new_episode(RocketLander *env) {
    env->x = rl_uniform(env, -15.0f, 15.0f);
    env->y = rl_uniform(env, 35.0f, 45.0f);
    env->vx = rl_uniform(env, -2.0f, 2.0f);
    env->vy = rl_uniform(env, -4.0f, -1.0f);
    env->tilt = rl_uniform(env, -0.15f, 0.15f);
    env->spin = 0.0f;
    env->fuel = env->cfg.fuel;
    env->throttle = env->turn = 0.0f;
    env->ret = 0.0f;
    env->tick = 0;
    rl_write_obs(env);
}

static void c_reset(RocketLander *env) { rl_new_episode(env); }

static float rl_clamp(float v, float limit) { return v < -limit ? -limit : (v > limit ? limit : v); }

static void c_step(RocketLander *env) {
    float throttle, turn;
    if (env->cont_actions) {
        throttle = 0.5f * (ocean_cont_action(env, 0) + 1.0f);
        turn = ocean_cont_action(env, 1);
    } else {
        int button = ocean_clamp(env->actions[0], 4);
        throttle = button == 1 ? 1.0f : 0.0f;
        turn = button == 2 ? -1.0f : (button == 3 ? 1.0f : 0.0f);
    }
    float burn = RL_DT * (RL_BURN * throttle + RL_SIDE_BURN * fabsf(turn));
    if (env->fuel <= 0.0f) throttle = turn = burn = 0.0f;
    env->fuel = env->fuel > burn ? env->fuel - burn : 0.0f;
    env->throttle = throttle;
    env->turn = turn;

    float before = rl_potential(env);
    env->spin = rl_clamp(env->spin + (RL_TURN * turn - RL_SPIN_DRAG * env->spin) * RL_DT, RL_MAX_SPIN);
    env->tilt += env->spin * RL_DT;
    if (env->tilt > RL_PI) env->tilt -= 2.0f * RL_PI;
    if (env->tilt < -RL_PI) env->tilt += 2.0f * RL_PI;
    float push = RL_MAIN * throttle;
    env->vx = rl_clamp(env->vx + push * sinf(env->tilt) * RL_DT, RL_MAX_SPEED);
    env->vy = rl_clamp(env->vy + (push * cosf(env->tilt) - RL_GRAVITY) * RL_DT, RL_MAX_SPEED);
    env->x += env->vx * RL_DT;
    env->y += env->vy * RL_DT;
    env->tick++;

    float reward = rl_potential(env) - before - RL_FUEL_COST * burn;
    int done = 0, terminal = 0, landed = 0;
    if (env->y <= 0.0f) {
        landed = fabsf(env->x) <= 0.5f * env->cfg.pad_width && -env->vy <= RL_SAFE_DOWN &&
                 fabsf(env->vx) <= RL_SAFE_ACROSS && fabsf(env->tilt) <= RL_SAFE_TILT;
        env->y = 0.0f;
        reward += landed ? RL_LANDED : -1.0f;
        env->landed += landed;
        env->crashed += !landed;
        done = terminal = 1;
    } else if (fabsf(env->x) > RL_HALF_WIDTH || env->y > RL_CEILING) {
        reward -= 1.0f;
        env->crashed++;
        done = terminal = 1;
    } else if (env->tick >= env->cfg.max_steps) {
        done = 1;
    }
    env->ret += reward;
    env->rewards[0] = reward;
    env->terminals[0] = (unsigned char)terminal;
    env->truncations[0] = (unsigned char)(done && !terminal);
    if (done) {
        ocean_log_episode(&env->log, env->ret, (float)env->tick, (float)landed, (float)landed);
        rl_new_episode(env);
    } else {
        rl_write_obs(env);
    }
}

/* ---- rendering ---- */

#define RL_W 200
#define RL_H 200
#define RL_SCALE (RL_W / (2.0f * RL_HALF_WIDTH)) /* pixels per metre; the world's top is cut off */
#define RL_GROUND 190                            /* pixel row of the ground */

static void c_frame_shape(RocketLander *env, int *h, int *w) {
    (void)env;
    *h = RL_H;
    *w = RL_W;
}

static void c_render_rgb(RocketLander *env, unsigned char *frame) {
    static const unsigned char sky[3] = {10, 12, 30}, ground[3] = {90, 80, 70}, pad[3] = {240, 200, 60},
                               body[3] = {230, 230, 240}, flame[3] = {255, 120, 30};
    ocean_fill_rect(frame, RL_H, RL_W, 0, 0, RL_W, RL_GROUND, sky);
    ocean_fill_rect(frame, RL_H, RL_W, 0, RL_GROUND, RL_W, RL_H - RL_GROUND, ground);
    int half = (int)(0.5f * env->cfg.pad_width * RL_SCALE);
    ocean_fill_rect(frame, RL_H, RL_W, RL_W / 2 - half, RL_GROUND - 2, 2 * half, 3, pad);
    float sx = sinf(env->tilt), cy = cosf(env->tilt);
    float bx = RL_W / 2 + env->x * RL_SCALE, by = RL_GROUND - env->y * RL_SCALE;
    for (int i = 0; i < 24; i++) { /* the body: 12 m along its axis, drawn from the engine up */
        int px = (int)(bx + sx * i * 0.5f * RL_SCALE), py = (int)(by - cy * i * 0.5f * RL_SCALE);
        ocean_fill_rect(frame, RL_H, RL_W, px - 1, py - 1, 3, 3, body);
    }
    int flame_len = (int)(env->throttle * 8.0f);
    for (int i = 1; i <= flame_len; i++) {
        int px = (int)(bx - sx * i), py = (int)(by + cy * i);
        ocean_fill_rect(frame, RL_H, RL_W, px - 1, py, 2, 1, flame);
    }
}

static int c_render_text(RocketLander *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { ROWS = 16, COLS = 41 };
    int col = (int)((env->x / RL_HALF_WIDTH + 1.0f) * 0.5f * (COLS - 1));
    int row = ROWS - 1 - (int)(env->y / (0.5f * RL_CEILING) * (ROWS - 1));
    int half = (int)(0.5f * env->cfg.pad_width / RL_HALF_WIDTH * 0.5f * (COLS - 1));
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++)
            ocean_putc(&t, r == row && c == col ? (env->tilt > 0.1f ? '/' : env->tilt < -0.1f ? '\\' : '|') : ' ');
        ocean_putc(&t, '\n');
    }
    for (int c = 0; c < COLS; c++)
        ocean_putc(&t, (c - (COLS - 1) / 2 <= half && (COLS - 1) / 2 - c <= half) ? '=' : '_');
    ocean_puts(&t, "\nheight dm ");
    ocean_puti(&t, (long)(env->y * 10.0f));
    ocean_puts(&t, "  down dm/s ");
    ocean_puti(&t, (long)(-env->vy * 10.0f));
    ocean_puts(&t, "  tilt mrad ");
    ocean_puti(&t, (long)(env->tilt * 1000.0f));
    ocean_puts(&t, "  fuel % ");
    ocean_puti(&t, (long)(100.0f * env->fuel / env->cfg.fuel));
    ocean_puts(&t, "  landed ");
    ocean_puti(&t, env->landed);
    ocean_puts(&t, " crashed ");
    ocean_puti(&t, env->crashed);
    ocean_putc(&t, '\n');
    return t.len;
}
