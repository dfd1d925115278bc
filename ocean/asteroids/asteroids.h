/* Asteroids: the arcade game. A ship turns (64 headings), thrusts and fires in a 128-unit square field that
 * wraps around. Rocks drift across it; a shot splits a large rock into two medium ones and a medium into two
 * small ones, and destroys a small one (+1 reward per rock hit). A rock that touches the ship costs a life
 * (-death_penalty) and splits as if shot; the ship comes back at the centre with a short shield. Clearing
 * the field brings the next wave, one large rock more each time (up to 8). The game ends when the last
 * ship is lost (terminal) or after max_steps (a truncation). score: rocks hit; perf: the share of max_steps
 * the ships lasted. The observation is in the ship's frame (forward, right), so the field's wrap and the
 * ship's heading never need to be undone by the policy. autopilot is a scripted gunner: it turns to the
 * nearest rock's lead point and fires, and never thrusts. */
#include <math.h>
#include <stdlib.h>
#include "spec.h"
#include "ocean.h"

#define AS_SIZE 128.0f
#define AS_FAR 90.50967f /* AS_SIZE / sqrt 2: the farthest a rock is from the ship round the wrap */
#define AS_HEADINGS 64
#define AS_MAX_ROCKS AS_MAX_OBSERVED
#define AS_MAX_LARGE 8     /* the largest wave: 8 large rocks split into at most 32 small ones */
#define AS_BULLETS 4       /* shots in flight at once, as in the arcade */
#define AS_BULLET_SPEED 4.0f
#define AS_BULLET_LIFE 20  /* steps: a range of 80 units */
#define AS_RELOAD 4        /* steps between shots */
#define AS_THRUST 0.1f
#define AS_FRICTION 0.99f
#define AS_MAX_SPEED 2.5f
#define AS_SHIP_RADIUS 2.5f
#define AS_SHIELD 40       /* steps of shield after a (re)spawn */
#define AS_SPAWN_CLEAR 40.0f /* a new wave's rocks start at least this far from the ship */
#define AS_REL_SPEED 4.0f  /* relative velocities are observed over this */
#define AS_OBS_SHIP 5
#define AS_OBS_ROCK 5

enum { AS_NOOP, AS_THRUST_ACTION, AS_LEFT, AS_RIGHT, AS_FIRE, AS_ACTIONS };

static const float AS_RADIUS[4] = {0.0f, 2.0f, 4.0f, 8.0f}; /* by size: 1 small, 2 medium, 3 large */
static const float AS_SPEED[4] = {0.0f, 1.0f, 0.7f, 0.4f};

/* The rocks as one array per field, live ones packed at the front: the step's loops over them read only
 * the fields they use, and the distance loop (as_look) runs four rocks to an instruction. A rock's size is
 * kept as its radius (2, 4 or 8: AS_RADIUS), the one form the hot loops read. */
typedef struct AsteroidRocks {
    float x[AS_MAX_ROCKS], y[AS_MAX_ROCKS], vx[AS_MAX_ROCKS], vy[AS_MAX_ROCKS], radius[AS_MAX_ROCKS];
} AsteroidRocks;

/* 1 small, 2 medium, 3 large (the index of AS_RADIUS and AS_SPEED) */
static inline int as_size(float radius) { return radius > 5.0f ? 3 : radius > 3.0f ? 2 : 1; }

typedef struct AsteroidBullet {
    float x, y, vx, vy;
    int life; /* 0: the slot is empty */
} AsteroidBullet;

/* Everything lives in the struct (fixed arrays, no pointers), so a saved state is the struct itself and
 * there is no OCEAN_STATE_BLOCKS to list. The struct is kept small (the live rocks packed at the front of
 * their arrays, the heading's cosine and sine instead of a table): a bench steps thousands of games, and
 * what each step costs is mostly bringing its game into the cache (see c_step's prefetch).
 * Version 2: the rocks became one array per field (same size, another meaning). */
#define OCEAN_STATE_VERSION 2
typedef struct Asteroids {
    OCEAN_SLOTS(float);
    AsteroidsConfig cfg; /* options (spec.toml) */
    float x, y, vx, vy;
    float cos_h, sin_h; /* of the heading */
    int num_rocks, heading, reload, shield, lives, wave, thrusting;
    int tick, score;
    float ret;
    AsteroidBullet bullets[AS_BULLETS];
    AsteroidRocks rocks; /* slots [0, num_rocks) are live */
} Asteroids;

