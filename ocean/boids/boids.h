/* Boids: flocking on a torus. Every boid is an agent row that steers with a Box action (an acceleration);
 * speed stays within [min_speed, max_speed], and the world wraps around, so a boid is never cornered and
 * every neighbourhood looks alike. A boid sees and flocks with its `neighbors` nearest neighbours (the
 * topological rule that starling flocks follow), and is rewarded by the classic three rules of Reynolds'
 * boids, as penalties over those neighbours that are in sight:
 *   cohesion   distance from their centre, over visual_range
 *   alignment  difference from their mean velocity, over 2 max_speed
 *   separation 1 - d / protected_range for the nearest one, when it is inside protected_range
 * A boid with no neighbour in sight pays the whole alignment weight and, for cohesion, its distance to the
 * nearest boid over visual_range (at least 1, at most 3), so scattering is never a way out and the way back
 * always shows in the reward. Episodes are the instance's: every boid's ends at max_steps (a truncation) and the flock is
 * scattered again. perf is the share of steps a boid spends in a flock: a neighbour in sight and none
 * crowding it. autopilot flies Reynolds' steering rules on the same neighbours (the scripted baseline). */
#include <math.h>
#include <stdlib.h>
#include "spec.h"
#include "ocean.h"

#define BO_FAR 3.0f /* neighbour offsets are observed over visual_range, shortened to this */
#define BO_OBS(k) (6 + 4 * (k))
#define BO_ALIGNED 0.25f /* alignment penalty below which a boid flies with its flock (perf) */
/* the autopilot's gains: cohesion per visual_range of offset, alignment per max_speed of difference,
 * separation per unit of intrusion into protected_range */
#define BO_PILOT_COHESION 1.0f
#define BO_PILOT_ALIGNMENT 4.0f
#define BO_PILOT_SEPARATION 4.0f
#define BO_PILOT_SPACE 1.5f

/* One boid's nearest neighbours after the last move: indices and offsets, nearest first. */
typedef struct BoidView {
    int idx[BO_MAX_NEIGHBORS];
    float dx[BO_MAX_NEIGHBORS], dy[BO_MAX_NEIGHBORS], d2[BO_MAX_NEIGHBORS];
} BoidView;

typedef struct Boids {
    OCEAN_SLOTS(float);
    BoidsConfig cfg; /* options (spec.toml) */
    /* One allocation holds everything below (a game's memory in one place: a bench steps thousands of
     * games, and a step's cost is mostly bringing its game into the cache). Positions and velocities are
     * separate arrays, so that the distances from one boid to all the others are a loop that vectorizes. */
    BoidView *views; /* the start of the allocation */
    float *x, *y, *vx, *vy;
    float *ret;    /* each boid's return this episode */
    int *flocking; /* each boid's steps in a flock this episode */
    float *d2;     /* scratch: one boid's squared distances to every boid */
    int *near;     /* scratch: the boids inside its cutoff */
    int tick;
} Boids;

/* n views, then 8 arrays of n 4-byte values (every member of a view is 4 bytes too, so all stay aligned) */
#define BO_BYTES(n) ((sizeof(BoidView) + 8 * sizeof(float)) * (size_t)(n))

/* Saved states (ocean.h): the one allocation; the other pointers point into it. The views are recomputed
 * by every step, but the autopilot reads them before it moves, so they are state like the rest. */
#define OCEAN_STATE_BLOCKS(X, env)        \
    X(views, BO_BYTES((env)->num_agents)) \
    X(x, 0)                               \
    X(y, 0)                               \
    X(vx, 0)                              \
    X(vy, 0)                              \
    X(ret, 0)                             \
    X(flocking, 0)                        \
    X(d2, 0)                              \
    X(near, 0)

