/* Drone: quadrotors in a 20 m cube. Each drone is a rigid body driven by four rotors, one Box action
 * element each; thrust is linear in the action and 0 means a quarter of the weight, so a policy that
 * outputs zeros hovers (until it drifts) and learning starts from a sensible place. Rotors sit at +x,
 * +y, -x and -y of the body; 0 and 2 spin one way and 1 and 3 the other, so their drag turns the body
 * about z. The drones of one env share the arena but not their episodes: each row resets on its own.
 *
 * task 1 (targets): fly through num_targets random points in turn; the reward is the progress towards
 * the current point (1 per metre) plus 1 for reaching it. task 0 (hover): reach a point near the
 * start and stay; the same progress reward plus 0.01 per step inside the radius. Leaving the cube
 * costs 1 and ends the episode. perf is the share of targets reached (task 1) or of steps spent at the
 * point (task 0). */
#include <math.h>
#include <stdlib.h>
#include "ocean.h"
#include "spec.h"

#define DR_DT 0.02f
#define DR_GRAVITY 9.81f
#define DR_MASS 1.0f
#define DR_ARM 0.12f      /* metres from the centre to each rotor */
#define DR_IXY 0.012f     /* moment of inertia about x and y (kg m^2) */
#define DR_IZ 0.02f       /* about z */
#define DR_YAW 0.02f      /* rotor drag torque per newton of thrust */
#define DR_DRAG 0.1f      /* linear drag, N per m/s */
#define DR_SPIN_DRAG 0.01f /* angular damping, N m per rad/s */
#define DR_MAX_SPEED 20.0f
#define DR_MAX_SPIN 30.0f
#define DR_HOVER (DR_MASS * DR_GRAVITY / 4.0f) /* thrust per rotor that holds the weight */
#define DR_SPAWN (0.8f * DR_ARENA)
#define DR_PROGRESS 1.0f  /* reward per metre of progress towards the target */
#define DR_HOLD 0.01f     /* reward per step inside the radius (task 0) */
#define DR_OBS 16

typedef struct DroneBody {
    float p[3], v[3], q[4], w[3]; /* position, velocity (world); attitude w x y z; body rates */
    float target[3];
    float dist; /* to the target, at the last step */
    float ret;
    int tick, reached, held;
} DroneBody;

typedef struct Drone {
    OCEAN_SLOTS(float);
    DroneConfig cfg; /* options (spec.toml) */
    DroneBody *drones;
} Drone;

/* Saved states (ocean.h): the memory c_init allocates. */
#define OCEAN_STATE_BLOCKS(X, env) X(drones, sizeof(DroneBody) * (size_t)(env)->num_agents)

static int c_init(Drone *env) {
    env->drones = (DroneBody *)calloc((size_t)env->num_agents, sizeof(DroneBody));
    if (!env->drones) return ocean_fail(env, "out of memory for the drones");
    return 0;
}

static void c_close(Drone *env) {
    free(env->drones);
    env->drones = NULL;
}

static float drone_uniform(Drone *env, float half) { return (2.0f * ocean_randf(&env->rng) - 1.0f) * half; }

static float drone_distance(const DroneBody *d) {
    float dx = d->p[0] - d->target[0], dy = d->p[1] - d->target[1], dz = d->p[2] - d->target[2];
    return sqrtf(dx * dx + dy * dy + dz * dz);
}

static void drone_new_target(Drone *env, DroneBody *d) {
    if (env->cfg.task == 0) {
        /* near the start, inside the spawn box */
        for (int k = 0; k < 3; k++) {
            float t = d->p[k] + drone_uniform(env, 3.0f);
            d->target[k] = t < -DR_SPAWN ? -DR_SPAWN : (t > DR_SPAWN ? DR_SPAWN : t);
        }
    } else {
        for (int k = 0; k < 3; k++) d->target[k] = drone_uniform(env, DR_SPAWN);
    }
    d->dist = drone_distance(d);
}

static void drone_spawn(Drone *env, DroneBody *d) {
    for (int k = 0; k < 3; k++) {
        d->p[k] = drone_uniform(env, DR_SPAWN);
        d->v[k] = 0.0f;
        d->w[k] = 0.0f;
    }
    d->q[0] = 1.0f;
    d->q[1] = d->q[2] = d->q[3] = 0.0f;
    d->ret = 0.0f;
    d->tick = d->reached = d->held = 0;
    drone_new_target(env, d);
}