static int c_init(Asteroids *env) {
    (void)env;
    return 0;
}

static void as_set_heading(Asteroids *env, int heading) {
    float angle = 6.2831853f * (float)heading / (float)AS_HEADINGS;
    env->heading = heading;
    env->cos_h = cosf(angle);
    env->sin_h = sinf(angle);
}

static void c_close(Asteroids *env) { (void)env; }

/* The shortest offset along one axis round the wrap; arithmetic rather than ?: (gcc keeps float ?: as
 * branches, and which way they go is a coin toss). */
static inline float as_wrap_delta(float d) {
    return d - AS_SIZE * (float)((d > 0.5f * AS_SIZE) - (d < -0.5f * AS_SIZE));
}

static inline float as_wrap_position(float p) {
    if (p < 0.0f) p += AS_SIZE;
    if (p >= AS_SIZE) p -= AS_SIZE; /* also catches p + AS_SIZE rounding up to AS_SIZE */
    return p;
}

/* A rock of `size` at (x, y) in a random direction (there is always room: a wave of at most 8 large rocks
 * splits into at most 32 pieces). */
static void as_add_rock(Asteroids *env, float x, float y, int size) {
    if (env->num_rocks >= AS_MAX_ROCKS) return;
    AsteroidRocks *r = &env->rocks;
    int i = env->num_rocks++;
    float angle = 6.2831853f * ocean_randf(&env->rng);
    float speed = AS_SPEED[size] * env->cfg.rock_speed * (0.75f + 0.5f * ocean_randf(&env->rng));
    r->x[i] = x;
    r->y[i] = y;
    r->vx[i] = speed * cosf(angle);
    r->vy[i] = speed * sinf(angle);
    r->radius[i] = AS_RADIUS[size];
}

static void as_spawn_wave(Asteroids *env) {
    int count = env->cfg.first_wave + env->wave;
    if (count > AS_MAX_LARGE) count = AS_MAX_LARGE;
    for (int n = 0; n < count; n++) {
        float x = 0.0f, y = 0.0f;
        for (int tries = 0; tries < 16; tries++) { /* away from the ship; 16 misses in a row never happen */
            x = AS_SIZE * ocean_randf(&env->rng);
            y = AS_SIZE * ocean_randf(&env->rng);
            float dx = as_wrap_delta(x - env->x), dy = as_wrap_delta(y - env->y);
            if (dx * dx + dy * dy >= AS_SPAWN_CLEAR * AS_SPAWN_CLEAR) break;
        }
        as_add_rock(env, x, y, 3);
    }
}

static void as_respawn_ship(Asteroids *env) {
    env->x = env->y = 0.5f * AS_SIZE;
    env->vx = env->vy = 0.0f;
    as_set_heading(env, 3 * AS_HEADINGS / 4); /* nose up the screen */
    env->shield = AS_SHIELD;
}

static void as_write_obs(Asteroids *env);

static void as_new_game(Asteroids *env) {
    memset(&env->rocks, 0, sizeof env->rocks);
    memset(env->bullets, 0, sizeof env->bullets);
    env->num_rocks = 0;
    as_respawn_ship(env);
    env->reload = 0;
    env->lives = env->cfg.lives;
    env->wave = 0;
    env->thrusting = 0;
    env->tick = env->score = 0;
    env->ret = 0.0f;
    as_spawn_wave(env);
    as_write_obs(env);
}

static void c_reset(Asteroids *env) { as_new_game(env); }

/* Every rock's offset from the ship the short way round, and its squared distance: computed once a step and
 * shared by the collision test, the choice of the nearest rocks and the observation. */
typedef struct AsteroidSight {
    float dx[AS_MAX_ROCKS], dy[AS_MAX_ROCKS], d2[AS_MAX_ROCKS];
} AsteroidSight;

static void as_look(const Asteroids *env, AsteroidSight *sight) {
    const AsteroidRocks *r = &env->rocks;
    float sx = env->x, sy = env->y;
    for (int i = 0; i < env->num_rocks; i++) {
        float dx = as_wrap_delta(r->x[i] - sx), dy = as_wrap_delta(r->y[i] - sy);
        sight->dx[i] = dx;
        sight->dy[i] = dy;
        sight->d2[i] = dx * dx + dy * dy;
    }
}