static int c_init(Boids *env) {
    size_t n = (size_t)env->num_agents;
    env->views = (BoidView *)calloc(1, BO_BYTES(n));
    if (!env->views) return ocean_fail(env, "out of memory for the boids");
    float *f = (float *)(env->views + n);
    env->x = f;
    env->y = f + n;
    env->vx = f + 2 * n;
    env->vy = f + 3 * n;
    env->ret = f + 4 * n;
    env->d2 = f + 5 * n;
    env->flocking = (int *)(f + 6 * n);
    env->near = env->flocking + n;
    return 0;
}

static void c_close(Boids *env) {
    free(env->views);
    env->views = NULL;
    env->x = env->y = env->vx = env->vy = env->ret = env->d2 = NULL;
    env->flocking = env->near = NULL;
}

static inline float boids_wrap_position(float p, float size) {
    if (p < 0.0f) p += size;
    if (p >= size) p -= size; /* also catches p + size rounding up to size */
    return p;
}

/* Every boid's k nearest neighbours. The squared distances from one boid to all the others are one
 * vectorized pass (the shortest way round the torus by arithmetic, not ?:, which gcc leaves as branches in
 * float code). Then, unless `full`, only the boids within a cutoff are sorted: no two boids' distance
 * changes by more than 2 max_speed in a step, so the boid's k nearest of the last step are all within its
 * last k-th distance plus that, and so are its k nearest now. The cutoff (with a margin for rounding) thus
 * never changes the answer, and the pass that collects the few boids inside it has no branch to mispredict.
 * `full` (after a scatter, when the last step's neighbours mean nothing) sorts them all. Ties keep the lower
 * index first. */
static void boids_look(Boids *env, int full) {
    int n = env->num_agents, k = env->cfg.neighbors;
    float size = env->cfg.world_size, half = 0.5f * size, reach = 2.0f * env->cfg.max_speed * 1.001f + 1e-4f;
    float *restrict d2 = env->d2;
    int *restrict near = env->near;
    const float *restrict x = env->x, *restrict y = env->y;
    for (int i = 0; i < n; i++) {
        float xi = x[i], yi = y[i];
        for (int j = 0; j < n; j++) {
            float ox = x[j] - xi, oy = y[j] - yi;
            ox -= size * (float)((ox > half) - (ox < -half));
            oy -= size * (float)((oy > half) - (oy < -half));
            d2[j] = ox * ox + oy * oy;
        }
        d2[i] = 3.0e38f; /* never its own neighbour */
        BoidView *v = &env->views[i];
        int count = 0;
        if (!full) {
            /* (d + reach)^2 <= 2 (d^2 + reach^2): a slightly wider cutoff without a square root */
            float cut = 2.0f * (v->d2[k - 1] + reach * reach);
            for (int j = 0; j < n; j++) {
                near[count] = j;
                count += d2[j] <= cut;
            }
        }
        if (count < k) { /* a full look, or rounding beyond the margin: every boid is a candidate */
            for (int j = 0; j < n; j++) near[j] = j;
            count = n;
        }
        int m = 0;
        for (int c = 0; c < count; c++) {
            int j = near[c];
            float dj = d2[j];
            if (m == k && dj >= v->d2[k - 1]) continue;
            int at = m < k ? m++ : k - 1;
            while (at > 0 && v->d2[at - 1] > dj) {
                v->idx[at] = v->idx[at - 1];
                v->d2[at] = v->d2[at - 1];
                at--;
            }
            v->idx[at] = j;
            v->d2[at] = dj;
        }
        /* the offsets of the chosen few, computed as the pass above computed them */
        for (int q = 0; q < k; q++) {
            float ox = x[v->idx[q]] - xi, oy = y[v->idx[q]] - yi;
            ox -= size * (float)((ox > half) - (ox < -half));
            oy -= size * (float)((oy > half) - (oy < -half));
            v->dx[q] = ox;
            v->dy[q] = oy;
        }
    }
}

/* What boid i's neighbours in sight say: their count, the offset of their centre and their mean velocity
 * minus the boid's. */
typedef struct BoidSight {
    int seen;
    float cx, cy, ex, ey;
} BoidSight;

