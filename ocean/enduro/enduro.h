/* Enduro: an Atari-style endurance race. The player drives a three-lane road full of slower cars,
 * passing as many as it can. Each day cycles through daylight, snow (less grip), dusk, night and
 * fog (shorter sight): the observation only shows cars within the current visibility. A day ends
 * after `day_length` steps; unless `cars_per_day` cars were passed (net) by then the race is over
 * (terminal). After `max_days` days the episode is truncated.
 *
 * Actions (Atari's Enduro set): 0 nothing, 1 accelerate, 2 right, 3 left, 4 brake, 5 brake+right,
 * 6 brake+left, 7 accelerate+right, 8 accelerate+left.
 * Reward: +1 for each car passed, -1 for each car that passes the player back. Hitting a car drops
 * the player's speed and takes control away for `crash_steps` steps.
 *
 * Geometry: x is the lateral position, the road spans [-1, 1] with lanes centred at -2/3, 0, 2/3;
 * z is the distance ahead of the player (negative: behind). Cars keep their lane and speed.
 * Log: score = cars passed (net) in the episode, perf = days completed / max_days.
 */
#include "ocean.h"
#include "spec.h"  /* generated from spec.toml: EnduroConfig and the constants */

#define EN_FAR 100.0f          /* cars spawn ahead at this distance, and are seen at most this far */
#define EN_BACK 24.0f          /* and behind at this one */
#define EN_CAR_LEN 4.0f
#define EN_CAR_HALF_W 0.16f
#define EN_VMAX 2.0f
#define EN_ACCEL 0.04f
#define EN_BRAKE 0.10f
#define EN_DRAG 0.01f
#define EN_STEER 0.06f
#define EN_DRIFT 0.02f         /* sideways push of a full curve at full speed */
#define EN_PHASES 7
#define EN_OBS (9 + 5 * EN_LANES)
#define EN_ACTIONS 9

static const float EN_LANE_X[EN_LANES] = {-2.0f / 3.0f, 0.0f, 2.0f / 3.0f};

/* Phases of a day: where each starts (fraction of the day), how far one sees (fraction of EN_FAR)
 * and how well the tyres grip. Snow and fog are the weather; with weather=0 they are plain day/night. */