/* The `count` rocks nearest the ship by surface distance, nearest first (a tie goes to the lower slot):
 * their slots in order[]. A rock's place is the number of rocks ahead of it, counted over all the slots
 * at once (four to an instruction, the dead ones at +inf): an insertion sort's compares go either way at
 * random, and cost more in mispredictions than these counts cost in work. */
static int as_nearest(const Asteroids *env, const AsteroidSight *sight, int *order, int count) {
    float gap[AS_MAX_ROCKS];
    int n = env->num_rocks;
    for (int i = 0; i < AS_MAX_ROCKS; i++) gap[i] = INFINITY;
    for (int i = 0; i < n; i++) gap[i] = sqrtf(sight->d2[i]) - env->rocks.radius[i];
    for (int i = 0; i < n; i++) {
        float g = gap[i];
        int ahead = 0, same = 0;
        for (int j = 0; j < AS_MAX_ROCKS; j++) {
            ahead += gap[j] < g;
            same += gap[j] == g;
        }
        if (same > 1) /* a tie (the two halves of a rock split this step): the lower slot goes first */
            for (int j = 0; j < i; j++) ahead += gap[j] == g;
        if (ahead < count) order[ahead] = i;
    }
    return n < count ? n : count;
}

static void as_write_obs_seen(Asteroids *env, const AsteroidSight *sight) {
    float *o = env->observations;
    float c = env->cos_h, s = env->sin_h;
    int free_slot = 0;
    for (int b = 0; b < AS_BULLETS; b++) free_slot |= env->bullets[b].life == 0;
    /* forward is (c, s); right, with y growing down the screen, is (-s, c) */
    o[0] = ocean_clampf((env->vx * c + env->vy * s) / AS_MAX_SPEED, -1.0f, 1.0f);
    o[1] = ocean_clampf((-env->vx * s + env->vy * c) / AS_MAX_SPEED, -1.0f, 1.0f);
    o[2] = (float)(env->reload == 0 && free_slot);
    o[3] = (float)env->shield / (float)AS_SHIELD;
    o[4] = (float)env->lives / (float)env->cfg.lives;
    int order[AS_MAX_ROCKS];
    int k = env->cfg.observed, m = as_nearest(env, sight, order, k);
    float *p = o + AS_OBS_SHIP;
    for (int q = 0; q < m; q++, p += AS_OBS_ROCK) {
        int i = order[q];
        float dx = sight->dx[i], dy = sight->dy[i];
        float rvx = env->rocks.vx[i] - env->vx, rvy = env->rocks.vy[i] - env->vy;
        p[0] = ocean_clampf((dx * c + dy * s) / AS_FAR, -1.0f, 1.0f);
        p[1] = ocean_clampf((-dx * s + dy * c) / AS_FAR, -1.0f, 1.0f);
        p[2] = ocean_clampf((rvx * c + rvy * s) / AS_REL_SPEED, -1.0f, 1.0f);
        p[3] = ocean_clampf((-rvx * s + rvy * c) / AS_REL_SPEED, -1.0f, 1.0f);
        p[4] = env->rocks.radius[i] / AS_RADIUS[3];
    }
    memset(p, 0, sizeof(float) * (size_t)(AS_OBS_ROCK * (k - m)));
}

static void as_write_obs(Asteroids *env) {
    AsteroidSight sight;
    as_look(env, &sight);
    as_write_obs_seen(env, &sight);
}

/* The scripted gunner: aim at where the nearest rock will be when a shot reaches it (the shot carries the
 * ship's velocity, so the lead uses the rock's velocity relative to the ship); fire when the lead point is
 * within the rock's radius of the line of fire and in range, else turn towards it. */
static int as_autopilot(const Asteroids *env) {
    AsteroidSight sight;
    int order[1];
    as_look(env, &sight);
    if (as_nearest(env, &sight, order, 1) == 0) return AS_NOOP;
    int i = order[0];
    float dx = sight.dx[i], dy = sight.dy[i];
    float t = sqrtf(dx * dx + dy * dy) / AS_BULLET_SPEED;
    float lx = dx + (env->rocks.vx[i] - env->vx) * t, ly = dy + (env->rocks.vy[i] - env->vy) * t;
    float c = env->cos_h, s = env->sin_h;
    float ahead = lx * c + ly * s, right = -lx * s + ly * c;
    float reach = AS_BULLET_SPEED * AS_BULLET_LIFE;
    if (ahead > 0.0f && fabsf(right) < env->rocks.radius[i] && ahead < reach) {
        int free_slot = 0;
        for (int b = 0; b < AS_BULLETS; b++) free_slot |= env->bullets[b].life == 0;
        return env->reload == 0 && free_slot ? AS_FIRE : AS_NOOP;
    }
    return right > 0.0f ? AS_RIGHT : AS_LEFT;
}