static BoidSight boids_sight(const Boids *env, int i) {
    const BoidView *v = &env->views[i];
    float range2 = env->cfg.visual_range * env->cfg.visual_range;
    BoidSight s = {0, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int q = 0; q < env->cfg.neighbors && v->d2[q] < range2; q++) {
        s.cx += v->dx[q];
        s.cy += v->dy[q];
        s.ex += env->vx[v->idx[q]];
        s.ey += env->vy[v->idx[q]];
        s.seen++;
    }
    if (s.seen) {
        float inv = 1.0f / (float)s.seen;
        s.cx *= inv;
        s.cy *= inv;
        s.ex = s.ex * inv - env->vx[i];
        s.ey = s.ey * inv - env->vy[i];
    }
    return s;
}

static void boids_write_obs(Boids *env, int i) {
    const BoidView *v = &env->views[i];
    float *o = env->observations + (long)i * BO_OBS(env->cfg.neighbors);
    float inv_speed = 1.0f / env->cfg.max_speed, inv_rel = 0.5f * inv_speed, inv_range = 1.0f / env->cfg.visual_range;
    float far2 = BO_FAR * BO_FAR * env->cfg.visual_range * env->cfg.visual_range;
    float vxi = env->vx[i], vyi = env->vy[i];
    o[0] = ocean_clampf(vxi * inv_speed, -1.0f, 1.0f);
    o[1] = ocean_clampf(vyi * inv_speed, -1.0f, 1.0f);
    /* the flock in sight as the rules see it: where its centre is and how its velocity differs */
    BoidSight flock = boids_sight(env, i);
    o[2] = ocean_clampf(flock.cx * inv_range, -1.0f, 1.0f);
    o[3] = ocean_clampf(flock.cy * inv_range, -1.0f, 1.0f);
    o[4] = ocean_clampf(flock.ex * inv_rel, -1.0f, 1.0f);
    o[5] = ocean_clampf(flock.ey * inv_rel, -1.0f, 1.0f);
    for (int q = 0; q < env->cfg.neighbors; q++) {
        int j = v->idx[q];
        float scale = v->d2[q] > far2 ? BO_FAR / sqrtf(v->d2[q]) : inv_range;
        float *p = o + 6 + 4 * q;
        p[0] = ocean_clampf(v->dx[q] * scale, -BO_FAR, BO_FAR);
        p[1] = ocean_clampf(v->dy[q] * scale, -BO_FAR, BO_FAR);
        p[2] = ocean_clampf((env->vx[j] - vxi) * inv_rel, -1.0f, 1.0f);
        p[3] = ocean_clampf((env->vy[j] - vyi) * inv_rel, -1.0f, 1.0f);
    }
}

static void boids_scatter(Boids *env) {
    float size = env->cfg.world_size, lo = env->cfg.min_speed, hi = env->cfg.max_speed;
    for (int i = 0; i < env->num_agents; i++) {
        /* separate statements: C leaves the order of a call's arguments open, and the draws must come in one
         * order on every compiler (docs/web.md) */
        env->x[i] = size * ocean_randf(&env->rng);
        env->y[i] = size * ocean_randf(&env->rng);
        float angle = 6.2831853f * ocean_randf(&env->rng);
        float speed = lo + (hi - lo) * ocean_randf(&env->rng);
        env->vx[i] = speed * cosf(angle);
        env->vy[i] = speed * sinf(angle);
        env->ret[i] = 0.0f;
        env->flocking[i] = 0;
    }
    env->tick = 0;
    boids_look(env, 1);
    for (int i = 0; i < env->num_agents; i++) boids_write_obs(env, i);
}

static void c_reset(Boids *env) { boids_scatter(env); }

/* Reynolds' steering on the observed neighbours: towards their centre and their mean velocity, away from
 * those inside protected_range; with none in sight, towards the nearest. An action in [-1, 1] per axis. */
