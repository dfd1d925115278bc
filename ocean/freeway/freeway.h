/* Freeway: Atari's chicken crossing. A chicken starts on the bottom curb of a ten-lane road and
 * crosses it as often as it can before `game_frames` frames run out (then the game ends: terminal).
 * The five lower lanes drive right, the five upper ones left, each at its own speed, with
 * `cars_per_lane` evenly spaced cars. A car that touches the chicken pushes it back down one lane over
 * FW_STUN frames, during which it does not respond (hit_resets: back to the curb instead). Reaching
 * the top curb scores a crossing and puts the chicken back on the bottom curb. With two_chickens, a
 * second chicken (row 1) crosses in its own column on the same road, as in Atari's two-player game.
 *
 * Actions: 0 nothing, 1 up, 2 down. Reward: +1 per crossing, lane_reward for every lane reached for
 * the first time in the crossing, -hit_penalty per hit. Log (per chicken): score = crossings,
 * perf = crossings / the crossings of a chicken that never waits and is never hit (capped at 1).
 *
 * Geometry in sixteenths of a pixel, integers only: the road is 160 px wide and 10 lanes of 16 px
 * high. Cars move at a constant speed, so a lane's cars are one phase (how far the lane has moved,
 * modulo the width) plus fixed offsets; a step updates ten phases per frame and tests only the lanes
 * the chicken overlaps. */
#include "ocean.h"
#include "spec.h"  /* generated from spec.toml: FreewayConfig, FW_LANES, FW_MAX_CARS */

#define FW_SUB 16                       /* sub-pixel units per pixel */
#define FW_W (160 * FW_SUB)             /* road width */
#define FW_LANE_H (16 * FW_SUB)
#define FW_ROAD_H (FW_LANES * FW_LANE_H)
#define FW_CHICK_HALF (4 * FW_SUB)      /* the chicken is 8 x 8 px */
#define FW_CAR_HALF_W (8 * FW_SUB)      /* cars are 16 x 10 px, centred in their lane */
#define FW_CAR_LO (3 * FW_SUB)          /* a car's vertical extent inside its lane */
#define FW_CAR_HI (13 * FW_SUB)
#define FW_REACH (FW_CHICK_HALF + FW_CAR_HALF_W) /* centre distance below which they touch */
#define FW_Y_START (-6 * FW_SUB)        /* chicken centre on the bottom curb */
#define FW_Y_END (FW_ROAD_H + 6 * FW_SUB) /* ... and across */
#define FW_CHICK_SPEED FW_SUB           /* 1 px per frame */
#define FW_STUN 16                      /* frames of being pushed back: one lane */
#define FW_OBS (4 + FW_LANES * FW_MAX_CARS)
#define FW_ACTIONS 3
#define FW_SCRIPT_LOOK 12               /* frames of warning the scripted chicken wants */
#define FW_HORIZON 64.0f                /* frames: arrivals later than this read as 1 */

enum { FW_NOOP, FW_UP, FW_DOWN };

/* Sub-pixels per frame, bottom lane first, before the speed option; the middle lanes are fastest. */
static const int FW_LANE_SPEED[FW_LANES] = {8, 12, 16, 22, 28, 28, 22, 16, 12, 8};
static const int FW_CHICK_X[2] = {44 * FW_SUB, 108 * FW_SUB};

typedef struct FreewayChicken {
    int y, best, stun, score, hits;
    float ret;
} FreewayChicken;

typedef struct Freeway {
    OCEAN_SLOTS(float);
    FreewayConfig cfg;
    int speed[FW_LANES];                /* signed: + drives right */
    float inv_speed[FW_LANES];          /* frames per sub-pixel */
    int spacing;                        /* between the cars of a lane */
    float inv_game_frames, inv_max_crossings;
    int offset[FW_LANES];               /* where the lane's first car was at frame 0 */
    int phase[FW_LANES];                /* how far the lane has moved, in [0, FW_W) */
    FreewayChicken chick[2];
    int frame, tick;
} Freeway;