enum { EN_DAY, EN_SNOW, EN_AFTERNOON, EN_DUSK, EN_NIGHT, EN_FOG, EN_DAWN };
static const float EN_PHASE_START[EN_PHASES] = {0.0f, 0.20f, 0.35f, 0.55f, 0.65f, 0.78f, 0.90f};
static const float EN_PHASE_SIGHT[EN_PHASES] = {1.0f, 1.0f, 1.0f, 0.7f, 0.4f, 0.2f, 0.6f};
static const float EN_PHASE_GRIP[EN_PHASES] = {1.0f, 0.45f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
static const char *const EN_PHASE_NAMES[EN_PHASES] = {"day", "snow", "day", "dusk", "night", "fog", "dawn"};

typedef struct EnduroCar {
    float z, speed;
    int lane;
} EnduroCar;

typedef struct Enduro {
    OCEAN_SLOTS(float);
    EnduroConfig cfg;          /* the options of spec.toml, validated */
    /* derived at init: reciprocals, so the per-step code multiplies instead of dividing */
    float inv_day_length, inv_cars_per_day, inv_crash_steps;
    /* state */
    EnduroCar cars[EN_MAX_CARS];    /* the first n_cars are on the road (removal swaps in the last) */
    int n_cars;
    int next_phase_tick;            /* day_tick at which the phase changes next */
    float x, v, curve, curve_target;
    int curve_left;                 /* steps until the next curve change */
    int spawn_left, crash_left;
    int tick, day_tick, day, phase, passed, day_passed, crashes;
    float sight, grip, episode_return;
} Enduro;

static int c_init(Enduro *env) {
    env->inv_day_length = 1.0f / (float)env->cfg.day_length;
    env->inv_cars_per_day = 1.0f / (float)env->cfg.cars_per_day;
    env->inv_crash_steps = 1.0f / (float)env->cfg.crash_steps;
    return 0;  /* fixed-size state: nothing to allocate */
}

static inline float en_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

static void en_set_phase(Enduro *env) {
    int p = 0;
    while (p + 1 < EN_PHASES && env->day_tick >= (int)(EN_PHASE_START[p + 1] * env->cfg.day_length)) p++;
    env->next_phase_tick = p + 1 < EN_PHASES ? (int)(EN_PHASE_START[p + 1] * env->cfg.day_length) : env->cfg.day_length;
    if (!env->cfg.weather && p == EN_SNOW) p = EN_DAY;
    if (!env->cfg.weather && p == EN_FOG) p = EN_NIGHT;
    env->phase = p;
    env->sight = EN_PHASE_SIGHT[p] * EN_FAR;
    env->grip = EN_PHASE_GRIP[p];
}

/* Spawning: mostly ahead (the player is faster than traffic); behind only when the player crawls.
 * A new car never closes the last free lane near where it appears, so the road is always passable. */
static void en_spawn(Enduro *env) {
    if (env->n_cars >= env->cfg.max_cars) return;
    float speed = 0.7f + 0.5f * ocean_randf(&env->rng);
    int ahead = env->v > speed;
    float z = ahead ? EN_FAR : -EN_BACK;
    int lane = ocean_randint(&env->rng, EN_LANES);
    int blocked[EN_LANES] = {0, 0, 0};
    for (int i = 0; i < env->n_cars; i++) {
        const EnduroCar *c = &env->cars[i];
        float dz = c->z - z;
        if (dz < 3 * EN_CAR_LEN && dz > -3 * EN_CAR_LEN) blocked[c->lane] = 1;
    }
    if (blocked[lane]) return;
    blocked[lane] = 1;
    if (blocked[0] && blocked[1] && blocked[2]) return;
    env->cars[env->n_cars++] = (EnduroCar){z, speed, lane};
}

static void en_write_obs(Enduro *env) {
    float *o = env->observations;
    o[0] = env->x / 1.2f;
    o[1] = env->v / EN_VMAX;
    o[2] = env->curve;
    o[3] = (float)env->crash_left * env->inv_crash_steps;
    o[4] = env->sight * (1.0f / EN_FAR);
    o[5] = env->grip;
    o[6] = (float)env->day_tick * env->inv_day_length;
    float left = (float)(env->cfg.cars_per_day - env->day_passed) * env->inv_cars_per_day;
    o[7] = en_clampf(left, 0, 1);
    o[8] = env->x > 1.0f || env->x < -1.0f;
    /* per lane: nearest and second-nearest visible car ahead (distance, closing speed), nearest behind */
    float ahead1[EN_LANES], ahead2[EN_LANES], rel1[EN_LANES], behind[EN_LANES], relb[EN_LANES];
    for (int l = 0; l < EN_LANES; l++) {
        ahead1[l] = ahead2[l] = EN_FAR;
        behind[l] = EN_BACK;
        rel1[l] = relb[l] = 0;
    }
    for (int i = 0; i < env->n_cars; i++) {
        const EnduroCar *c = &env->cars[i];
        int l = c->lane;
        if (c->z >= 0) {
            if (c->z > env->sight) continue;
            if (c->z < ahead1[l]) {
                ahead2[l] = ahead1[l];
                ahead1[l] = c->z;
                rel1[l] = env->v - c->speed;
            } else if (c->z < ahead2[l]) ahead2[l] = c->z;
        } else if (-c->z < behind[l]) {
            behind[l] = -c->z;
            relb[l] = c->speed - env->v;
        }
    }
    for (int l = 0; l < EN_LANES; l++) {
        float *p = o + 9 + 5 * l;
        p[0] = ahead1[l] * (1.0f / EN_FAR);
        p[1] = rel1[l] * (1.0f / EN_VMAX);
        p[2] = ahead2[l] * (1.0f / EN_FAR);
        p[3] = behind[l] * (1.0f / EN_BACK);
        p[4] = relb[l] * (1.0f / EN_VMAX);
    }
}

static void en_new_episode(Enduro *env) {
    env->n_cars = 0;
    env->x = 0;
    env->v = 0;
    env->curve = env->curve_target = 0;
    env->curve_left = 100 + ocean_randint(&env->rng, 200);
    env->spawn_left = 10;
    env->crash_left = 0;
    env->tick = env->day_tick = env->day = 0;
    env->passed = env->day_passed = env->crashes = 0;
    env->episode_return = 0;
    en_set_phase(env);
    en_write_obs(env);
}

static void c_reset(Enduro *env) { en_new_episode(env); }

/* ---- the scripted driver (autopilot) ----
 * Full throttle; heads for the lane whose nearest visible car ahead is farthest (staying put unless
 * another lane is clearly better) and steers to its centre; brakes when the car ahead in its own lane
 * is close and no other lane is better. It ignores cars behind and does not anticipate curves, snow
 * or fog. */
static int en_scripted_action(const Enduro *env) {
    const float *o = env->observations;
    int lane = 0;
    float best = 1e9f;
    for (int l = 0; l < EN_LANES; l++) {
        float d = EN_LANE_X[l] - env->x;
        if (d * d < best) {
            best = d * d;
            lane = l;
        }
    }
    int target = lane;
    float free = o[9 + 5 * lane];
    for (int l = 0; l < EN_LANES; l++)
        if (o[9 + 5 * l] > free + 0.15f) {
            free = o[9 + 5 * l];
            target = l;
        }
    float dx = EN_LANE_X[target] - env->x;
    int steer = dx > 0.05f ? 1 : (dx < -0.05f ? -1 : 0);
    /* brake when the car ahead in its lane is close and closing, unless already leaving the lane */
    int brake = target == lane && o[9 + 5 * lane] < 0.12f && o[9 + 5 * lane + 1] > 0;
    static const int actions[2][3] = {{8, 1, 7}, {6, 4, 5}};  /* [brake][steer + 1] */
    return actions[brake][steer + 1];
}

/* ---- step ---- */

static void c_step(Enduro *env) {
    int a = env->cfg.autopilot ? en_scripted_action(env) : ocean_clamp(env->actions[0], EN_ACTIONS);
    float reward = 0;
    env->tick++;
    env->day_tick++;

    /* controls */
    if (env->crash_left > 0) {
        env->crash_left--;
        env->v = en_clampf(env->v - EN_DRAG, 0, EN_VMAX);
    } else {
        static const signed char throttle[EN_ACTIONS] = {0, 1, 0, 0, -1, -1, -1, 1, 1};
        static const signed char steer[EN_ACTIONS] = {0, 0, 1, -1, 0, 1, -1, 1, -1};
        int th = throttle[a];
        env->v += th > 0 ? EN_ACCEL : (th < 0 ? -EN_BRAKE : -EN_DRAG);
        env->v = en_clampf(env->v, 0, EN_VMAX);
        env->x += steer[a] * EN_STEER * env->grip * (0.4f + 0.6f * env->v / EN_VMAX);
    }
    /* the road: curves push the car outwards, faster the faster it goes; in snow it also slides */
    if (--env->curve_left <= 0) {
        static const float targets[3] = {-1.0f, 0.0f, 1.0f};
        env->curve_target = targets[ocean_randint(&env->rng, 3)];
        env->curve_left = 100 + ocean_randint(&env->rng, 300);
    }
    env->curve += en_clampf(env->curve_target - env->curve, -0.01f, 0.01f);
    env->x -= env->curve * EN_DRIFT * env->v / EN_VMAX * (2.0f - env->grip);
    if (env->x > 1.0f || env->x < -1.0f) {  /* on the verge: slow, and bounded */
        env->v = en_clampf(env->v - 2 * EN_DRAG, 0, 0.5f * EN_VMAX);
        env->x = en_clampf(env->x, -1.2f, 1.2f);
    }

    /* traffic */
    for (int i = 0; i < env->n_cars; i++) {
        EnduroCar *c = &env->cars[i];
        float z0 = c->z;
        c->z -= env->v - c->speed;
        if (z0 >= 0 && c->z < 0) {
            reward += 1;
            env->passed++;
            env->day_passed++;
        } else if (z0 < 0 && c->z >= 0) {
            reward -= 1;
            env->passed--;
            env->day_passed--;
        }
        if (c->z < EN_CAR_LEN && c->z > -EN_CAR_LEN && env->crash_left == 0) {
            float dx = env->x - EN_LANE_X[c->lane];
            if (dx < 2 * EN_CAR_HALF_W && dx > -2 * EN_CAR_HALF_W) {
                /* a crash: the player is thrown back behind the car it hit */
                env->v = 0.3f * c->speed;
                env->crash_left = env->cfg.crash_steps;
                env->crashes++;
                if (c->z < 0) {
                    reward -= 1;
                    env->passed--;
                    env->day_passed--;
                }
                c->z = EN_CAR_LEN;
            }
        }
        if (c->z > EN_FAR + 1 || c->z < -EN_BACK - 1) env->cars[i--] = env->cars[--env->n_cars];
    }
    if (--env->spawn_left <= 0) {
        en_spawn(env);
        env->spawn_left = (int)((8 + ocean_randint(&env->rng, 16)) / env->cfg.traffic) + 1;
    }

    /* the clock */
    int over = 0, timeout = 0;
    if (env->day_tick >= env->cfg.day_length) {
        if (env->day_passed < env->cfg.cars_per_day) {
            over = 1;
        } else {
            env->day++;
            env->day_tick = 0;
            env->day_passed = 0;
            timeout = env->day >= env->cfg.max_days;
        }
    }
    if (env->day_tick >= env->next_phase_tick || env->day_tick == 0) en_set_phase(env);

    env->episode_return += reward;
    env->rewards[0] = reward;
    env->terminals[0] = (unsigned char)over;
    env->truncations[0] = (unsigned char)timeout;
    if (over || timeout) {
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)env->passed,
                          (float)env->day / (float)env->cfg.max_days);
        en_new_episode(env);
        return;
    }
    en_write_obs(env);
}