static void boids_autopilot(const Boids *env, int i, float *ax, float *ay) {
    const BoidView *v = &env->views[i];
    BoidSight s = boids_sight(env, i);
    float gx, gy;
    if (s.seen == 0) {
        float d = sqrtf(v->d2[0]) + 1e-6f;
        gx = v->dx[0] / d;
        gy = v->dy[0] / d;
    } else {
        /* keep clear of a wider zone than the one penalised, so the balance of the pulls sits outside it */
        float range = env->cfg.visual_range, guard = BO_PILOT_SPACE * env->cfg.protected_range;
        float speed = env->cfg.max_speed;
        float sx = 0.0f, sy = 0.0f;
        for (int q = 0; q < s.seen; q++) {
            float d = sqrtf(v->d2[q]);
            if (d >= guard) break; /* nearest first: the rest are farther */
            float push = (guard - d) / (guard * (d > 1e-6f ? d : 1e-6f));
            sx -= v->dx[q] * push;
            sy -= v->dy[q] * push;
        }
        gx = BO_PILOT_COHESION * s.cx / range + BO_PILOT_ALIGNMENT * s.ex / speed + BO_PILOT_SEPARATION * sx;
        gy = BO_PILOT_COHESION * s.cy / range + BO_PILOT_ALIGNMENT * s.ey / speed + BO_PILOT_SEPARATION * sy;
    }
    *ax = ocean_clampf(gx, -1.0f, 1.0f);
    *ay = ocean_clampf(gy, -1.0f, 1.0f);
}

static void boids_fly(Boids *env, int i, float ax, float ay) {
    float lo = env->cfg.min_speed, hi = env->cfg.max_speed, size = env->cfg.world_size;
    float vx = env->vx[i] + ax * env->cfg.max_accel, vy = env->vy[i] + ay * env->cfg.max_accel;
    float speed2 = vx * vx + vy * vy;
    if (speed2 > hi * hi) {
        float s = hi / sqrtf(speed2);
        vx *= s;
        vy *= s;
    } else if (speed2 < lo * lo) {
        if (speed2 > 1e-12f) {
            float s = lo / sqrtf(speed2);
            vx *= s;
            vy *= s;
        } else { /* stopped dead: the rule needs a direction, so take +x */
            vx = lo;
            vy = 0.0f;
        }
    }
    env->vx[i] = vx;
    env->vy[i] = vy;
    env->x[i] = boids_wrap_position(env->x[i] + vx, size);
    env->y[i] = boids_wrap_position(env->y[i] + vy, size);
}

/* The reward of boid i from its current neighbours; *flock is 1 when it flies in a flock: a neighbour in
 * sight, none inside protected_range, and its velocity within BO_ALIGNED of theirs. */
static float boids_reward(const Boids *env, int i, int *flock) {
    BoidSight s = boids_sight(env, i);
    if (s.seen == 0) {
        /* alone: the whole alignment weight, and cohesion as the distance to the nearest boid (past 1, capped
         * at BO_FAR), so that leaving the flock never pays and coming back towards it always does */
        *flock = 0;
        float d = sqrtf(env->views[i].d2[0]) / env->cfg.visual_range;
        return -(env->cfg.cohesion * (d < BO_FAR ? d : BO_FAR) + env->cfg.alignment);
    }
    float guard = env->cfg.protected_range;
    float cohesion = sqrtf(s.cx * s.cx + s.cy * s.cy) / env->cfg.visual_range;
    float alignment = sqrtf(s.ex * s.ex + s.ey * s.ey) / (2.0f * env->cfg.max_speed);
    float nearest = sqrtf(env->views[i].d2[0]);
    float crowding = nearest < guard ? 1.0f - nearest / guard : 0.0f;
    *flock = nearest >= guard && alignment < BO_ALIGNED;
    return -(env->cfg.cohesion * cohesion + env->cfg.alignment * alignment + env->cfg.separation * crowding);
}