static int c_init(Freeway *env) {
    for (int l = 0; l < FW_LANES; l++) {
        int v = (int)(FW_LANE_SPEED[l] * env->cfg.speed + 0.5f);
        v = v < 1 ? 1 : v;
        env->speed[l] = l < FW_LANES / 2 ? v : -v;
        env->inv_speed[l] = 1.0f / (float)v;
    }
    env->spacing = FW_W / env->cfg.cars_per_lane;
    env->inv_game_frames = 1.0f / (float)env->cfg.game_frames;
    /* a crossing without waiting takes (FW_Y_END - FW_Y_START) / FW_CHICK_SPEED frames */
    float best = (float)env->cfg.game_frames * FW_CHICK_SPEED / (float)(FW_Y_END - FW_Y_START);
    env->inv_max_crossings = 1.0f / (best < 1.0f ? 1.0f : best);
    return 0; /* fixed-size state: nothing to allocate */
}

static inline int fw_wrap(int x) { /* into [0, FW_W); a constant divisor compiles to a multiply */
    x %= FW_W;
    return x < 0 ? x + FW_W : x;
}

/* How far car k of lane l still drives before it has passed the column at x: it touches the chicken
 * while this is in (0, 2 FW_REACH). */
static inline int fw_distance(const Freeway *env, int l, int k, int x) {
    int car = env->offset[l] + k * env->spacing;
    if (env->speed[l] > 0) return fw_wrap(x + FW_REACH - car - env->phase[l]);
    return fw_wrap(car - env->phase[l] - x + FW_REACH);
}

static inline int fw_lane_overlaps(int l, int y) {
    int lo = l * FW_LANE_H + FW_CAR_LO, hi = l * FW_LANE_H + FW_CAR_HI;
    return y - FW_CHICK_HALF < hi && y + FW_CHICK_HALF > lo;
}

static int fw_hit(const Freeway *env, int y, int x) {
    int first = (y - FW_CHICK_HALF) / FW_LANE_H, last = (y + FW_CHICK_HALF) / FW_LANE_H;
    if (y - FW_CHICK_HALF < 0) first = 0;
    if (last >= FW_LANES) last = FW_LANES - 1;
    for (int l = first; l <= last; l++) {
        if (!fw_lane_overlaps(l, y)) continue;
        for (int k = 0; k < env->cfg.cars_per_lane; k++) {
            int d = fw_distance(env, l, k, x);
            if (d > 0 && d < 2 * FW_REACH) return 1;
        }
    }
    return 0;
}

/* The lane of the chicken's lower edge (-1 on the start curb): the first of its view's ten lanes. */
static inline int fw_view_base(int y) {
    int low = y - FW_CHICK_HALF;
    return low < 0 ? -1 : low / FW_LANE_H;
}

static void fw_write_obs(Freeway *env) {
    for (int r = 0; r < env->num_agents; r++) {
        const FreewayChicken *c = &env->chick[r];
        float *o = env->observations + r * FW_OBS;
        o[0] = (float)(c->y - FW_Y_START) * (1.0f / (float)(FW_Y_END - FW_Y_START));
        o[1] = (float)c->best * (1.0f / FW_LANES);
        o[2] = (float)c->stun * (1.0f / FW_STUN);
        o[3] = (float)(env->cfg.game_frames - env->frame) * env->inv_game_frames;
        float *cars = o + 4;
        int base = fw_view_base(c->y);
        for (int j = 0; j < FW_LANES; j++) {
            int l = base + j;
            float *slot = cars + j * FW_MAX_CARS;
            if (l < 0 || l >= FW_LANES) {
                for (int k = 0; k < FW_MAX_CARS; k++) slot[k] = 1.0f;
                continue;
            }
            for (int k = 0; k < env->cfg.cars_per_lane; k++) {
                float frames = (float)(fw_distance(env, l, k, FW_CHICK_X[r]) - 2 * FW_REACH) * env->inv_speed[l];
                slot[k] = frames <= 0.0f ? 0.0f : (frames >= FW_HORIZON ? 1.0f : frames * (1.0f / FW_HORIZON));
            }
            for (int k = env->cfg.cars_per_lane; k < FW_MAX_CARS; k++) slot[k] = 1.0f;
        }
    }
}

static void fw_new_game(Freeway *env) {
    for (int l = 0; l < FW_LANES; l++) {
        env->offset[l] = ocean_randint(&env->rng, FW_W);
        env->phase[l] = 0;
    }
    for (int r = 0; r < 2; r++) env->chick[r] = (FreewayChicken){FW_Y_START, 0, 0, 0, 0, 0.0f};
    env->frame = 0;
    env->tick = 0;
    fw_write_obs(env);
}