static void drone_write_obs(Drone *env, int i) {
    const DroneBody *d = &env->drones[i];
    float *o = env->observations + (long)i * DR_OBS;
    for (int k = 0; k < 3; k++) {
        o[k] = (d->p[k] - d->target[k]) / DR_ARENA;
        o[3 + k] = d->p[k] / DR_ARENA;
        o[10 + k] = d->v[k] / DR_MAX_SPEED;
        o[13 + k] = d->w[k] / DR_MAX_SPIN;
    }
    /* a normalised quaternion's parts lie in [-1, 1]; the clamp only removes rounding past it */
    for (int k = 0; k < 4; k++) o[6 + k] = ocean_clampf(d->q[k], -1.0f, 1.0f);
}

static void c_reset(Drone *env) {
    for (int i = 0; i < env->num_agents; i++) {
        drone_spawn(env, &env->drones[i]);
        drone_write_obs(env, i);
    }
}

static float drone_clamp(float x, float limit) { return x < -limit ? -limit : (x > limit ? limit : x); }

/* One 20 ms step of rigid-body flight (semi-implicit Euler) under the four rotor thrusts. */
static void drone_fly(DroneBody *d, const float thrust[4]) {
    float total = thrust[0] + thrust[1] + thrust[2] + thrust[3];
    float qw = d->q[0], qx = d->q[1], qy = d->q[2], qz = d->q[3];
    /* the body's z axis in the world: where the rotors push */
    float up[3] = {2.0f * (qx * qz + qw * qy), 2.0f * (qy * qz - qw * qx), 1.0f - 2.0f * (qx * qx + qy * qy)};
    for (int k = 0; k < 3; k++) {
        float acc = (total * up[k] - DR_DRAG * d->v[k]) / DR_MASS - (k == 2 ? DR_GRAVITY : 0.0f);
        d->v[k] = drone_clamp(d->v[k] + acc * DR_DT, DR_MAX_SPEED);
        d->p[k] += d->v[k] * DR_DT;
    }
    float tau[3] = {DR_ARM * (thrust[1] - thrust[3]), DR_ARM * (thrust[2] - thrust[0]),
                    DR_YAW * (thrust[0] - thrust[1] + thrust[2] - thrust[3])};
    float wx = d->w[0], wy = d->w[1], wz = d->w[2];
    /* Euler's equations: the gyroscopic term w x Iw couples the axes */
    float dwx = (tau[0] - DR_SPIN_DRAG * wx - (DR_IZ - DR_IXY) * wy * wz) / DR_IXY;
    float dwy = (tau[1] - DR_SPIN_DRAG * wy - (DR_IXY - DR_IZ) * wz * wx) / DR_IXY;
    float dwz = (tau[2] - DR_SPIN_DRAG * wz) / DR_IZ;
    d->w[0] = drone_clamp(wx + dwx * DR_DT, DR_MAX_SPIN);
    d->w[1] = drone_clamp(wy + dwy * DR_DT, DR_MAX_SPIN);
    d->w[2] = drone_clamp(wz + dwz * DR_DT, DR_MAX_SPIN);
    wx = d->w[0], wy = d->w[1], wz = d->w[2];
    /* q' = q (x) (0, w) / 2, then back onto the unit sphere */
    float nw = qw + 0.5f * DR_DT * (-qx * wx - qy * wy - qz * wz);
    float nx = qx + 0.5f * DR_DT * (qw * wx + qy * wz - qz * wy);
    float ny = qy + 0.5f * DR_DT * (qw * wy - qx * wz + qz * wx);
    float nz = qz + 0.5f * DR_DT * (qw * wz + qx * wy - qy * wx);
    float norm = 1.0f / sqrtf(nw * nw + nx * nx + ny * ny + nz * nz);
    d->q[0] = nw * norm;
    d->q[1] = nx * norm;
    d->q[2] = ny * norm;
    d->q[3] = nz * norm;
}

static void drone_end(Drone *env, DroneBody *d, int i, int terminal) {
    float perf = env->cfg.task == 0 ? (float)d->held / (float)d->tick : (float)d->reached / env->cfg.num_targets;
    float score = env->cfg.task == 0 ? (float)d->held : (float)d->reached;
    ocean_log_episode(&env->log, d->ret, (float)d->tick, score, perf);
    env->terminals[i] = (unsigned char)terminal;
    env->truncations[i] = (unsigned char)!terminal;
    drone_spawn(env, d);
}

