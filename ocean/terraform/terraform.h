/* Terraform: bulldozers reshape a height map into a target one (after PufferLib 3.0's terraform, rewritten
 * on a grid). The ground is a square of cells, each holding 0..TF_MAX_HEIGHT units of soil. A new map has
 * hills (smooth value noise, its top 40% kept) on flat ground, and the target is flat ground with square
 * plateaus target_height high, 11 x 11 cells, 3 apart; the hills hold exactly as much soil as the plateaus
 * need, so a map can be solved exactly. Every dozer (an agent row) works the cell under it with its bucket
 * (scoop one unit into its load, or dump one) and then moves one cell, or stays; it cannot drive onto a
 * cell whose height differs from its own cell's by more than max_climb (32 by default: no limit; 3.0's dozers
 * climb about 5 of its 32 units). Dozers may share cells.
 *
 * Reward (to the dozer that acts): reward_per_unit for each unit by which its scoop or dump brings the cell
 * closer to the target, minus as much for a unit that takes it away; solve_bonus to every dozer when the
 * map matches the target, which ends the episode (else it is truncated at max_steps). Log per dozer:
 * score = height error removed in the episode (units, over the whole map), perf = that over the error the
 * map started with.
 *
 * Observation (float32) per dozer: its (2 vision + 1)^2 view of heights and of the soil to add, its load
 * and position, and the map in TF_REGIONS^2 blocks: each block's surplus and deficit and which block the
 * dozer is in. Speed: the view's two channels are kept as float maps with a border `vision` cells wide,
 * updated one cell per scoop or dump, so a view is 2 (2 vision + 1) row copies; the blocks' sums are kept
 * the same way.
 *
 * autopilot drives greedy dozers: scoop where the cell is above its target, dump where it is below,
 * otherwise head for the highest surplus cell (filling) or the nearest deficit cell (emptying, once the
 * bucket is full or no surplus is left). They finish a default map in about 1,700 steps; under a climbing
 * limit they dig slopes they cannot climb and finish much less (about 45% of the error at max_climb=4). */
#include <stdlib.h>
#include "spec.h"
#include "ocean.h"

#define TF_PLATEAU 11 /* plateau side, cells */
#define TF_GAP 3      /* flat cells between plateaus and before the first */
#define TF_HILLS 0.6f /* noise above this share of its range is a hill */
#define TF_OCTAVES 4
#define TF_SURPLUS_SCALE 8.0f /* surplus units per cell at which a block's surplus reads 1 */
#define TF_SPAWN_TRIES 64
#define TF_SCALE_PX 512 /* a frame is about this many pixels wide */
#define TF_CHUNK 16     /* bytes of a view row converted at once (tf_view_channel) */

enum { TF_STAY, TF_UP, TF_DOWN, TF_LEFT, TF_RIGHT, TF_MOVES };
enum { TF_NOTHING, TF_SCOOP, TF_DUMP, TF_BUCKET };
enum { TF_FILLING, TF_EMPTYING };

typedef struct Dozer {
    int x, y, load;
    int mode, goal; /* the autopilot's: filling or emptying, and the cell it heads for (-1: none) */
    float ret;      /* this episode's return */
} Dozer;

typedef struct Terraform {
    OCEAN_SLOTS(float);
    TerraformConfig cfg;
    /* One allocation: the dozers, the block sums, then the byte maps. */
    Dozer *dozers;
    float *surplus_f;        /* [TF_REGIONS^2] the observation's block surplus */
    float *deficit_f;        /* [TF_REGIONS^2] and deficit */
    float *noise;            /* [size^2] a new map's noise (read only while a map is drawn) */
    int *surplus, *deficit;  /* [TF_REGIONS^2] units per block */
    int *block_cells;        /* [TF_REGIONS^2] cells per block */
    unsigned char *height;   /* [size^2] */
    unsigned char *target;   /* [size^2] */
    unsigned char *block_of; /* [size^2] the block of each cell */
    /* the view's two channels as one padded map of byte pairs, `vision` cells of border: height
     * (-TF_MAX_HEIGHT off the map, so it reads -1), then target - height (0 off the map). Bytes, not floats,
     * and the two channels side by side: a step reads 2 vision + 1 rows per dozer, and at a thousand maps
     * per core the cache lines those reads wait for are most of a step */
    signed char *view;
    int stride;              /* size + 2 vision: the padded map's row length, in cells */
    int misfit, start_misfit; /* sum over cells of |height - target|: now and at the start */
    int tick;
} Terraform;