/* ---- rendering: a perspective road in 160x210, like the Atari screen ---- */

#define EN_W 160
#define EN_H 210
#define EN_HORIZON 70
#define EN_BOTTOM 190
#define EN_ROAD_HALF 70.0f     /* road half-width in pixels at the bottom of the screen */
#define EN_DEPTH 12.0f         /* perspective constant: distance at which things look half size */

static void c_frame_shape(Enduro *env, int *h, int *w) {
    *h = EN_H;
    *w = EN_W;
}

typedef struct EnduroPalette {
    unsigned char sky[3], ground[3], road[3], edge[3], car[3];
    int lights_only;
} EnduroPalette;

static EnduroPalette en_palette(int phase) {
    switch (phase) {
    case EN_SNOW:
        return (EnduroPalette){{150, 170, 200}, {236, 236, 236}, {170, 170, 180}, {60, 60, 60}, {200, 40, 40}, 0};
    case EN_DUSK:
        return (EnduroPalette){{200, 110, 60}, {70, 90, 40}, {90, 90, 90}, {220, 220, 220}, {170, 40, 40}, 0};
    case EN_NIGHT:
        return (EnduroPalette){{8, 8, 30}, {10, 10, 20}, {20, 20, 24}, {120, 120, 120}, {240, 40, 40}, 1};
    case EN_FOG:
        return (EnduroPalette){{120, 120, 120}, {100, 100, 100}, {110, 110, 110}, {150, 150, 150}, {240, 40, 40}, 1};
    case EN_DAWN:
        return (EnduroPalette){{230, 160, 120}, {60, 100, 50}, {100, 100, 100}, {230, 230, 230}, {190, 40, 40}, 0};
    default:
        return (EnduroPalette){{80, 150, 230}, {40, 140, 40}, {110, 110, 110}, {240, 240, 240}, {200, 30, 30}, 0};
    }
}