/* Rock i is hit (by a shot or the ship): it splits into two of the next size, or is gone if small. The last
 * live rock takes its place, which keeps the live ones packed (and their order fixed by the game alone). */
static void as_split(Asteroids *env, int i) {
    AsteroidRocks *r = &env->rocks;
    int size = as_size(r->radius[i]), last = --env->num_rocks;
    float x = r->x[i], y = r->y[i];
    r->x[i] = r->x[last];
    r->y[i] = r->y[last];
    r->vx[i] = r->vx[last];
    r->vy[i] = r->vy[last];
    r->radius[i] = r->radius[last];
    if (size > 1) {
        as_add_rock(env, x, y, size - 1);
        as_add_rock(env, x, y, size - 1);
    }
}

static void as_end(Asteroids *env, int terminal) {
    ocean_log_episode(&env->log, env->ret, (float)env->tick, (float)env->score,
                      (float)env->tick / (float)env->cfg.max_steps);
    env->terminals[0] = (unsigned char)terminal;
    env->truncations[0] = (unsigned char)!terminal;
    as_new_game(env);
}

/* The slots of the rocks within `extra` of (x, y), as bits (bit i: slot i), built without a branch on
 * each rock, so which ones pass never costs a misprediction; the lowest set bit is the first hit. */
static inline uint32_t as_hits(const AsteroidRocks *r, int n, float x, float y, float extra) {
    uint32_t hits = 0;
    for (int i = 0; i < n; i++) {
        float dx = as_wrap_delta(r->x[i] - x), dy = as_wrap_delta(r->y[i] - y), reach = r->radius[i] + extra;
        hits |= (uint32_t)(dx * dx + dy * dy < reach * reach) << i;
    }
    return hits;
}