static size_t tf_bytes(const Terraform *env) {
    size_t n = (size_t)env->cfg.size * (size_t)env->cfg.size, padded = (size_t)env->stride * (size_t)env->stride;
    size_t r = TF_REGIONS * TF_REGIONS;
    return sizeof(Dozer) * (size_t)env->num_agents + sizeof(float) * (2 * r + n) + sizeof(int) * 3 * r + 3 * n +
           2 * padded + 2 * TF_CHUNK;
}

/* Saved states (ocean.h): the one allocation; every other pointer points into it. */
#define OCEAN_STATE_BLOCKS(X, env) \
    X(dozers, tf_bytes(env))       \
    X(surplus_f, 0)                \
    X(deficit_f, 0)                \
    X(noise, 0)                    \
    X(surplus, 0)                  \
    X(deficit, 0)                  \
    X(block_cells, 0)              \
    X(height, 0)                   \
    X(target, 0)                   \
    X(block_of, 0)                 \
    X(view, 0)

static int c_init(Terraform *env) {
    int size = env->cfg.size;
    size_t n = (size_t)size * (size_t)size, r = TF_REGIONS * TF_REGIONS;
    env->stride = size + 2 * env->cfg.vision;
    env->dozers = (Dozer *)calloc(1, tf_bytes(env));
    if (!env->dozers) return ocean_fail(env, "out of memory for the map");
    env->surplus_f = (float *)(env->dozers + env->num_agents);
    env->deficit_f = env->surplus_f + r;
    env->noise = env->deficit_f + r;
    env->surplus = (int *)(env->noise + n);
    env->deficit = env->surplus + r;
    env->block_cells = env->deficit + r;
    env->height = (unsigned char *)(env->block_cells + r);
    env->target = env->height + n;
    env->block_of = env->target + n;
    env->view = (signed char *)(env->block_of + n);
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            int b = (y * TF_REGIONS / size) * TF_REGIONS + x * TF_REGIONS / size;
            env->block_of[y * size + x] = (unsigned char)b;
            env->block_cells[b]++;
        }
    /* the plateaus never change: TF_PLATEAU squares TF_GAP apart, starting TF_GAP from the top left */
    int count = (size - TF_GAP) / (TF_PLATEAU + TF_GAP);
    for (int gy = 0; gy < count; gy++)
        for (int gx = 0; gx < count; gx++)
            for (int y = 0; y < TF_PLATEAU; y++)
                for (int x = 0; x < TF_PLATEAU; x++) {
                    int cy = TF_GAP + gy * (TF_PLATEAU + TF_GAP) + y, cx = TF_GAP + gx * (TF_PLATEAU + TF_GAP) + x;
                    env->target[cy * size + cx] = (unsigned char)env->cfg.target_height;
                }
    return 0;
}

static void c_close(Terraform *env) {
    free(env->dozers);
    env->dozers = NULL;
    env->view = NULL;
    env->surplus_f = env->deficit_f = env->noise = NULL;
    env->surplus = env->deficit = env->block_cells = NULL;
    env->height = env->target = env->block_of = NULL;
}