static void c_reset(Freeway *env) { fw_new_game(env); }

/* The scripted chicken: walk up unless a car in the lane just ahead would reach its column within
 * FW_SCRIPT_LOOK frames; it does not look at the lane it stands in, so it is hit now and then. */
static int fw_scripted_action(const Freeway *env, int r) {
    const FreewayChicken *c = &env->chick[r];
    int ahead = (c->y + FW_CHICK_HALF + FW_SUB) / FW_LANE_H;
    if (c->y + FW_CHICK_HALF + FW_SUB < 0) ahead = 0;
    if (ahead >= FW_LANES) return FW_UP;
    int v = env->speed[ahead] < 0 ? -env->speed[ahead] : env->speed[ahead];
    for (int k = 0; k < env->cfg.cars_per_lane; k++) {
        int d = fw_distance(env, ahead, k, FW_CHICK_X[r]);
        if (d > 0 && d < 2 * FW_REACH + v * FW_SCRIPT_LOOK) return FW_NOOP;
    }
    return FW_UP;
}

/* One frame of one chicken; returns the reward it earned. */
static float fw_chicken_frame(Freeway *env, int r, int action) {
    FreewayChicken *c = &env->chick[r];
    float reward = 0.0f;
    if (c->stun > 0) {
        c->stun--;
        c->y -= FW_LANE_H / FW_STUN;
        if (c->y < FW_Y_START) c->y = FW_Y_START;
        return 0.0f;
    }
    if (action == FW_UP) c->y += FW_CHICK_SPEED;
    if (action == FW_DOWN && c->y > FW_Y_START) c->y -= FW_CHICK_SPEED;
    if (fw_hit(env, c->y, FW_CHICK_X[r])) {
        c->hits++;
        reward -= env->cfg.hit_penalty;
        if (env->cfg.hit_resets) c->y = FW_Y_START;
        else c->stun = FW_STUN;
        return reward;
    }
    /* a lane counts as reached once the chicken's centre is above its middle */
    while (c->best < FW_LANES && c->y >= c->best * FW_LANE_H + FW_LANE_H / 2) {
        c->best++;
        reward += env->cfg.lane_reward;
    }
    if (c->y >= FW_Y_END) {
        c->score++;
        reward += 1.0f;
        c->y = FW_Y_START;
        c->best = 0;
    }
    return reward;
}

static void c_step(Freeway *env) {
    int n = env->num_agents;
    int action[2];
    for (int r = 0; r < n; r++) {
        action[r] = env->cfg.autopilot ? fw_scripted_action(env, r) : ocean_clamp(env->actions[r], FW_ACTIONS);
        env->rewards[r] = 0.0f;
    }
    int frames = env->cfg.frameskip, left = env->cfg.game_frames - env->frame;
    if (frames > left) frames = left;
    for (int f = 0; f < frames; f++) {
        for (int l = 0; l < FW_LANES; l++) {
            int p = env->phase[l] + (env->speed[l] > 0 ? env->speed[l] : -env->speed[l]);
            env->phase[l] = p >= FW_W ? p - FW_W : p;
        }
        for (int r = 0; r < n; r++) env->rewards[r] += fw_chicken_frame(env, r, action[r]);
    }
    env->frame += frames;
    env->tick++;
    int over = env->frame >= env->cfg.game_frames;
    for (int r = 0; r < n; r++) {
        env->chick[r].ret += env->rewards[r];
        env->terminals[r] = (unsigned char)over;
        env->truncations[r] = 0;
    }
    if (over) {
        for (int r = 0; r < n; r++) {
            const FreewayChicken *c = &env->chick[r];
            float perf = (float)c->score * env->inv_max_crossings;
            ocean_log_episode(&env->log, c->ret, (float)env->tick, (float)c->score, perf > 1.0f ? 1.0f : perf);
        }
        fw_new_game(env);
        return;
    }
    fw_write_obs(env);
}

/* ---- rendering: 160 x 192 px, the road between two 16 px curbs ---- */
#define FW_FRAME_H (FW_LANES * 16 + 32)
#define FW_FRAME_W 160