static void c_step(Asteroids *env) {
    /* The binding steps its games in array order, and a game is mostly out of the cache when its step
     * comes: ask for the next one's now, while this one computes. A prefetch never faults, so the last
     * game's, past the array, is harmless (the addresses are integers: no pointer leaves its array). */
    uintptr_t next = (uintptr_t)(env + 1);
    for (size_t off = 0; off < sizeof *env; off += 64) __builtin_prefetch((const void *)(next + off));
    int a = env->cfg.autopilot ? as_autopilot(env) : ocean_clamp(env->actions[0], AS_ACTIONS);
    float reward = 0.0f;
    env->terminals[0] = 0;
    env->truncations[0] = 0;

    if (a == AS_LEFT) as_set_heading(env, (env->heading + AS_HEADINGS - 1) % AS_HEADINGS);
    if (a == AS_RIGHT) as_set_heading(env, (env->heading + 1) % AS_HEADINGS);
    float c = env->cos_h, s = env->sin_h;
    env->vx *= AS_FRICTION;
    env->vy *= AS_FRICTION;
    env->thrusting = a == AS_THRUST_ACTION;
    if (env->thrusting) {
        env->vx += AS_THRUST * c;
        env->vy += AS_THRUST * s;
        float speed2 = env->vx * env->vx + env->vy * env->vy;
        if (speed2 > AS_MAX_SPEED * AS_MAX_SPEED) {
            float k = AS_MAX_SPEED / sqrtf(speed2);
            env->vx *= k;
            env->vy *= k;
        }
    }
    env->x = as_wrap_position(env->x + env->vx);
    env->y = as_wrap_position(env->y + env->vy);
    if (env->reload > 0) env->reload--;
    if (env->shield > 0) env->shield--;
    if (a == AS_FIRE && env->reload == 0) {
        for (int b = 0; b < AS_BULLETS; b++) {
            AsteroidBullet *shot = &env->bullets[b];
            if (shot->life) continue;
            shot->x = as_wrap_position(env->x + AS_SHIP_RADIUS * c);
            shot->y = as_wrap_position(env->y + AS_SHIP_RADIUS * s);
            shot->vx = env->vx + AS_BULLET_SPEED * c;
            shot->vy = env->vy + AS_BULLET_SPEED * s;
            shot->life = AS_BULLET_LIFE;
            env->reload = AS_RELOAD;
            break;
        }
    }

    AsteroidRocks *rocks = &env->rocks;
    for (int i = 0; i < env->num_rocks; i++) {
        rocks->x[i] = as_wrap_position(rocks->x[i] + rocks->vx[i]);
        rocks->y[i] = as_wrap_position(rocks->y[i] + rocks->vy[i]);
    }
    /* The shots move (without a branch: which slots fly is a coin toss). A shot in its last step still hits. */
    float bx[AS_BULLETS], by[AS_BULLETS];
    int flying[AS_BULLETS];
    for (int b = 0; b < AS_BULLETS; b++) {
        AsteroidBullet *shot = &env->bullets[b];
        flying[b] = shot->life > 0;
        float x = as_wrap_position(shot->x + shot->vx), y = as_wrap_position(shot->y + shot->vy);
        bx[b] = shot->x = flying[b] ? x : shot->x;
        by[b] = shot->y = flying[b] ? y : shot->y;
        shot->life -= flying[b];
    }
    /* Most steps no shot touches a rock: one pass over the rocks with the four shots side by side says so,
     * and the exact test (shot by shot, each on the rocks the earlier ones left) runs only when one may. */
    int near = 0;
    for (int i = 0; i < env->num_rocks; i++) {
        float rx = rocks->x[i], ry = rocks->y[i], r2 = rocks->radius[i] * rocks->radius[i];
        for (int b = 0; b < AS_BULLETS; b++) {
            float dx = as_wrap_delta(rx - bx[b]), dy = as_wrap_delta(ry - by[b]);
            near |= (dx * dx + dy * dy < r2) & flying[b];
        }
    }
    for (int b = 0; near && b < AS_BULLETS; b++) {
        AsteroidBullet *shot = &env->bullets[b];
        if (!flying[b]) continue;
        /* one that hits is spent, on the lowest slot it touches */
        uint32_t hits = as_hits(rocks, env->num_rocks, shot->x, shot->y, 0.0f);
        if (hits) {
            as_split(env, __builtin_ctz(hits));
            shot->life = 0;
            env->score++;
            reward += 1.0f;
        }
    }

    AsteroidSight sight;
    as_look(env, &sight);
    int lost = 0;
    if (env->shield == 0) {
        uint32_t hits = 0;
        for (int i = 0; i < env->num_rocks; i++) {
            float reach = rocks->radius[i] + AS_SHIP_RADIUS;
            hits |= (uint32_t)(sight.d2[i] < reach * reach) << i;
        }
        if (hits) {
            as_split(env, __builtin_ctz(hits));
            lost = 1;
        }
    }
    if (lost) {
        reward -= env->cfg.death_penalty;
        env->lives--;
        as_respawn_ship(env);
    }

    int fresh = !lost; /* a lost ship moved, and its rock split: look again */
    if (env->num_rocks == 0) {
        env->wave++;
        as_spawn_wave(env);
        fresh = 0;
    }

    env->tick++;
    env->ret += reward;
    env->rewards[0] = reward;
    if (env->lives == 0) as_end(env, 1);
    else if (env->tick >= env->cfg.max_steps) as_end(env, 0);
    else if (fresh) as_write_obs_seen(env, &sight);
    else as_write_obs(env);
}

/* ---- rendering: the field at 2 pixels per unit ---- */

#define AS_SCALE 2
#define AS_VIEW ((int)AS_SIZE * AS_SCALE)

static void c_frame_shape(Asteroids *env, int *h, int *w) {
    (void)env;
    *h = AS_VIEW;
    *w = AS_VIEW;
}

static void as_dot(unsigned char *frame, float x, float y, int size, const unsigned char rgb[3]) {
    int px = (int)(x * AS_SCALE), py = (int)(y * AS_SCALE);
    ocean_fill_rect(frame, AS_VIEW, AS_VIEW, px - size / 2, py - size / 2, size, size, rgb);
}