/* A lattice value in [0, 1) from integer hashing (no table to store, and the same bits on every build). */
static inline float tf_lattice(uint32_t seed, int ix, int iy) {
    uint32_t h = seed ^ ((uint32_t)ix * 0x8DA6B343u) ^ ((uint32_t)iy * 0xD8163841u);
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

static inline float tf_smooth(float t) { return t * t * (3.0f - 2.0f * t); }

/* Value noise: TF_OCTAVES octaves, the first with lattice points size / 4 cells apart (as 3.0's base
 * frequency), each next one twice as fine and half as strong. */
static float tf_noise(uint32_t seed, int size, int x, int y) {
    float sum = 0.0f, amp = 1.0f, spacing = (float)size / 4.0f;
    for (int o = 0; o < TF_OCTAVES; o++) {
        float fx = (float)x / spacing, fy = (float)y / spacing;
        int ix = (int)fx, iy = (int)fy;
        float tx = tf_smooth(fx - (float)ix), ty = tf_smooth(fy - (float)iy);
        uint32_t s = seed + 0x9E3779B9u * (uint32_t)(o + 1);
        float a = tf_lattice(s, ix, iy), b = tf_lattice(s, ix + 1, iy);
        float c = tf_lattice(s, ix, iy + 1), d = tf_lattice(s, ix + 1, iy + 1);
        float top = a + (b - a) * tx, bottom = c + (d - c) * tx;
        sum += amp * (top + (bottom - top) * ty);
        amp *= 0.5f;
        spacing = spacing > 2.0f ? spacing * 0.5f : 1.0f;
    }
    return sum;
}

static inline int tf_abs(int v) { return v < 0 ? -v : v; }
static inline int tf_padded(const Terraform *env, int x, int y) {
    return (y + env->cfg.vision) * env->stride + x + env->cfg.vision;
}

/* Write one block's two observation values from its sums. */
static inline void tf_block_obs(Terraform *env, int b) {
    float cells = (float)env->block_cells[b];
    float s = (float)env->surplus[b] / (TF_SURPLUS_SCALE * cells);
    env->surplus_f[b] = s < 1.0f ? s : 1.0f;
    env->deficit_f[b] = (float)env->deficit[b] / ((float)env->cfg.target_height * cells);
}

/* A cell's block, from its position: block_of's answer without a cache line to wait for. */
static inline int tf_block(const Terraform *env, int x, int y) {
    return (y * TF_REGIONS / env->cfg.size) * TF_REGIONS + x * TF_REGIONS / env->cfg.size;
}

/* Set a cell's height and keep everything derived from it (error, view map, block sums) in step. The old
 * height and the target are read from the view map, whose lines the dozer's view has brought in already.
 * Returns the change of the cell's error |height - target|. */
static inline int tf_set_height(Terraform *env, int cell, int x, int y, int h) {
    int p = tf_padded(env, x, y), old = env->view[2 * p], t = old + env->view[2 * p + 1];
    int before = tf_abs(old - t), after = tf_abs(h - t);
    int b = tf_block(env, x, y);
    env->surplus[b] += (h > t ? h - t : 0) - (old > t ? old - t : 0);
    env->deficit[b] += (h < t ? t - h : 0) - (old < t ? t - old : 0);
    tf_block_obs(env, b);
    env->height[cell] = (unsigned char)h;
    env->view[2 * p] = (signed char)h;
    env->view[2 * p + 1] = (signed char)(t - h);
    env->misfit += after - before;
    return after - before;
}

/* One channel of a view: w rows of w cells, `stride` cells apart, as floats over TF_MAX_HEIGHT. A cell is a
 * pair of bytes, read as one 16-bit word (little-endian, as every target is): the channel is its low byte
 * (high = 0) or its high byte (high = 1), sign-extended by shifts, which compile to vector instructions
 * where picking every other byte would not. Views up to TF_CHUNK wide convert a whole chunk per row with no
 * remainder loop: the chunk spills past the row into the next one, which is written after it, and the
 * last row's spill lands on the fields written after the channel; the reads stay inside the allocation
 * because it ends with 2 TF_CHUNK spare bytes. */
static inline void tf_view_channel(float *restrict out, const signed char *restrict map, int w, int stride, int high) {
    const float scale = 1.0f / (float)TF_MAX_HEIGHT;
    int16_t pair[TF_CHUNK];
    for (int row = 0; row < w; row++, out += w, map += 2 * stride) {
        if (w <= TF_CHUNK) {
            memcpy(pair, map, sizeof pair);
            for (int k = 0; k < TF_CHUNK; k++)
                out[k] = (float)(high ? pair[k] >> 8 : (int16_t)(pair[k] << 8) >> 8) * scale;
        } else {
            for (int k = 0; k < w; k++) out[k] = (float)map[2 * k + high] * scale;
        }
    }
}

static void tf_write_obs(Terraform *env) {
    int v = env->cfg.vision, w = 2 * v + 1, size = env->cfg.size, r = TF_REGIONS * TF_REGIONS;
    float inv_size = 1.0f / (float)size, inv_cap = 1.0f / (float)env->cfg.capacity;
    for (int i = 0; i < env->num_agents; i++) {
        const Dozer *d = &env->dozers[i];
        float *obs = env->observations + (size_t)i * (size_t)env->obs_size;
        /* the view centred on the dozer starts at its own padded coordinates minus vision, i.e. (x, y) */
        const signed char *view = env->view + 2 * ((size_t)d->y * (size_t)env->stride + (size_t)d->x);
        tf_view_channel(obs, view, w, env->stride, 0);
        tf_view_channel(obs + w * w, view, w, env->stride, 1);
        float *o = obs + 2 * w * w;
        o[0] = (float)d->load * inv_cap;
        o[1] = (float)d->x * inv_size;
        o[2] = (float)d->y * inv_size;
        o += 3;
        memcpy(o, env->surplus_f, sizeof(float) * (size_t)r);
        memcpy(o + r, env->deficit_f, sizeof(float) * (size_t)r);
        memset(o + 2 * r, 0, sizeof(float) * (size_t)r);
        o[2 * r + tf_block(env, d->x, d->y)] = 1.0f;
    }
}

/* A new map: hills of value noise holding exactly the soil the plateaus need, then dozers on flat ground. */
static void tf_new_episode(Terraform *env) {
    int size = env->cfg.size, n = size * size, r = TF_REGIONS * TF_REGIONS;
    uint32_t seed = ocean_rand(&env->rng);
    float *noise = env->noise;
    float lo = 3.0e38f, hi = -3.0e38f;
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            float v = tf_noise(seed, size, x, y);
            noise[y * size + x] = v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    float cut = lo + TF_HILLS * (hi - lo), hills = 0.0f;
    int needed = 0;
    for (int c = 0; c < n; c++) {
        noise[c] = noise[c] > cut ? noise[c] - cut : 0.0f;
        hills += noise[c];
        needed += env->target[c];
    }
    /* heights in proportion to the hills, rounded down, then the remainder one unit a cell: first on the
     * hills from a random cell on, then anywhere (only when the hills are too small to hold it) */
    int placed = 0;
    for (int c = 0; c < n; c++) {
        int h = hills > 0.0f ? (int)(noise[c] * (float)needed / hills) : 0;
        h = h < TF_MAX_HEIGHT ? h : TF_MAX_HEIGHT;
        env->height[c] = (unsigned char)h;
        placed += h;
    }
    int start = ocean_randint(&env->rng, n);
    for (int pass = 0; pass < 2 * TF_MAX_HEIGHT && placed < needed; pass++)
        for (int k = 0; k < n && placed < needed; k++) {
            int c = (start + k) % n;
            if ((noise[c] > 0.0f || pass >= TF_MAX_HEIGHT) && env->height[c] < TF_MAX_HEIGHT) {
                env->height[c]++;
                placed++;
            }
        }
    /* the derived maps: the border reads -1 height (off the map) and 0 soil to add */
    int padded = env->stride * env->stride;
    for (int p = 0; p < padded; p++) {
        env->view[2 * p] = -TF_MAX_HEIGHT;
        env->view[2 * p + 1] = 0;
    }
    memset(env->surplus, 0, sizeof(int) * (size_t)r);
    memset(env->deficit, 0, sizeof(int) * (size_t)r);
    env->misfit = 0;
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            int c = y * size + x, h = env->height[c], t = env->target[c], p = tf_padded(env, x, y);
            env->view[2 * p] = (signed char)h;
            env->view[2 * p + 1] = (signed char)(t - h);
            env->surplus[env->block_of[c]] += h > t ? h - t : 0;
            env->deficit[env->block_of[c]] += h < t ? t - h : 0;
            env->misfit += tf_abs(h - t);
        }
    for (int b = 0; b < r; b++) tf_block_obs(env, b);
    env->start_misfit = env->misfit;
    for (int i = 0; i < env->num_agents; i++) {
        Dozer *d = &env->dozers[i];
        int c = ocean_randint(&env->rng, n);
        for (int k = 0; k < TF_SPAWN_TRIES && env->height[c] != 0; k++) c = ocean_randint(&env->rng, n);
        *d = (Dozer){.x = c % size, .y = c / size, .mode = TF_FILLING, .goal = -1};
    }
    env->tick = 0;
    tf_write_obs(env);
}