static void c_frame_shape(Freeway *env, int *h, int *w) {
    (void)env;
    *h = FW_FRAME_H;
    *w = FW_FRAME_W;
}

static inline int fw_screen_y(int y) { return FW_FRAME_H - 16 - y / FW_SUB; } /* sub-pixel height -> row */

static void c_render_rgb(Freeway *env, unsigned char *frame) {
    static const unsigned char curb[3] = {170, 170, 170}, road[3] = {60, 60, 60}, line[3] = {220, 200, 60};
    static const unsigned char chicken[2][3] = {{250, 240, 70}, {120, 230, 250}};
    static const unsigned char car[5][3] = {
        {220, 60, 50}, {60, 120, 220}, {240, 150, 40}, {160, 80, 200}, {80, 200, 90}};
    ocean_fill_rect(frame, FW_FRAME_H, FW_FRAME_W, 0, 0, FW_FRAME_W, FW_FRAME_H, curb);
    ocean_fill_rect(frame, FW_FRAME_H, FW_FRAME_W, 0, 16, FW_FRAME_W, FW_LANES * 16, road);
    for (int l = 1; l < FW_LANES; l++)
        for (int x = l == FW_LANES / 2 ? 0 : 4; x < FW_FRAME_W; x += l == FW_LANES / 2 ? 1 : 16)
            ocean_fill_rect(frame, FW_FRAME_H, FW_FRAME_W, x, 16 + l * 16, l == FW_LANES / 2 ? 1 : 8, 1, line);
    for (int l = 0; l < FW_LANES; l++)
        for (int k = 0; k < env->cfg.cars_per_lane; k++) {
            int car_x = fw_wrap(env->offset[l] + k * env->spacing + (env->speed[l] > 0 ? 1 : -1) * env->phase[l]);
            int left = car_x / FW_SUB - 8, top = fw_screen_y(l * FW_LANE_H + FW_CAR_HI);
            for (int shift = -FW_FRAME_W; shift <= FW_FRAME_W; shift += FW_FRAME_W) /* wrap at the edges */
                ocean_fill_rect(frame, FW_FRAME_H, FW_FRAME_W, left + shift, top, 16, 10, car[l % 5]);
        }
    for (int r = 0; r < env->num_agents; r++) {
        int top = fw_screen_y(env->chick[r].y + FW_CHICK_HALF);
        ocean_fill_rect(frame, FW_FRAME_H, FW_FRAME_W, FW_CHICK_X[r] / FW_SUB - 4, top, 8, 8, chicken[r]);
    }
}

/* One text row per lane (top lane first) between the curbs, one column per 4 px. */
static int c_render_text(Freeway *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { COLS = FW_FRAME_W / 4 };
    ocean_puts(&t, "score ");
    for (int r = 0; r < env->num_agents; r++) {
        if (r) ocean_puts(&t, " / ");
        ocean_puti(&t, env->chick[r].score);
    }
    ocean_puts(&t, "  time ");
    ocean_puti(&t, (env->cfg.game_frames - env->frame) / 60);
    ocean_puts(&t, " s\n");
    for (int row = FW_LANES + 1; row >= 0; row--) { /* row 0: bottom curb, 1..10: lanes, 11: top curb */
        char line[COLS + 1];
        memset(line, row == 0 || row == FW_LANES + 1 ? '=' : ' ', COLS);
        line[COLS] = 0;
        int l = row - 1;
        if (l >= 0 && l < FW_LANES)
            for (int k = 0; k < env->cfg.cars_per_lane; k++) {
                int car_x = fw_wrap(env->offset[l] + k * env->spacing + (env->speed[l] > 0 ? 1 : -1) * env->phase[l]);
                for (int dx = -2; dx < 2; dx++) {
                    int col = (car_x / FW_SUB / 4 + dx + COLS) % COLS;
                    line[col] = env->speed[l] > 0 ? '>' : '<';
                }
            }
        for (int r = 0; r < env->num_agents; r++) {
            int y = env->chick[r].y, lane_row = y < 0 ? 0 : (y >= FW_ROAD_H ? FW_LANES + 1 : 1 + y / FW_LANE_H);
            if (lane_row == row) line[FW_CHICK_X[r] / FW_SUB / 4] = r ? 'D' : 'C';
        }
        ocean_puts(&t, line);
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Freeway *env) { (void)env; }