static void c_step(Drone *env) {
    float radius = env->cfg.target_radius;
    for (int i = 0; i < env->num_agents; i++) {
        DroneBody *d = &env->drones[i];
        float thrust[4];
        for (int r = 0; r < 4; r++) thrust[r] = DR_HOVER * (1.0f + ocean_cont_action(env, 4 * i + r));
        drone_fly(d, thrust);
        d->tick++;
        env->terminals[i] = 0;
        env->truncations[i] = 0;
        float reward;
        int out = 0;
        for (int k = 0; k < 3; k++) out |= d->p[k] < -DR_ARENA || d->p[k] > DR_ARENA;
        if (out) {
            reward = -1.0f;
        } else {
            float dist = drone_distance(d);
            reward = DR_PROGRESS * (d->dist - dist);
            d->dist = dist;
            if (dist < radius) {
                if (env->cfg.task == 0) {
                    reward += DR_HOLD;
                    d->held++;
                } else {
                    reward += 1.0f;
                    d->reached++;
                    if (d->reached < env->cfg.num_targets) drone_new_target(env, d);
                }
            }
        }
        d->ret += reward;
        env->rewards[i] = reward;
        if (out || (env->cfg.task == 1 && d->reached >= env->cfg.num_targets)) drone_end(env, d, i, 1);
        else if (d->tick >= env->cfg.max_steps) drone_end(env, d, i, 0);
        drone_write_obs(env, i);
    }
}

/* ---- rendering: a top view (x, y) beside a side view (x, z) ---- */

#define DR_VIEW 160
static void c_frame_shape(Drone *env, int *h, int *w) {
    (void)env;
    *h = DR_VIEW;
    *w = 2 * DR_VIEW + 8;
}

static int drone_px(float x) { return (int)((x / DR_ARENA + 1.0f) * 0.5f * (DR_VIEW - 1)); }

static void c_render_rgb(Drone *env, unsigned char *frame) {
    static const unsigned char wall[3] = {60, 60, 70}, floor_[3] = {20, 24, 32}, target[3] = {230, 60, 60};
    static const unsigned char colours[4][3] = {{80, 200, 255}, {120, 240, 120}, {250, 210, 80}, {220, 120, 250}};
    int fw = 2 * DR_VIEW + 8;
    ocean_fill_rect(frame, DR_VIEW, fw, DR_VIEW, 0, 8, DR_VIEW, wall);
    for (int view = 0; view < 2; view++) {
        int x0 = view * (DR_VIEW + 8);
        ocean_fill_rect(frame, DR_VIEW, fw, x0, 0, DR_VIEW, DR_VIEW, floor_);
        for (int i = 0; i < env->num_agents; i++) {
            const DroneBody *d = &env->drones[i];
            int v = view ? 2 : 1; /* the second axis of this view; screen y grows downwards */
            ocean_fill_rect(frame, DR_VIEW, fw, x0 + drone_px(d->target[0]) - 2,
                            DR_VIEW - 1 - drone_px(d->target[v]) - 2, 5, 5, target);
            ocean_fill_rect(frame, DR_VIEW, fw, x0 + drone_px(d->p[0]) - 3, DR_VIEW - 1 - drone_px(d->p[v]) - 1, 7, 3,
                            colours[i % 4]);
        }
    }
}

static int c_render_text(Drone *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { ROWS = 21, COLS = 41 };
    char grid[ROWS][COLS];
    memset(grid, '.', sizeof grid);
    for (int i = 0; i < env->num_agents; i++) {
        const DroneBody *d = &env->drones[i];
        int tc = (int)((d->target[0] / DR_ARENA + 1.0f) * 0.5f * (COLS - 1));
        int tr = ROWS - 1 - (int)((d->target[1] / DR_ARENA + 1.0f) * 0.5f * (ROWS - 1));
        int dc = (int)((d->p[0] / DR_ARENA + 1.0f) * 0.5f * (COLS - 1));
        int dr = ROWS - 1 - (int)((d->p[1] / DR_ARENA + 1.0f) * 0.5f * (ROWS - 1));
        if (tr >= 0 && tr < ROWS && tc >= 0 && tc < COLS) grid[tr][tc] = 'x';
        if (dr >= 0 && dr < ROWS && dc >= 0 && dc < COLS) grid[dr][dc] = (char)('0' + i % 10);
    }
    ocean_puts(&t, "top view: digits are drones, x their targets\n");
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++) ocean_putc(&t, grid[r][c]);
        ocean_putc(&t, '\n');
    }
    for (int i = 0; i < env->num_agents && i < 8; i++) {
        const DroneBody *d = &env->drones[i];
        ocean_puts(&t, "drone ");
        ocean_puti(&t, i);
        ocean_puts(&t, "  height dm ");
        ocean_puti(&t, (long)(d->p[2] * 10.0f));
        ocean_puts(&t, "  distance dm ");
        ocean_puti(&t, (long)(d->dist * 10.0f));
        ocean_puts(&t, env->cfg.task == 0 ? "  steps held " : "  targets ");
        ocean_puti(&t, env->cfg.task == 0 ? d->held : d->reached);
        ocean_putc(&t, '\n');
    }
    return t.len;
}