static void c_reset(Terraform *env) { tf_new_episode(env); }

static const int TF_DX[TF_MOVES] = {0, 0, 0, -1, 1};
static const int TF_DY[TF_MOVES] = {0, -1, 1, 0, 0};

static inline int tf_can_enter(const Terraform *env, const Dozer *d, int move) {
    int size = env->cfg.size, nx = d->x + TF_DX[move], ny = d->y + TF_DY[move];
    if (nx < 0 || ny < 0 || nx >= size || ny >= size) return 0;
    if (env->cfg.max_climb >= TF_MAX_HEIGHT) return 1; /* no two heights differ by more: skip the reads */
    return tf_abs(env->height[ny * size + nx] - env->height[d->y * size + d->x]) <= env->cfg.max_climb;
}

/* ---- the scripted greedy dozer (autopilot) ---- */

/* The highest surplus cell, the nearest of equals; -1 when there is none. */
static int tf_highest_surplus(const Terraform *env, const Dozer *d) {
    int size = env->cfg.size, best = -1, best_s = 0, best_dist = 0;
    for (int c = 0; c < size * size; c++) {
        int s = env->height[c] - env->target[c];
        if (s <= 0 || s < best_s) continue;
        int dist = tf_abs(c % size - d->x) + tf_abs(c / size - d->y);
        if (s > best_s || dist < best_dist) best = c, best_s = s, best_dist = dist;
    }
    return best;
}