static inline float en_scale(float z) { return EN_DEPTH / (EN_DEPTH + (z > 0 ? z : 0)); }

/* Screen column of lateral position x at distance z: the camera follows the player and the curve
 * bends the far road sideways. */
static inline float en_screen_x(const Enduro *env, float x, float z) {
    float s = en_scale(z), bend = (1 - s) * (1 - s);
    return EN_W / 2.0f + (x - env->x) * EN_ROAD_HALF * s + env->curve * 60.0f * bend;
}

static inline int en_screen_y(float z) { return EN_HORIZON + (int)((EN_BOTTOM - EN_HORIZON) * en_scale(z)); }

static void c_render_rgb(Enduro *env, unsigned char *frame) {
    EnduroPalette p = en_palette(env->phase);
    ocean_fill_rect(frame, EN_H, EN_W, 0, 0, EN_W, EN_HORIZON, p.sky);
    ocean_fill_rect(frame, EN_H, EN_W, 0, EN_HORIZON, EN_W, EN_H - EN_HORIZON, p.ground);
    float sight = env->sight;
    for (int y = EN_HORIZON + 1; y < EN_BOTTOM + 12 && y < EN_H; y++) {
        float s = (float)(y - EN_HORIZON) / (EN_BOTTOM - EN_HORIZON);
        float z = EN_DEPTH / s - EN_DEPTH;
        if (z > sight && p.lights_only) continue;  /* unseen road stays dark */
        int left = (int)en_screen_x(env, -1, z), right = (int)en_screen_x(env, 1, z);
        ocean_fill_rect(frame, EN_H, EN_W, left, y, right - left + 1, 1, p.road);
        ocean_fill_rect(frame, EN_H, EN_W, left - 1, y, 2, 1, p.edge);
        ocean_fill_rect(frame, EN_H, EN_W, right, y, 2, 1, p.edge);
    }
    for (int i = 0; i < env->n_cars; i++) {
        const EnduroCar *c = &env->cars[i];
        if (c->z > sight || c->z < -EN_CAR_LEN) continue;
        float s = en_scale(c->z);
        int w = (int)(2 * EN_CAR_HALF_W * EN_ROAD_HALF * s) + 2, h = (int)(12 * s) + 2;
        int cx = (int)en_screen_x(env, EN_LANE_X[c->lane], c->z), y = en_screen_y(c->z) - h;
        if (p.lights_only) {
            static const unsigned char light[3] = {255, 60, 60};
            ocean_fill_rect(frame, EN_H, EN_W, cx - w / 2, y + h / 2, 2, 2, light);
            ocean_fill_rect(frame, EN_H, EN_W, cx + w / 2 - 2, y + h / 2, 2, 2, light);
        } else {
            ocean_fill_rect(frame, EN_H, EN_W, cx - w / 2, y, w, h, p.car);
        }
    }
    static const unsigned char player[3] = {240, 240, 240}, crash[3] = {250, 180, 0}, hud[3] = {0, 0, 0};
    int w = (int)(2 * EN_CAR_HALF_W * EN_ROAD_HALF) + 2;
    ocean_fill_rect(frame, EN_H, EN_W, EN_W / 2 - w / 2, EN_BOTTOM - 12, w, 12, env->crash_left ? crash : player);
    /* bottom bar: day progress, and cars passed against the day's quota */
    static const unsigned char clock[3] = {230, 230, 80}, quota[3] = {80, 230, 80};
    ocean_fill_rect(frame, EN_H, EN_W, 0, EN_H - 14, EN_W, 14, hud);
    ocean_fill_rect(frame, EN_H, EN_W, 0, EN_H - 12, (int)((long)EN_W * env->day_tick / env->cfg.day_length), 4, clock);
    int got =
        env->day_passed < 0 ? 0 : (env->day_passed > env->cfg.cars_per_day ? env->cfg.cars_per_day : env->day_passed);
    ocean_fill_rect(frame, EN_H, EN_W, 0, EN_H - 6, EN_W * got / env->cfg.cars_per_day, 4, quota);
}