static void c_render_rgb(Asteroids *env, unsigned char *frame) {
    static const unsigned char space[3] = {6, 10, 24}, rock[3] = {170, 160, 150}, ship[3] = {120, 220, 255},
                               shielded[3] = {255, 240, 120}, flame[3] = {255, 120, 40}, shot[3] = {255, 255, 255};
    ocean_fill_rect(frame, AS_VIEW, AS_VIEW, 0, 0, AS_VIEW, AS_VIEW, space);
    for (int i = 0; i < env->num_rocks; i++) {
        /* the outline: every pixel of the bounding box within a pixel of the circle */
        float radius = env->rocks.radius[i] * AS_SCALE, cx = env->rocks.x[i] * AS_SCALE;
        float cy = env->rocks.y[i] * AS_SCALE;
        int x0 = (int)(cx - radius) - 1, y0 = (int)(cy - radius) - 1, span = (int)(2.0f * radius) + 3;
        for (int py = y0; py < y0 + span; py++)
            for (int px = x0; px < x0 + span; px++) {
                float dx = (float)px + 0.5f - cx, dy = (float)py + 0.5f - cy;
                float d = sqrtf(dx * dx + dy * dy);
                if (d <= radius && d > radius - 1.5f) ocean_fill_rect(frame, AS_VIEW, AS_VIEW, px, py, 1, 1, rock);
            }
    }
    for (int b = 0; b < AS_BULLETS; b++)
        if (env->bullets[b].life) as_dot(frame, env->bullets[b].x, env->bullets[b].y, 2, shot);
    /* the ship: a dart drawn as dots along its three edges */
    float c = env->cos_h, s = env->sin_h;
    float nose[2] = {env->x + 3.0f * c, env->y + 3.0f * s};
    float left[2] = {env->x - 2.0f * c + 2.0f * s, env->y - 2.0f * s - 2.0f * c};
    float right[2] = {env->x - 2.0f * c - 2.0f * s, env->y - 2.0f * s + 2.0f * c};
    const unsigned char *hull = env->shield ? shielded : ship;
    for (int k = 0; k <= 8; k++) {
        float t = (float)k / 8.0f;
        as_dot(frame, nose[0] + t * (left[0] - nose[0]), nose[1] + t * (left[1] - nose[1]), 2, hull);
        as_dot(frame, nose[0] + t * (right[0] - nose[0]), nose[1] + t * (right[1] - nose[1]), 2, hull);
        as_dot(frame, left[0] + t * (right[0] - left[0]), left[1] + t * (right[1] - left[1]), 2, hull);
    }
    if (env->thrusting) as_dot(frame, env->x - 3.5f * c, env->y - 3.5f * s, 3, flame);
    for (int l = 0; l < env->lives && l < 20; l++) ocean_fill_rect(frame, AS_VIEW, AS_VIEW, 4 + 8 * l, 4, 5, 5, ship);
}

static int c_render_text(Asteroids *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { ROWS = 32, COLS = 64 };
    char grid[ROWS][COLS];
    memset(grid, ' ', sizeof grid);
    static const char marks[4] = {' ', '.', 'o', 'O'};
    for (int i = 0; i < env->num_rocks; i++) {
        int row = (int)(env->rocks.y[i] / AS_SIZE * ROWS) % ROWS, col = (int)(env->rocks.x[i] / AS_SIZE * COLS) % COLS;
        grid[row][col] = marks[as_size(env->rocks.radius[i])];
    }
    for (int b = 0; b < AS_BULLETS; b++) {
        const AsteroidBullet *shot = &env->bullets[b];
        if (shot->life) grid[(int)(shot->y / AS_SIZE * ROWS) % ROWS][(int)(shot->x / AS_SIZE * COLS) % COLS] = '*';
    }
    grid[(int)(env->y / AS_SIZE * ROWS) % ROWS][(int)(env->x / AS_SIZE * COLS) % COLS] = 'A';
    ocean_puts(&t, "A ship, O o . rocks large to small, * shots\n");
    for (int r = 0; r < ROWS; r++) {
        for (int col = 0; col < COLS; col++) ocean_putc(&t, grid[r][col]);
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "score ");
    ocean_puti(&t, env->score);
    ocean_puts(&t, "  lives ");
    ocean_puti(&t, env->lives);
    ocean_puts(&t, "  wave ");
    ocean_puti(&t, env->wave + 1);
    ocean_puts(&t, "  heading ");
    ocean_puti(&t, env->heading);
    ocean_puts(&t, "/64\n");
    return t.len;
}