/* The nearest cell below its target (surplus = 0) or above it (surplus = 1), by rings of growing Manhattan
 * distance (it is usually close); -1: none. A surplus is never the dozer's own cell: it was left as its exit. */
static int tf_nearest(const Terraform *env, const Dozer *d, int surplus) {
    int size = env->cfg.size;
    for (int r = surplus; r <= 2 * size; r++)
        for (int dy = -r; dy <= r; dy++) {
            int dx = r - tf_abs(dy), y = d->y + dy;
            if (y < 0 || y >= size) continue;
            for (int side = 0; side < (dx ? 2 : 1); side++) {
                int x = d->x + (side ? -dx : dx);
                if (x < 0 || x >= size) continue;
                int c = y * size + x;
                if (surplus ? env->height[c] > env->target[c] : env->height[c] < env->target[c]) return c;
            }
        }
    return -1;
}

/* Whether the dozer could still drive off its cell if that cell were `h` high. */
static int tf_has_exit(const Terraform *env, const Dozer *d, int h) {
    int size = env->cfg.size;
    for (int m = 1; m < TF_MOVES; m++) {
        int nx = d->x + TF_DX[m], ny = d->y + TF_DY[m];
        if (nx >= 0 && ny >= 0 && nx < size && ny < size &&
            tf_abs(env->height[ny * size + nx] - h) <= env->cfg.max_climb)
            return 1;
    }
    return 0;
}