/* Text: the road seen from above, 3 lanes, far at the top; 'A' is the player, 'o' a car. */
static int c_render_text(Enduro *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "day ");
    ocean_puti(&t, env->day + 1);
    ocean_puts(&t, " (");
    ocean_puts(&t, EN_PHASE_NAMES[env->phase]);
    ocean_puts(&t, ")  passed ");
    ocean_puti(&t, env->day_passed);
    ocean_putc(&t, '/');
    ocean_puti(&t, env->cfg.cars_per_day);
    ocean_puts(&t, "  speed ");
    ocean_puti(&t, (int)(100 * env->v / EN_VMAX));
    ocean_puts(&t, env->crash_left ? "  CRASH\n" : "\n");
    enum { ROWS = 16, COLS = 13 };
    const float dz = (EN_FAR + EN_BACK) / ROWS;
    for (int r = 0; r < ROWS; r++) {
        float z_hi = EN_FAR - r * dz, z_lo = z_hi - dz;
        char line[COLS + 1];
        memset(line, ' ', COLS);
        line[0] = line[COLS - 1] = '|';
        for (int i = 0; i < env->n_cars; i++) {
            const EnduroCar *c = &env->cars[i];
            if (c->z >= z_lo && c->z < z_hi && c->z <= env->sight)
                line[(int)(1 + (EN_LANE_X[c->lane] + 1.0f) * 0.5f * (COLS - 2))] = 'o';
        }
        if (0 >= z_lo && 0 < z_hi) {
            int col = (int)(1 + (env->x + 1.0f) * 0.5f * (COLS - 2));
            line[col < 0 ? 0 : (col >= COLS ? COLS - 1 : col)] = 'A';
        }
        line[COLS] = '\0';
        ocean_puts(&t, line);
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Enduro *env) {}