static void c_step(Boids *env) {
    int n = env->num_agents;
    for (int i = 0; i < n; i++) {
        float ax, ay;
        if (env->cfg.autopilot) {
            boids_autopilot(env, i, &ax, &ay);
        } else {
            ax = ocean_cont_action(env, 2 * i);
            ay = ocean_cont_action(env, 2 * i + 1);
        }
        /* every boid steers on the views of the last step: move them all, then look again */
        boids_fly(env, i, ax, ay);
    }
    boids_look(env, 0);
    env->tick++;
    int done = env->tick >= env->cfg.max_steps;
    for (int i = 0; i < n; i++) {
        int flock;
        float reward = boids_reward(env, i, &flock);
        env->rewards[i] = reward;
        env->terminals[i] = 0;
        env->truncations[i] = (unsigned char)done;
        env->ret[i] += reward;
        env->flocking[i] += flock;
        if (done) {
            ocean_log_episode(&env->log, env->ret[i], (float)env->tick, (float)env->flocking[i],
                              (float)env->flocking[i] / (float)env->tick);
        } else {
            boids_write_obs(env, i);
        }
    }
    if (done) boids_scatter(env);
}

/* ---- rendering: the torus seen from above ---- */

#define BO_VIEW 256
static void c_frame_shape(Boids *env, int *h, int *w) {
    (void)env;
    *h = BO_VIEW;
    *w = BO_VIEW;
}

static void c_render_rgb(Boids *env, unsigned char *frame) {
    static const unsigned char sky[3] = {12, 24, 40}, flock[3] = {120, 220, 255}, alone[3] = {250, 170, 60},
                               crowded[3] = {240, 80, 80}, beak[3] = {255, 255, 255};
    ocean_fill_rect(frame, BO_VIEW, BO_VIEW, 0, 0, BO_VIEW, BO_VIEW, sky);
    float px = (float)BO_VIEW / env->cfg.world_size;
    float range2 = env->cfg.visual_range * env->cfg.visual_range,
          guard2 = env->cfg.protected_range * env->cfg.protected_range;
    for (int i = 0; i < env->num_agents; i++) {
        float d2 = env->views[i].d2[0];
        const unsigned char *colour = d2 >= range2 ? alone : (d2 < guard2 ? crowded : flock);
        int x = (int)(env->x[i] * px), y = (int)(env->y[i] * px);
        ocean_fill_rect(frame, BO_VIEW, BO_VIEW, x - 1, y - 1, 3, 3, colour);
        float vx = env->vx[i], vy = env->vy[i], speed = sqrtf(vx * vx + vy * vy) + 1e-6f;
        ocean_fill_rect(frame, BO_VIEW, BO_VIEW, x + (int)(2.5f * vx / speed), y + (int)(2.5f * vy / speed), 1, 1,
                        beak);
    }
}

static int c_render_text(Boids *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { ROWS = 24, COLS = 48 };
    char grid[ROWS][COLS];
    memset(grid, '.', sizeof grid);
    float range2 = env->cfg.visual_range * env->cfg.visual_range;
    int in_flock = 0;
    for (int i = 0; i < env->num_agents; i++) {
        int r = (int)(env->y[i] / env->cfg.world_size * ROWS), c = (int)(env->x[i] / env->cfg.world_size * COLS);
        r = r < 0 ? 0 : (r >= ROWS ? ROWS - 1 : r);
        c = c < 0 ? 0 : (c >= COLS ? COLS - 1 : c);
        int seen = env->views[i].d2[0] < range2;
        in_flock += seen;
        grid[r][c] = seen ? 'o' : '*';
    }
    ocean_puts(&t, "boids from above: o has a neighbour in sight, * is alone\n");
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++) ocean_putc(&t, grid[r][c]);
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "step ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, "  with a neighbour in sight ");
    ocean_puti(&t, in_flock);
    ocean_puts(&t, " of ");
    ocean_puti(&t, env->num_agents);
    ocean_putc(&t, '\n');
    return t.len;
}