static void tf_autopilot(Terraform *env, Dozer *d, int *move, int *bucket) {
    int size = env->cfg.size, cell = d->y * size + d->x, h = env->height[cell], s = h - env->target[cell];
    *move = TF_STAY;
    *bucket = TF_NOTHING;
    if (d->load == 0) d->mode = TF_FILLING;
    if (d->load == env->cfg.capacity) d->mode = TF_EMPTYING;
    /* scoop here unless that would sink the dozer into a pit it cannot climb out of */
    if (d->mode == TF_FILLING && s > 0 && tf_has_exit(env, d, h - 1)) {
        *bucket = TF_SCOOP;
        return;
    }
    if (d->load > 0 && s < 0) {
        *bucket = TF_DUMP;
        return;
    }
    int g = d->goal;
    int valid = g >= 0 && (d->mode == TF_FILLING ? env->height[g] > env->target[g] : env->height[g] < env->target[g]);
    if (!valid && d->mode == TF_FILLING) {
        g = tf_highest_surplus(env, d);
        if (g == cell) g = tf_nearest(env, d, 1); /* its own cell, kept as the dozer's only exit */
        if (g < 0 && d->load > 0) d->mode = TF_EMPTYING; /* nothing left to scoop: deliver what it holds */
    }
    if (!valid && d->mode == TF_EMPTYING) g = tf_nearest(env, d, 0);
    d->goal = g;
    if (g < 0) return;
    int dx = g % size - d->x, dy = g / size - d->y;
    int horizontal = dx > 0 ? TF_RIGHT : TF_LEFT, vertical = dy > 0 ? TF_DOWN : TF_UP;
    int first = tf_abs(dx) >= tf_abs(dy) ? horizontal : vertical, second = first == horizontal ? vertical : horizontal;
    if ((first == horizontal ? dx : dy) != 0 && tf_can_enter(env, d, first)) *move = first;
    else if ((second == horizontal ? dx : dy) != 0 && tf_can_enter(env, d, second)) *move = second;
    else {
        /* blocked by a slope (the highest cell is often a peak no slope leads up to): wander a step and
         * make for the nearest surplus or deficit instead */
        *move = 1 + ocean_randint(&env->rng, 4);
        d->goal = d->mode == TF_FILLING ? tf_nearest(env, d, 1) : tf_nearest(env, d, 0);
        if (d->load > 0 && !tf_has_exit(env, d, h)) *bucket = TF_DUMP; /* in a pit: raise the floor */
    }
}

/* With a thousand maps per core, a map's cells are rarely still in cache when its next step comes: a step
 * first asks for the cell under every dozer, and each dozer asks for its view rows as soon as it has moved,
 * so the loads wait for them all at once rather than for one after another. */
static inline void tf_prefetch_view(const Terraform *env, const Dozer *d) {
    size_t at = (size_t)d->y * (size_t)env->stride + (size_t)d->x, last = (size_t)(2 * env->cfg.vision);
    for (int row = 0; row <= 2 * env->cfg.vision; row++, at += (size_t)env->stride) {
        __builtin_prefetch(env->view + 2 * at);
        __builtin_prefetch(env->view + 2 * (at + last) + 1);
    }
}

static void c_step(Terraform *env) {
    int size = env->cfg.size;
    float unit = env->cfg.reward_per_unit;
    for (int i = 0; i < env->num_agents; i++)
        __builtin_prefetch(env->view + 2 * tf_padded(env, env->dozers[i].x, env->dozers[i].y));
    for (int i = 0; i < env->num_agents; i++) {
        Dozer *d = &env->dozers[i];
        int move, bucket;
        if (env->cfg.autopilot) tf_autopilot(env, d, &move, &bucket);
        else {
            move = ocean_clamp(env->actions[2 * i], TF_MOVES);
            bucket = ocean_clamp(env->actions[2 * i + 1], TF_BUCKET);
        }
        int cell = d->y * size + d->x, h = env->view[2 * tf_padded(env, d->x, d->y)], change = 0;
        if (bucket == TF_SCOOP && h > 0 && d->load < env->cfg.capacity) {
            change = tf_set_height(env, cell, d->x, d->y, h - 1);
            d->load++;
        } else if (bucket == TF_DUMP && h < TF_MAX_HEIGHT && d->load > 0) {
            change = tf_set_height(env, cell, d->x, d->y, h + 1);
            d->load--;
        }
        env->rewards[i] = -unit * (float)change;
        env->terminals[i] = 0;
        env->truncations[i] = 0;
        if (move != TF_STAY && tf_can_enter(env, d, move)) {
            d->x += TF_DX[move];
            d->y += TF_DY[move];
        }
        tf_prefetch_view(env, d); /* for tf_write_obs */
    }
    env->tick++;
    int solved = env->misfit == 0, timeout = !solved && env->tick >= env->cfg.max_steps;
    if (solved || timeout) {
        float removed = (float)(env->start_misfit - env->misfit);
        /* perf stays in [0, 1]: a map made worse than it started counts as no progress */
        float perf = env->start_misfit > 0 ? (removed > 0.0f ? removed / (float)env->start_misfit : 0.0f) : 1.0f;
        for (int i = 0; i < env->num_agents; i++) {
            if (solved) env->rewards[i] += env->cfg.solve_bonus;
            env->terminals[i] = (unsigned char)solved;
            env->truncations[i] = (unsigned char)timeout;
            ocean_log_episode(&env->log, env->dozers[i].ret + env->rewards[i], (float)env->tick, removed, perf);
        }
        tf_new_episode(env);
        return;
    }
    for (int i = 0; i < env->num_agents; i++) env->dozers[i].ret += env->rewards[i];
    tf_write_obs(env);
}

/* ---- rendering ---- */

static inline int tf_scale(const Terraform *env) {
    int s = TF_SCALE_PX / env->cfg.size;
    return s > 1 ? s : 1;
}

static void c_frame_shape(Terraform *env, int *h, int *w) { *h = *w = env->cfg.size * tf_scale(env); }

static void c_render_rgb(Terraform *env, unsigned char *frame) {
    int size = env->cfg.size, s = tf_scale(env), px = size * s;
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            int c = y * size + x, h = env->height[c], t = env->target[c];
            unsigned char rgb[3];
            if (h < t) { /* soil missing: blue */
                rgb[0] = 30, rgb[1] = 70, rgb[2] = 170;
            } else { /* brown, lighter with height; a plateau cell that is done is green */
                int shade = 60 + (h * 180) / TF_MAX_HEIGHT;
                rgb[0] = (unsigned char)(h == t && t > 0 ? 60 : shade);
                rgb[1] = (unsigned char)(h == t && t > 0 ? 170 : (shade * 3) / 4);
                rgb[2] = (unsigned char)(h == t && t > 0 ? 70 : shade / 2);
            }
            ocean_fill_rect(frame, px, px, x * s, y * s, s, s, rgb);
        }
    static const unsigned char dozer_rgb[3] = {250, 210, 40}, loaded_rgb[3] = {240, 120, 20};
    for (int i = 0; i < env->num_agents; i++) {
        const Dozer *d = &env->dozers[i];
        ocean_fill_rect(frame, px, px, d->x * s, d->y * s, s, s, d->load > 0 ? loaded_rgb : dozer_rgb);
    }
}

static int c_render_text(Terraform *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    int size = env->cfg.size;
    ocean_puts(&t, "step ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, "  error ");
    ocean_puti(&t, env->misfit);
    ocean_puts(&t, " of ");
    ocean_puti(&t, env->start_misfit);
    ocean_putc(&t, '\n');
    for (int y = 0; y < size; y++) {
        for (int x = 0; x < size; x++) {
            int c = y * size + x, diff = env->height[c] - env->target[c];
            char ch = diff == 0 ? (env->target[c] ? '=' : '.') : (diff < 0 ? '-' : (char)('0' + (diff < 9 ? diff : 9)));
            for (int i = 0; i < env->num_agents; i++)
                if (env->dozers[i].x == x && env->dozers[i].y == y) ch = 'D';
            ocean_putc(&t, ch);
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}
