/* Craftax: the "classic" Crafter game (Hafner 2021) in C, its rules as the crafter package 1.8.3 states them.
 *
 * A 64x64 world is generated from the env's rng at every reset: grassland with trees round the player's start,
 * lakes ringed with sand, mountains of stone with caves, tunnels, coal, iron, diamonds and lava; cows on the
 * grass, zombies, skeletons in the tunnels. The player keeps health, food, drink and energy up (each 0..9),
 * gathers and crafts (tables and furnaces must be within the 3x3 round the player), places stone, tables,
 * furnaces and saplings, sleeps through the night, and fights zombies (more of them in the dark) and skeletons
 * (which shoot arrows). Reward: +1 on a step that first unlocks any of the 22 achievements in the episode, plus
 * a tenth of the change in health. The episode ends at death (terminal) or after max_steps (truncated).
 *
 * Differences from the reference, on purpose: the terrain noise. Crafter samples OpenSimplex 3D noise
 * (the opensimplex package); this uses 2D simplex noise with the z layer as an offset, scaled so that its
 * values have the spread of OpenSimplex's (std 0.315 over random points), splined from a coarse lattice for
 * the broad octaves (world generation below says why), and this env's rng. Worlds are
 * therefore different worlds drawn from (close to) the same distribution; tests/test_ocean_craftax.py
 * compares resource counts with crafter.Env's over many seeds. Everything else (thresholds, the order of
 * the material rules, creature behaviour and balancing, vitals) follows the reference step for step.
 *
 * The objects (creatures, arrows, saplings) live in a fixed array in the order they were made, as
 * crafter's list keeps them, because that order decides who acts first in a step. */
#include <stdlib.h>
#include "spec.h"
#include "ocean.h"

#define CR_SIZE 64
#define CR_CELLS (CR_SIZE * CR_SIZE)
#define CR_CHUNK 12 /* crafter balances creatures per 12x12 chunk; the last row and column are 4 wide */
#define CR_CHUNKS_1D ((CR_SIZE + CR_CHUNK - 1) / CR_CHUNK)
#define CR_CHUNKS (CR_CHUNKS_1D * CR_CHUNKS_1D)
#define CR_MAX_OBJECTS 512 /* a world holds ~50 creatures; past this, new ones are not made (never seen) */
#define CR_UPDATE_DIST 18  /* objects this far (L1) from the player or farther are frozen, as in crafter */
#define CR_ITEM_MAX 9
#define CR_DAY 300
#define CR_MARK 0xC4AF7A11u

enum { /* materials, with crafter's ids; 0 is outside the map */
       CR_OUT,
       CR_WATER,
       CR_GRASS,
       CR_STONE,
       CR_PATH,
       CR_SAND,
       CR_TREE,
       CR_LAVA,
       CR_COAL,
       CR_IRON,
       CR_DIAMOND,
       CR_TABLE,
       CR_FURNACE
};

enum { CR_NONE, CR_COW, CR_ZOMBIE, CR_SKELETON, CR_ARROW, CR_PLANT }; /* object kinds */

enum { /* inventory slots, in data.yaml's order */
       CR_HEALTH,
       CR_FOOD,
       CR_DRINK,
       CR_ENERGY,
       CR_SAPLING,
       CR_WOOD,
       CR_STONE_ITEM,
       CR_COAL_ITEM,
       CR_IRON_ITEM,
       CR_DIAMOND_ITEM,
       CR_WOOD_PICKAXE,
       CR_STONE_PICKAXE,
       CR_IRON_PICKAXE,
       CR_WOOD_SWORD,
       CR_STONE_SWORD,
       CR_IRON_SWORD
};

enum { /* the 17 actions */
       CR_NOOP,
       CR_MOVE_LEFT,
       CR_MOVE_RIGHT,
       CR_MOVE_UP,
       CR_MOVE_DOWN,
       CR_DO,
       CR_SLEEP,
       CR_PLACE_STONE,
       CR_PLACE_TABLE,
       CR_PLACE_FURNACE,
       CR_PLACE_PLANT,
       CR_MAKE_WOOD_PICKAXE,
       CR_MAKE_STONE_PICKAXE,
       CR_MAKE_IRON_PICKAXE,
       CR_MAKE_WOOD_SWORD,
       CR_MAKE_STONE_SWORD,
       CR_MAKE_IRON_SWORD,
       CR_ACTIONS
};

enum { /* achievements, in data.yaml's (alphabetical) order, which is also the [[log]] order */
       A_COLLECT_COAL,
       A_COLLECT_DIAMOND,
       A_COLLECT_DRINK,
       A_COLLECT_IRON,
       A_COLLECT_SAPLING,
       A_COLLECT_STONE,
       A_COLLECT_WOOD,
       A_DEFEAT_SKELETON,
       A_DEFEAT_ZOMBIE,
       A_EAT_COW,
       A_EAT_PLANT,
       A_MAKE_IRON_PICKAXE,
       A_MAKE_IRON_SWORD,
       A_MAKE_STONE_PICKAXE,
       A_MAKE_STONE_SWORD,
       A_MAKE_WOOD_PICKAXE,
       A_MAKE_WOOD_SWORD,
       A_PLACE_FURNACE,
       A_PLACE_PLANT,
       A_PLACE_STONE,
       A_PLACE_TABLE,
       A_WAKE_UP,
       CR_ACHIEVEMENTS
};

/* facing: left, right, up, down (x grows right, y grows down), crafter's move directions */
static const int8_t CR_DX[4] = {-1, 1, 0, 0}, CR_DY[4] = {0, 0, -1, 1};

typedef struct CraftaxObject {
    uint8_t x, y, kind, dir; /* dir: an arrow's flight, 0..3 as CR_DX */
    int8_t health;
    uint8_t timer;  /* a zombie's attack cooldown, a skeleton's reload */
    int16_t grown;  /* a sapling's age */
} CraftaxObject;

typedef struct CraftaxChunk {
    int16_t grass, path;             /* cells of each material, kept as materials change */
    uint8_t cows, zombies, skeletons; /* live creatures of each kind in the chunk */
    uint8_t seen; /* crafter balances only the chunks an object has ever entered */
} CraftaxChunk;

/* Everything lives in the struct (fixed arrays, no pointers): a saved state is the struct itself. */
typedef struct Craftax {
    OCEAN_SLOTS(uint8_t);
    CraftaxConfig cfg; /* options (spec.toml) */
    /* The game from here on. The tests find it in a saved state by this mark and read and set its fields through
     * a ctypes mirror (tests/test_ocean_craftax.py), so keep every field below 4-byte aligned at most. */
    uint32_t mark;
    int px, py, facing, sleeping;
    int inv[CR_ITEMS];
    int hunger, thirst, recover; /* in half units: crafter adds 0.5 while asleep */
    int fatigue, last_health_player, last_health_reward;
    uint32_t unlocked;  /* achievements unlocked in this episode, one bit each */
    uint32_t achieved;  /* achievements reached on this step (crafter's counters going above 0) */
    int tick, num_objects;
    float daylight, ret;
    CraftaxChunk chunks[CR_CHUNKS];
    uint8_t mat[CR_CELLS];      /* [x * CR_SIZE + y], crafter's (x, y) indexing */
    uint16_t objmap[CR_CELLS];  /* 1 + the slot of the object on the cell, 0 for none */
    CraftaxObject objects[CR_MAX_OBJECTS];
} Craftax;

static int c_init(Craftax *env) {
    (void)env;
    return 0;
}

static void c_close(Craftax *env) { (void)env; }

/* ---- the world: materials, objects, chunks ---- */

static inline int cr_inside(int x, int y) { return x >= 0 && y >= 0 && x < CR_SIZE && y < CR_SIZE; }
static inline int cr_chunk(int x, int y) { return (x / CR_CHUNK) * CR_CHUNKS_1D + y / CR_CHUNK; }
static inline int cr_mat(const Craftax *env, int x, int y) {
    return cr_inside(x, y) ? env->mat[x * CR_SIZE + y] : CR_OUT;
}
static inline CraftaxObject *cr_obj(Craftax *env, int x, int y) {
    if (!cr_inside(x, y)) return NULL;
    int slot = env->objmap[x * CR_SIZE + y];
    return slot ? &env->objects[slot - 1] : NULL;
}

static void cr_set_mat(Craftax *env, int x, int y, int m) {
    uint8_t *cell = &env->mat[x * CR_SIZE + y];
    CraftaxChunk *c = &env->chunks[cr_chunk(x, y)];
    c->grass -= *cell == CR_GRASS;
    c->path -= *cell == CR_PATH;
    *cell = (uint8_t)m;
    c->grass += m == CR_GRASS;
    c->path += m == CR_PATH;
}

static void cr_count(Craftax *env, int x, int y, int kind, int delta) {
    CraftaxChunk *c = &env->chunks[cr_chunk(x, y)];
    if (kind == CR_COW) c->cows = (uint8_t)(c->cows + delta);
    else if (kind == CR_ZOMBIE) c->zombies = (uint8_t)(c->zombies + delta);
    else if (kind == CR_SKELETON) c->skeletons = (uint8_t)(c->skeletons + delta);
    if (delta > 0) c->seen = 1;
}

static CraftaxObject *cr_add(Craftax *env, int x, int y, int kind, int health) {
    if (env->num_objects >= CR_MAX_OBJECTS) return NULL;
    CraftaxObject *o = &env->objects[env->num_objects++];
    *o = (CraftaxObject){(uint8_t)x, (uint8_t)y, (uint8_t)kind, 0, (int8_t)health, 0, 0};
    env->objmap[x * CR_SIZE + y] = (uint16_t)env->num_objects;
    cr_count(env, x, y, kind, 1);
    return o;
}

/* The slot stays (marked CR_NONE) until the end of the step, so the order of the others holds while they act. */
static void cr_remove(Craftax *env, CraftaxObject *o) {
    if (o->kind == CR_NONE) return;
    env->objmap[o->x * CR_SIZE + o->y] = 0;
    cr_count(env, o->x, o->y, o->kind, -1);
    o->kind = CR_NONE;
}

static void cr_compact(Craftax *env) {
    int n = 0;
    for (int i = 0; i < env->num_objects; i++) {
        if (env->objects[i].kind == CR_NONE) continue;
        if (n != i) {
            env->objects[n] = env->objects[i];
            env->objmap[env->objects[n].x * CR_SIZE + env->objects[n].y] = (uint16_t)(n + 1);
        }
        n++;
    }
    env->num_objects = n;
}

static inline int cr_walkable(int m) { return m == CR_GRASS || m == CR_SAND || m == CR_PATH; }
static inline int cr_player_at(const Craftax *env, int x, int y) { return x == env->px && y == env->py; }
static inline int cr_free(Craftax *env, int x, int y) {
    return cr_walkable(cr_mat(env, x, y)) && !cr_obj(env, x, y) && !cr_player_at(env, x, y);
}

/* crafter's Object.move: one cell if it is walkable and empty; a removed object "moves" without moving */
static int cr_move(Craftax *env, CraftaxObject *o, int dx, int dy) {
    int x = o->x + dx, y = o->y + dy;
    if (!cr_free(env, x, y)) return 0;
    if (o->kind == CR_NONE) return 1;
    int slot = env->objmap[o->x * CR_SIZE + o->y];
    env->objmap[o->x * CR_SIZE + o->y] = 0;
    env->objmap[x * CR_SIZE + y] = (uint16_t)slot;
    if (cr_chunk(o->x, o->y) != cr_chunk(x, y)) {
        cr_count(env, o->x, o->y, o->kind, -1);
        cr_count(env, x, y, o->kind, 1);
    }
    o->x = (uint8_t)x;
    o->y = (uint8_t)y;
    return 1;
}

static inline int cr_dist(const Craftax *env, int x, int y) { return abs(x - env->px) + abs(y - env->py); }
static inline int cr_sign(int v) { return (v > 0) - (v < 0); }
static inline float cr_uniform(Craftax *env) { return ocean_randf(&env->rng); }

/* crafter's Object.toward: a unit step to the player along the longer axis (or the shorter one) */
static void cr_toward(const Craftax *env, const CraftaxObject *o, int long_axis, int *dx, int *dy) {
    int ox = env->px - o->x, oy = env->py - o->y;
    int along_x = long_axis ? abs(ox) > abs(oy) : abs(ox) <= abs(oy);
    *dx = along_x ? cr_sign(ox) : 0;
    *dy = along_x ? 0 : cr_sign(oy);
}

static void cr_random_move(Craftax *env, CraftaxObject *o) {
    int d = ocean_randint(&env->rng, 4);
    cr_move(env, o, CR_DX[d], CR_DY[d]);
}

static void cr_hurt_player(Craftax *env, int damage) {
    env->inv[CR_HEALTH] -= damage;
    if (env->inv[CR_HEALTH] < 0) env->inv[CR_HEALTH] = 0;
}

/* ---- terrain noise ---- */

/* 2D simplex noise (Perlin 2001, in Gustavson's formulation) over a per-world permutation. Written here
 * rather than taken from a library: it runs inside the C step loop and must give the same bits in the
 * browser build. */
#define CR_F2 0.36602540378443865f /* (sqrt 3 - 1) / 2 */
#define CR_G2 0.21132486540518713f /* (3 - sqrt 3) / 6 */
#define CR_NOISE_SCALE 0.6747f     /* gives the values OpenSimplex 3D's spread (std 0.315) */

/* a corner's share: its gradient (one of 8, picked by hashing the corner) dotted with the offset, times the
 * falloff (0.5 - r^2)^4, zero past the corner's reach; branch free, as the corners fall either way at random */
static const float CR_GRAD_X[8] = {1, -1, 1, -1, 1, -1, 0, 0}, CR_GRAD_Y[8] = {1, 1, -1, -1, 0, 0, 1, -1};

static inline float cr_corner(const uint8_t *perm, int i, int j, float x, float y) {
    int h = perm[(i + perm[j & 255]) & 255] & 7;
    float t = 0.5f - x * x - y * y;
    t = t > 0.0f ? t : 0.0f;
    t *= t;
    return t * t * (CR_GRAD_X[h] * x + CR_GRAD_Y[h] * y);
}

static inline int cr_floor(float v) {
    int i = (int)v;
    return i - (v < (float)i);
}

static float cr_simplex(const uint8_t *perm, float x, float y) {
    float s = (x + y) * CR_F2;
    int i = cr_floor(x + s), j = cr_floor(y + s);
    float t = (float)(i + j) * CR_G2;
    float x0 = x - ((float)i - t), y0 = y - ((float)j - t);
    int i1 = x0 > y0, j1 = !i1;
    float x1 = x0 - (float)i1 + CR_G2, y1 = y0 - (float)j1 + CR_G2;
    float x2 = x0 - 1.0f + 2.0f * CR_G2, y2 = y0 - 1.0f + 2.0f * CR_G2;
    float n =
        cr_corner(perm, i, j, x0, y0) + cr_corner(perm, i + i1, j + j1, x1, y1) + cr_corner(perm, i + 1, j + 1, x2, y2);
    return 70.0f * CR_NOISE_SCALE * n;
}

/* OpenSimplex's features are wider than simplex noise's at the same input: its correlation between points 0.3,
 * 0.6 and 1.0 apart (0.80, 0.39, 0.0) is simplex's at about 1 / 2.3 of those distances, and 3.0 also brings the
 * spread of the counts from world to world (water, grass, paths) to crafter's. */
#define CR_NOISE_STRETCH 3.0f

/* crafter's _simplex(x, y, z, size): the noise at (x / size, y / size) on layer z; the layers are far apart */
static inline float cr_noise(const uint8_t *perm, float x, float y, int z, float size) {
    float k = 1.0f / (size * CR_NOISE_STRETCH);
    return cr_simplex(perm, x * k + 97.31f * (float)z, y * k + 57.17f * (float)z);
}

/* cr_noise at n points, the same float operations in the same order (so the same bits), arranged so the
 * compiler can run the float work on several points at once: the cell and offsets of every point first, the
 * corners' gradients (the table look-ups, one point at a time) next, then the corners' shares. */
#define CR_BATCH 64

/* cr_corner's share from its gradient (gx, gy), looked up beforehand */
static inline float cr_corner_share(float gx, float gy, float x, float y) {
    float t = 0.5f - x * x - y * y;
    uint32_t bits; /* t > 0 ? t : 0 as a mask on t's bits, which the compiler runs on several points at once */
    memcpy(&bits, &t, 4);
    bits &= -(uint32_t)(t > 0.0f);
    memcpy(&t, &bits, 4);
    t *= t;
    return t * t * (gx * x + gy * y);
}

static void cr_noise_batch(const uint8_t *perm, const float *xs, const float *ys, int n, int z, float size,
                           float *out) {
    float k = 1.0f / (size * CR_NOISE_STRETCH), ox = 97.31f * (float)z, oy = 57.17f * (float)z;
    for (int b = 0; b < n; b += CR_BATCH) {
        int m = n - b < CR_BATCH ? n - b : CR_BATCH;
        int ci[CR_BATCH], cj[CR_BATCH], i1s[CR_BATCH];
        float cx[3][CR_BATCH], cy[3][CR_BATCH], gx[3][CR_BATCH], gy[3][CR_BATCH];
        for (int p = 0; p < m; p++) {
            float x = xs[b + p] * k + ox, y = ys[b + p] * k + oy;
            float s = (x + y) * CR_F2;
            int i = cr_floor(x + s), j = cr_floor(y + s);
            float t = (float)(i + j) * CR_G2;
            float x0 = x - ((float)i - t), y0 = y - ((float)j - t);
            int i1 = x0 > y0, j1 = !i1;
            ci[p] = i, cj[p] = j, i1s[p] = i1;
            cx[0][p] = x0, cy[0][p] = y0;
            cx[1][p] = x0 - (float)i1 + CR_G2, cy[1][p] = y0 - (float)j1 + CR_G2;
            cx[2][p] = x0 - 1.0f + 2.0f * CR_G2, cy[2][p] = y0 - 1.0f + 2.0f * CR_G2;
        }
        for (int p = 0; p < m; p++) {
            int i = ci[p], j = cj[p], i1 = i1s[p];
            int h0 = perm[(i + perm[j & 255]) & 255] & 7, h1 = perm[(i + i1 + perm[(j + !i1) & 255]) & 255] & 7,
                h2 = perm[(i + 1 + perm[(j + 1) & 255]) & 255] & 7;
            gx[0][p] = CR_GRAD_X[h0], gy[0][p] = CR_GRAD_Y[h0];
            gx[1][p] = CR_GRAD_X[h1], gy[1][p] = CR_GRAD_Y[h1];
            gx[2][p] = CR_GRAD_X[h2], gy[2][p] = CR_GRAD_Y[h2];
        }
        float sum[CR_BATCH];
        for (int p = 0; p < m; p++) sum[p] = cr_corner_share(gx[0][p], gy[0][p], cx[0][p], cy[0][p]);
        for (int p = 0; p < m; p++) sum[p] += cr_corner_share(gx[1][p], gy[1][p], cx[1][p], cy[1][p]);
        for (int p = 0; p < m; p++) sum[p] += cr_corner_share(gx[2][p], gy[2][p], cx[2][p], cy[2][p]);
        for (int p = 0; p < m; p++) out[b + p] = 70.0f * CR_NOISE_SCALE * sum[p];
    }
}

/* ---- world generation (crafter's worldgen.py) ---- */

/* The broad octaves (crafter's sizes 15 and 5 of the water and mountain fields) change little from cell to cell,
 * so they are sampled on a lattice (every 6 cells for size 15, every 3 for size 5) and filled in by Catmull-Rom
 * splines: against the noise at every cell the error is 2% of an octave's spread for size 15 and 7% for size 5
 * (whose weight is 0.15 and 0.3), which moves no world statistic the tests see, for a fifth of the samples.
 * The finer octaves are sampled only at the cells whose rule reads them. */
#define CR_LAT_MAX (CR_SIZE / 3 + 4) /* lattice points -1 .. CR_SIZE / step + 2 on each axis, for a step of 3 */

/* Catmull-Rom weights of the four lattice points round a cell t (0 <= t < 1) of the way past the second */
static void cr_spline_weights(float t, float *w) {
    float t2 = t * t, t3 = t2 * t;
    w[0] = -0.5f * t3 + t2 - 0.5f * t;
    w[1] = 1.5f * t3 - 2.5f * t2 + 1.0f;
    w[2] = -1.5f * t3 + 2.0f * t2 + 0.5f * t;
    w[3] = 0.5f * t3 - 0.5f * t2;
}

/* out[x * CR_SIZE + y] += weight * noise(z, size), sampled every `step` cells (3 to 6) and splined */
static void cr_splined_octave(const uint8_t *perm, int z, float size, int step, float weight, float *out) {
    int n = CR_SIZE / step + 4;
    float lat[CR_LAT_MAX][CR_LAT_MAX], cols[CR_LAT_MAX][CR_SIZE], w[6][4];
    float xs[CR_LAT_MAX], ys[CR_LAT_MAX], noise[CR_LAT_MAX];
    for (int j = 0; j < n; j++) ys[j] = (float)((j - 1) * step);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) xs[j] = (float)((i - 1) * step);
        cr_noise_batch(perm, xs, ys, n, z, size, noise);
        for (int j = 0; j < n; j++) lat[i][j] = weight * noise[j];
    }
    for (int r = 0; r < step; r++) cr_spline_weights((float)r / (float)step, w[r]);
    for (int i = 0; i < n; i++) /* along y first: every lattice column at every y */
        for (int j = 0, y = 0; y < CR_SIZE; j++)
            for (int r = 0; r < step && y < CR_SIZE; r++, y++) {
                const float *l = &lat[i][j], *k = w[r];
                cols[i][y] = k[0] * l[0] + k[1] * l[1] + k[2] * l[2] + k[3] * l[3];
            }
    for (int x = 0; x < CR_SIZE; x++) { /* then along x, a whole column at a time */
        const float *k = w[x % step];
        const float *c0 = cols[x / step], *c1 = cols[x / step + 1], *c2 = cols[x / step + 2], *c3 = cols[x / step + 3];
        float *o = &out[x * CR_SIZE];
        for (int y = 0; y < CR_SIZE; y++) o[y] += k[0] * c0[y] + k[1] * c1[y] + k[2] * c2[y] + k[3] * c3[y];
    }
}

/* 1 / (1 + e^-v) for v in [-16, 6], in float: e^-v = 2^k e^r with |r| <= ln2 / 2 and e^r by its Taylor series
 * to the 6th power (relative error below 3e-7). Written here rather than taken from libm because expf's last
 * bits differ between libms and the browser build, and ocean_exp (double, 14 terms) would be a fifth of the
 * world's generation. */
static inline float cr_sigmoid(float v) {
    float a = -v * 1.44269504f, k = (float)cr_floor(a + 0.5f), r = (a - k) * 0.69314718f;
    float e = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    union {
        float f;
        uint32_t u;
    } scale = {.u = (uint32_t)((int)k + 127) << 23};
    return 1.0f / (1.0f + e * scale.f);
}

/* crafter's start field: a sigmoid of 4 - the distance to the player + 2 noise(8, 3), which lifts the grass round
 * the start and pushes water and mountains away. Past a distance of 15 its argument is below -9.6 (the noise is
 * within +-0.68) and the field below 7e-5, so there it is taken as 0 and not sampled. */
#define CR_START_REACH 15

static float cr_start_field(const uint8_t *perm, int x, int y, int px, int py) {
    int d2 = (x - px) * (x - px) + (y - py) * (y - py);
    if (d2 > CR_START_REACH * CR_START_REACH) return 0.0f;
    float start = 4.0f - sqrtf((float)d2) + 2.0f * cr_noise(perm, (float)x, (float)y, 8, 3.0f);
    return cr_sigmoid(start);
}

static void cr_generate(Craftax *env) {
    uint8_t perm[256];
    for (int i = 0; i < 256; i++) perm[i] = (uint8_t)i;
    for (int i = 255; i > 0; i--) {
        int j = ocean_randint(&env->rng, i + 1);
        uint8_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    float waters[CR_CELLS], mountains[CR_CELLS];
    memset(waters, 0, sizeof waters);
    memset(mountains, 0, sizeof mountains);
    cr_splined_octave(perm, 3, 15.0f, 6, 1.0f, waters);
    cr_splined_octave(perm, 3, 5.0f, 3, 0.15f, waters);
    cr_splined_octave(perm, 0, 15.0f, 6, 1.0f / 1.3f, mountains);
    cr_splined_octave(perm, 0, 5.0f, 3, 0.3f / 1.3f, mountains);
    /* The rules in crafter's order; where a rule asks for noise and a coin, the coin is tossed first (the same
     * odds, the noise sampled only for the cells whose coin came up). A column of cells at a time: first the
     * noise its rules read whatever the coins say, batched (cr_noise_batch) for the cells that reach each rule,
     * then the rules cell by cell, tossing the coins in crafter's order. The lava noise is sampled for every
     * cell that could reach its rule, a few more than the coins let through. */
    int px = env->px, py = env->py;
    for (int x = 0; x < CR_SIZE; x++) {
        float fx = (float)x, start[CR_SIZE], water[CR_SIZE], mountain[CR_SIZE];
        float cave[CR_SIZE], tunnel1[CR_SIZE], tunnel2[CR_SIZE], lava[CR_SIZE], sand[CR_SIZE];
        float xs[CR_SIZE], ys[CR_SIZE], noise[CR_SIZE];
        int at[CR_SIZE], n = 0;
        /* crafter's start field (cr_start_field says why it stops at CR_START_REACH) */
        for (int y = 0; y < CR_SIZE; y++) {
            int d2 = (x - px) * (x - px) + (y - py) * (y - py);
            start[y] = 0.0f;
            if (d2 > CR_START_REACH * CR_START_REACH) continue;
            xs[n] = fx, ys[n] = (float)y, at[n++] = y;
        }
        cr_noise_batch(perm, xs, ys, n, 8, 3.0f, noise);
        for (int q = 0; q < n; q++) {
            int y = at[q], d2 = (x - px) * (x - px) + (y - py) * (y - py);
            start[y] = cr_sigmoid(4.0f - sqrtf((float)d2) + 2.0f * noise[q]);
        }
        for (int y = 0; y < CR_SIZE; y++) {
            water[y] = waters[x * CR_SIZE + y] + 0.1f - 2.0f * start[y];
            mountain[y] = mountains[x * CR_SIZE + y] - 4.0f * start[y] - 0.3f * water[y];
        }
        /* caves: mountain cells above 0.3 */
        n = 0;
        for (int y = 0; y < CR_SIZE; y++)
            if (!(start[y] > 0.5f) && mountain[y] > 0.3f) xs[n] = fx, ys[n] = (float)y, at[n++] = y;
        cr_noise_batch(perm, xs, ys, n, 6, 7.0f, noise);
        for (int q = 0; q < n; q++) cave[at[q]] = noise[q];
        /* the two tunnel fields: mountain cells that are no cave, then those not in the first field's tunnels */
        n = 0;
        for (int y = 0; y < CR_SIZE; y++)
            if (!(start[y] > 0.5f) && mountain[y] > 0.15f && !(mountain[y] > 0.3f && cave[y] > 0.15f))
                xs[n] = 2.0f * fx, ys[n] = (float)y / 5.0f, at[n++] = y;
        cr_noise_batch(perm, xs, ys, n, 7, 3.0f, noise);
        for (int y = 0; y < CR_SIZE; y++) tunnel1[y] = 0.0f;
        for (int q = 0; q < n; q++) tunnel1[at[q]] = noise[q];
        int m2 = 0;
        for (int q = 0; q < n; q++)
            if (!(noise[q] > 0.4f)) xs[m2] = fx / 5.0f, ys[m2] = 2.0f * (float)at[q], at[m2++] = at[q];
        cr_noise_batch(perm, xs, ys, m2, 7, 3.0f, noise);
        for (int y = 0; y < CR_SIZE; y++) tunnel2[y] = 0.0f;
        for (int q = 0; q < m2; q++) tunnel2[at[q]] = noise[q];
        /* lava: mountain cells above 0.3 that are no cave or tunnel (the coins for coal, iron and diamond come
         * between, so some of these are not read) */
        n = 0;
        for (int y = 0; y < CR_SIZE; y++)
            if (!(start[y] > 0.5f) && mountain[y] > 0.3f && !(cave[y] > 0.15f) && !(tunnel1[y] > 0.4f) &&
                !(tunnel2[y] > 0.4f))
                xs[n] = fx, ys[n] = (float)y, at[n++] = y;
        cr_noise_batch(perm, xs, ys, n, 6, 5.0f, noise);
        for (int q = 0; q < n; q++) lava[at[q]] = noise[q];
        /* sand: the shore band of the water field outside the mountains */
        n = 0;
        for (int y = 0; y < CR_SIZE; y++)
            if (!(start[y] > 0.5f) && !(mountain[y] > 0.15f) && water[y] > 0.25f && water[y] <= 0.35f)
                xs[n] = fx, ys[n] = (float)y, at[n++] = y;
        cr_noise_batch(perm, xs, ys, n, 4, 9.0f, noise);
        for (int q = 0; q < n; q++) sand[at[q]] = noise[q];
        for (int y = 0; y < CR_SIZE; y++) {
            float fy = (float)y, mt = mountain[y];
            int m, tunnel = 0;
            if (start[y] > 0.5f) m = CR_GRASS;
            else if (mt > 0.15f) {
                if (mt > 0.3f && cave[y] > 0.15f) m = CR_PATH; /* cave */
                else if (tunnel1[y] > 0.4f) m = CR_PATH, tunnel = 1;
                else if (tunnel2[y] > 0.4f) m = CR_PATH, tunnel = 1;
                else if (cr_uniform(env) > 0.85f && cr_noise(perm, fx, fy, 1, 8.0f) > 0.0f) m = CR_COAL;
                else if (cr_uniform(env) > 0.75f && cr_noise(perm, fx, fy, 2, 6.0f) > 0.4f) m = CR_IRON;
                else if (mt > 0.18f && cr_uniform(env) > 0.994f) m = CR_DIAMOND;
                else if (mt > 0.3f && lava[y] > 0.35f) m = CR_LAVA;
                else m = CR_STONE;
            } else if (water[y] > 0.25f && water[y] <= 0.35f && sand[y] > -0.2f) m = CR_SAND;
            else if (water[y] > 0.3f) m = CR_WATER;
            else if (cr_uniform(env) > 0.8f && cr_noise(perm, fx, fy, 5, 7.0f) > 0.0f) m = CR_TREE;
            else m = CR_GRASS;
            env->mat[x * CR_SIZE + y] = (uint8_t)m;
            CraftaxChunk *c = &env->chunks[cr_chunk(x, y)]; /* the census, which cr_set_mat keeps from here on */
            c->grass += m == CR_GRASS;
            c->path += m == CR_PATH;
            /* the creatures: crafter places them in a second pass over the cells, in the same order, each by its
             * own cell alone, so they can be placed as the cells are made (only the rng draws interleave) */
            if (!cr_walkable(m) || (x == px && y == py)) continue;
            int d2 = (x - px) * (x - px) + (y - py) * (y - py); /* distance > 3: d2 > 9 */
            if (d2 > 9 && m == CR_GRASS && cr_uniform(env) > 0.985f) cr_add(env, x, y, CR_COW, 3);
            else if (d2 > 100 && cr_uniform(env) > 0.993f) cr_add(env, x, y, CR_ZOMBIE, 5);
            else if (m == CR_PATH && tunnel && cr_uniform(env) > 0.95f) cr_add(env, x, y, CR_SKELETON, 3);
        }
    }
}

/* ---- the observation ---- */

#define CR_OBS_MATERIALS 0
#define CR_OBS_OBJECTS (CR_VIEW_W * CR_VIEW_H * CR_MATERIALS)
#define CR_OBS_INVENTORY (CR_OBS_OBJECTS + CR_VIEW_W * CR_VIEW_H * CR_OBJECTS)
#define CR_OBS_FACING (CR_OBS_INVENTORY + CR_ITEMS)
#define CR_OBS_SLEEPING (CR_OBS_FACING + 4)
#define CR_OBS_DAYLIGHT (CR_OBS_SLEEPING + 1)
#define CR_OBS_SIZE (CR_OBS_DAYLIGHT + 1)

/* the object channel of a cell: 0 for none, else 1 + its index in the one-hot */
static inline int cr_obj_code(const CraftaxObject *o) {
    switch (o->kind) {
    case CR_COW:
        return 1;
    case CR_ZOMBIE:
        return 2;
    case CR_SKELETON:
        return 3;
    case CR_ARROW:
        return 4 + o->dir;
    case CR_PLANT:
        return o->grown > 300 ? 9 : 8;
    default:
        return 0;
    }
}

/* One-hot rows 16 bytes wide, so each cell is one 16-byte copy: a row runs past its cell into the next one's
 * (or, for the last cell, into the next section), which is written after it, so nothing needs clearing first. */
static const uint8_t CR_ONE_HOT[CR_MATERIALS + 1][16] = {{1},
                                                         {0, 1},
                                                         {0, 0, 1},
                                                         {0, 0, 0, 1},
                                                         {0, 0, 0, 0, 1},
                                                         {0, 0, 0, 0, 0, 1},
                                                         {0, 0, 0, 0, 0, 0, 1},
                                                         {0, 0, 0, 0, 0, 0, 0, 1},
                                                         {0, 0, 0, 0, 0, 0, 0, 0, 1},
                                                         {0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
                                                         {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
                                                         {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
                                                         {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
                                                         {0}}; /* the last row: all zero (no object) */

static void cr_write_obs(Craftax *env) {
    uint8_t *o = env->observations;
    int x0 = env->px - CR_VIEW_W / 2, y0 = env->py - CR_VIEW_H / 2;
    if (x0 >= 0 && y0 >= 0 && x0 + CR_VIEW_W <= CR_SIZE && y0 + CR_VIEW_H <= CR_SIZE) {
        /* the view inside the map (nearly always): no bounds to check */
        /* cells in the observation's order, as each copy runs into the next cell */
        const uint8_t *mat = &env->mat[x0 * CR_SIZE + y0];
        for (int r = 0; r < CR_VIEW_H; r++)
            for (int c = 0; c < CR_VIEW_W; c++)
                memcpy(&o[CR_OBS_MATERIALS + (r * CR_VIEW_W + c) * CR_MATERIALS], CR_ONE_HOT[mat[c * CR_SIZE + r]], 16);
        for (int r = 0; r < CR_VIEW_H; r++)
            for (int c = 0; c < CR_VIEW_W; c++) {
                int slot = env->objmap[(x0 + c) * CR_SIZE + y0 + r];
                int code = slot ? cr_obj_code(&env->objects[slot - 1]) : 0; /* the one-hot's index + 1, 0: none */
                memcpy(&o[CR_OBS_OBJECTS + (r * CR_VIEW_W + c) * CR_OBJECTS],
                       CR_ONE_HOT[code ? code - 1 : CR_MATERIALS], 16);
            }
    } else {
        for (int r = 0; r < CR_VIEW_H; r++)
            for (int c = 0; c < CR_VIEW_W; c++) {
                int x = x0 + c, y = y0 + r, cell = r * CR_VIEW_W + c;
                memcpy(&o[CR_OBS_MATERIALS + cell * CR_MATERIALS], CR_ONE_HOT[cr_mat(env, x, y)], 16);
            }
        for (int r = 0; r < CR_VIEW_H; r++)
            for (int c = 0; c < CR_VIEW_W; c++) {
                int x = x0 + c, y = y0 + r, cell = r * CR_VIEW_W + c;
                const CraftaxObject *ob = cr_obj(env, x, y);
                int code = ob ? cr_obj_code(ob) : 0;
                memcpy(&o[CR_OBS_OBJECTS + cell * CR_OBJECTS], CR_ONE_HOT[code ? code - 1 : CR_MATERIALS], 16);
            }
    }
    for (int i = 0; i < CR_ITEMS; i++) o[CR_OBS_INVENTORY + i] = (uint8_t)env->inv[i];
    memset(&o[CR_OBS_FACING], 0, 4);
    o[CR_OBS_FACING + env->facing] = 1;
    o[CR_OBS_SLEEPING] = (uint8_t)env->sleeping;
    o[CR_OBS_DAYLIGHT] = (uint8_t)(9.0f * env->daylight + 0.5f);
}

/* crafter's _update_time: daylight = 1 - |cos(pi * ((step / 300) % 1 + 0.3))|^3 */
static void cr_update_time(Craftax *env) {
    float progress = (float)(env->tick % CR_DAY) / (float)CR_DAY + 0.3f;
    float c = fabsf(cosf(3.14159265f * progress));
    env->daylight = 1.0f - c * c * c;
}

static void cr_new_game(Craftax *env) {
    memset(env->chunks, 0, sizeof env->chunks);
    memset(env->mat, 0, sizeof env->mat);
    memset(env->objmap, 0, sizeof env->objmap);
    env->num_objects = 0;
    env->mark = CR_MARK;
    env->px = env->py = CR_SIZE / 2;
    env->facing = 3; /* crafter's player starts facing down */
    env->sleeping = 0;
    static const int initial[CR_ITEMS] = {9, 9, 9, 9};
    memcpy(env->inv, initial, sizeof env->inv);
    env->hunger = env->thirst = env->recover = env->fatigue = 0;
    env->last_health_player = env->last_health_reward = env->inv[CR_HEALTH];
    env->unlocked = env->achieved = 0;
    env->tick = 0;
    env->ret = 0.0f;
    env->chunks[cr_chunk(env->px, env->py)].seen = 1; /* the player is an object in crafter's chunks too */
    cr_update_time(env);
    cr_generate(env);
    cr_write_obs(env);
}

static void c_reset(Craftax *env) { cr_new_game(env); }

/* ---- the player (crafter's Player.update) ---- */

static inline void cr_achieve(Craftax *env, int a) { env->achieved |= 1u << a; }

/* crafter's world.nearby(pos, 1): the materials of the 3x3 round the player. Its numpy slice starts at x - 1,
 * which at x = 0 is -1 and makes the slice empty, so nothing is near a player on the top or left edge. */
static int cr_near(const Craftax *env, int m) {
    if (env->px == 0 || env->py == 0) return 0;
    for (int x = env->px - 1; x <= env->px + 1; x++)
        for (int y = env->py - 1; y <= env->py + 1; y++)
            if (cr_inside(x, y) && env->mat[x * CR_SIZE + y] == m) return 1;
    return 0;
}

static void cr_do_object(Craftax *env, CraftaxObject *o) {
    int damage = 1;
    if (env->inv[CR_WOOD_SWORD] && damage < 2) damage = 2;
    if (env->inv[CR_STONE_SWORD] && damage < 3) damage = 3;
    if (env->inv[CR_IRON_SWORD]) damage = 5;
    if (o->kind == CR_PLANT) {
        if (o->grown > 300) {
            o->grown = 0;
            env->inv[CR_FOOD] += 4;
            cr_achieve(env, A_EAT_PLANT);
        }
        return;
    }
    if (o->kind != CR_ZOMBIE && o->kind != CR_SKELETON && o->kind != CR_COW) return;
    o->health = (int8_t)(o->health - damage < 0 ? 0 : o->health - damage);
    if (o->health > 0) return;
    if (o->kind == CR_ZOMBIE) cr_achieve(env, A_DEFEAT_ZOMBIE);
    if (o->kind == CR_SKELETON) cr_achieve(env, A_DEFEAT_SKELETON);
    if (o->kind == CR_COW) {
        env->inv[CR_FOOD] += 6;
        cr_achieve(env, A_EAT_COW);
        env->hunger = 0;
    }
}

static void cr_do_material(Craftax *env, int x, int y, int m) {
    if (m == CR_WATER) env->thirst = 0;
    int need = -1, leaves = CR_PATH, item = -1, ach = -1;
    switch (m) {
    case CR_TREE:
        leaves = CR_GRASS, item = CR_WOOD, ach = A_COLLECT_WOOD;
        break;
    case CR_STONE:
        need = CR_WOOD_PICKAXE, item = CR_STONE_ITEM, ach = A_COLLECT_STONE;
        break;
    case CR_COAL:
        need = CR_WOOD_PICKAXE, item = CR_COAL_ITEM, ach = A_COLLECT_COAL;
        break;
    case CR_IRON:
        need = CR_STONE_PICKAXE, item = CR_IRON_ITEM, ach = A_COLLECT_IRON;
        break;
    case CR_DIAMOND:
        need = CR_IRON_PICKAXE, item = CR_DIAMOND_ITEM, ach = A_COLLECT_DIAMOND;
        break;
    case CR_WATER:
        leaves = CR_WATER, item = CR_DRINK, ach = A_COLLECT_DRINK;
        break;
    case CR_GRASS:
        leaves = CR_GRASS, item = CR_SAPLING, ach = A_COLLECT_SAPLING;
        break;
    default:
        return;
    }
    if (need >= 0 && env->inv[need] < 1) return;
    cr_set_mat(env, x, y, leaves);
    if (m == CR_GRASS && cr_uniform(env) > 0.1f) return; /* a sapling one time in ten */
    env->inv[item] += 1;
    cr_achieve(env, ach);
}

static void cr_place(Craftax *env, int action, int x, int y, int m) {
    if (cr_obj(env, x, y)) return;
    int on_ground = m == CR_GRASS || m == CR_SAND || m == CR_PATH;
    switch (action) {
    case CR_PLACE_STONE:
        if (!(on_ground || m == CR_WATER || m == CR_LAVA) || env->inv[CR_STONE_ITEM] < 1) return;
        env->inv[CR_STONE_ITEM] -= 1;
        cr_set_mat(env, x, y, CR_STONE);
        cr_achieve(env, A_PLACE_STONE);
        return;
    case CR_PLACE_TABLE:
        if (!on_ground || env->inv[CR_WOOD] < 2) return;
        env->inv[CR_WOOD] -= 2;
        cr_set_mat(env, x, y, CR_TABLE);
        cr_achieve(env, A_PLACE_TABLE);
        return;
    case CR_PLACE_FURNACE:
        if (!on_ground || env->inv[CR_STONE_ITEM] < 4) return;
        env->inv[CR_STONE_ITEM] -= 4;
        cr_set_mat(env, x, y, CR_FURNACE);
        cr_achieve(env, A_PLACE_FURNACE);
        return;
    case CR_PLACE_PLANT:
        if (m != CR_GRASS || env->inv[CR_SAPLING] < 1) return;
        if (!cr_add(env, x, y, CR_PLANT, 1)) return;
        env->inv[CR_SAPLING] -= 1;
        cr_achieve(env, A_PLACE_PLANT);
        return;
    }
}

static void cr_make(Craftax *env, int action) {
    int iron = action == CR_MAKE_IRON_PICKAXE || action == CR_MAKE_IRON_SWORD;
    int stone = action == CR_MAKE_STONE_PICKAXE || action == CR_MAKE_STONE_SWORD;
    if (!cr_near(env, CR_TABLE) || (iron && !cr_near(env, CR_FURNACE))) return;
    if (env->inv[CR_WOOD] < 1 || (stone && env->inv[CR_STONE_ITEM] < 1)) return;
    if (iron && (env->inv[CR_COAL_ITEM] < 1 || env->inv[CR_IRON_ITEM] < 1)) return;
    env->inv[CR_WOOD] -= 1;
    if (stone) env->inv[CR_STONE_ITEM] -= 1;
    if (iron) env->inv[CR_COAL_ITEM] -= 1, env->inv[CR_IRON_ITEM] -= 1;
    static const int made[6] = {CR_WOOD_PICKAXE, CR_STONE_PICKAXE, CR_IRON_PICKAXE,
                                CR_WOOD_SWORD,   CR_STONE_SWORD,   CR_IRON_SWORD};
    static const int ach[6] = {A_MAKE_WOOD_PICKAXE, A_MAKE_STONE_PICKAXE, A_MAKE_IRON_PICKAXE,
                               A_MAKE_WOOD_SWORD,   A_MAKE_STONE_SWORD,   A_MAKE_IRON_SWORD};
    int k = action - CR_MAKE_WOOD_PICKAXE;
    env->inv[made[k]] += 1;
    cr_achieve(env, ach[k]);
}

static void cr_player_update(Craftax *env, int action) {
    int tx = env->px + CR_DX[env->facing], ty = env->py + CR_DY[env->facing];
    if (env->sleeping) {
        if (env->inv[CR_ENERGY] < CR_ITEM_MAX) action = CR_SLEEP;
        else {
            env->sleeping = 0;
            cr_achieve(env, A_WAKE_UP);
        }
    }
    if (action >= CR_MOVE_LEFT && action <= CR_MOVE_DOWN) {
        env->facing = action - CR_MOVE_LEFT;
        int x = env->px + CR_DX[env->facing], y = env->py + CR_DY[env->facing];
        int m = cr_mat(env, x, y);
        if ((cr_walkable(m) || m == CR_LAVA) && !cr_obj(env, x, y)) {
            env->px = x;
            env->py = y;
        }
        if (cr_mat(env, env->px, env->py) == CR_LAVA) env->inv[CR_HEALTH] = 0;
    } else if (action == CR_DO) {
        CraftaxObject *o = cr_obj(env, tx, ty);
        if (o) cr_do_object(env, o);
        else cr_do_material(env, tx, ty, cr_mat(env, tx, ty));
    } else if (action == CR_SLEEP) {
        if (env->inv[CR_ENERGY] < CR_ITEM_MAX) env->sleeping = 1;
    } else if (action >= CR_PLACE_STONE && action <= CR_PLACE_PLANT) {
        cr_place(env, action, tx, ty, cr_mat(env, tx, ty));
    } else if (action >= CR_MAKE_WOOD_PICKAXE) {
        cr_make(env, action);
    }
    /* life stats: hunger and thirst count half as fast asleep, fatigue falls asleep and rises awake */
    env->hunger += env->sleeping ? 1 : 2;
    if (env->hunger > 50) env->hunger = 0, env->inv[CR_FOOD] -= 1;
    env->thirst += env->sleeping ? 1 : 2;
    if (env->thirst > 40) env->thirst = 0, env->inv[CR_DRINK] -= 1;
    if (env->sleeping) env->fatigue = env->fatigue - 1 < 0 ? env->fatigue - 1 : 0;
    else env->fatigue += 1;
    if (env->fatigue < -10) env->fatigue = 0, env->inv[CR_ENERGY] += 1;
    if (env->fatigue > 30) env->fatigue = 0, env->inv[CR_ENERGY] -= 1;
    /* health recovers while fed, watered and rested (or asleep), and drains otherwise */
    int fine = env->inv[CR_FOOD] > 0 && env->inv[CR_DRINK] > 0 && (env->inv[CR_ENERGY] > 0 || env->sleeping);
    if (fine) env->recover += env->sleeping ? 4 : 2;
    else env->recover -= env->sleeping ? 1 : 2;
    if (env->recover > 50) env->recover = 0, env->inv[CR_HEALTH] += 1;
    if (env->recover < -30) env->recover = 0, env->inv[CR_HEALTH] -= 1;
    for (int i = 0; i < CR_ITEMS; i++)
        env->inv[i] = env->inv[i] < 0 ? 0 : (env->inv[i] > CR_ITEM_MAX ? CR_ITEM_MAX : env->inv[i]);
    if (env->inv[CR_HEALTH] < env->last_health_player) env->sleeping = 0; /* woken by harm */
    env->last_health_player = env->inv[CR_HEALTH];
}

/* ---- the other objects (crafter's Cow, Zombie, Skeleton, Arrow, Plant) ---- */

static void cr_update_object(Craftax *env, CraftaxObject *o) {
    int dx, dy;
    switch (o->kind) {
    case CR_COW:
        if (o->health <= 0) cr_remove(env, o);
        if (cr_uniform(env) < 0.5f) cr_random_move(env, o);
        return;
    case CR_ZOMBIE: {
        /* a zombie removed here (killed this step) still moves "in place" and may strike once more, as in crafter */
        if (o->health <= 0) cr_remove(env, o);
        if (cr_dist(env, o->x, o->y) <= 8 && cr_uniform(env) < 0.9f) {
            cr_toward(env, o, cr_uniform(env) < 0.8f, &dx, &dy);
            cr_move(env, o, dx, dy);
        } else cr_random_move(env, o);
        if (cr_dist(env, o->x, o->y) <= 1) {
            if (o->timer) o->timer--;
            else {
                cr_hurt_player(env, env->sleeping ? 7 : 2);
                o->timer = 5;
            }
        }
        return;
    }
    case CR_SKELETON: {
        if (o->health <= 0) cr_remove(env, o);
        if (o->timer) o->timer--;
        int dist = cr_dist(env, o->x, o->y);
        if (dist <= 3) {
            cr_toward(env, o, cr_uniform(env) < 0.6f, &dx, &dy);
            if (cr_move(env, o, -dx, -dy)) return;
        }
        if (dist <= 5 && cr_uniform(env) < 0.5f) {
            cr_toward(env, o, 1, &dx, &dy);
            if (o->timer || (dx == 0 && dy == 0)) return;
            int x = o->x + dx, y = o->y + dy, m = cr_mat(env, x, y);
            int open = cr_walkable(m) || m == CR_WATER || m == CR_LAVA;
            if (!open || cr_obj(env, x, y) || cr_player_at(env, x, y)) return;
            CraftaxObject *arrow = cr_add(env, x, y, CR_ARROW, 0);
            if (arrow) arrow->dir = (uint8_t)(dx ? (dx < 0 ? 0 : 1) : (dy < 0 ? 2 : 3));
            o->timer = 4;
        } else if (dist <= 8 && cr_uniform(env) < 0.3f) {
            cr_toward(env, o, cr_uniform(env) < 0.6f, &dx, &dy);
            cr_move(env, o, dx, dy);
        } else if (cr_uniform(env) < 0.2f) cr_random_move(env, o);
        return;
    }
    case CR_ARROW: {
        int x = o->x + CR_DX[o->dir], y = o->y + CR_DY[o->dir], m = cr_mat(env, x, y);
        CraftaxObject *hit = cr_obj(env, x, y);
        if (cr_player_at(env, x, y)) {
            cr_hurt_player(env, 2);
            cr_remove(env, o);
        } else if (hit) {
            hit->health = (int8_t)(hit->health - 2 < 0 ? 0 : hit->health - 2);
            cr_remove(env, o);
        } else if (!(cr_walkable(m) || m == CR_WATER || m == CR_LAVA)) {
            cr_remove(env, o);
            if (m == CR_TABLE || m == CR_FURNACE) cr_set_mat(env, x, y, CR_PATH); /* arrows break them */
        } else {
            /* arrows fly over water and lava too: crafter's Arrow.walkable includes them */
            int slot = env->objmap[o->x * CR_SIZE + o->y];
            env->objmap[o->x * CR_SIZE + o->y] = 0;
            env->objmap[x * CR_SIZE + y] = (uint16_t)slot;
            o->x = (uint8_t)x;
            o->y = (uint8_t)y;
        }
        return;
    }
    case CR_PLANT: {
        if (o->grown < 30000) o->grown++;
        for (int d = 0; d < 4; d++) {
            const CraftaxObject *n = cr_obj(env, o->x + CR_DX[d], o->y + CR_DY[d]);
            if (n && (n->kind == CR_ZOMBIE || n->kind == CR_SKELETON || n->kind == CR_COW)) {
                o->health--;
                break;
            }
        }
        if (o->health <= 0) cr_remove(env, o);
        return;
    }
    }
}

/* ---- creature balance (crafter's Env._balance_chunk), every 10 steps ---- */

static void cr_balance(Craftax *env, int chunk, int kind, int count, int space, float lo, float hi, int spawn_dist,
                       int despawn_dist, float spawn_prob, float despawn_prob, int material) {
    int x0 = (chunk / CR_CHUNKS_1D) * CR_CHUNK, y0 = (chunk % CR_CHUNKS_1D) * CR_CHUNK;
    int x1 = x0 + CR_CHUNK > CR_SIZE ? CR_SIZE : x0 + CR_CHUNK, y1 = y0 + CR_CHUNK > CR_SIZE ? CR_SIZE : y0 + CR_CHUNK;
    if (count < (int)lo && cr_uniform(env) < spawn_prob) {
        int pick = ocean_randint(&env->rng, space), seen = 0;
        for (int x = x0; x < x1; x++)
            for (int y = y0; y < y1; y++) {
                if (env->mat[x * CR_SIZE + y] != material || seen++ != pick) continue;
                if (!cr_obj(env, x, y) && !cr_player_at(env, x, y) && cr_dist(env, x, y) >= spawn_dist)
                    cr_add(env, x, y, kind, kind == CR_ZOMBIE ? 5 : 3);
            }
    } else if (count > (int)hi && cr_uniform(env) < despawn_prob) {
        int pick = ocean_randint(&env->rng, count), seen = 0;
        for (int i = 0; i < env->num_objects; i++) {
            CraftaxObject *o = &env->objects[i];
            if (o->kind != kind || cr_chunk(o->x, o->y) != chunk || seen++ != pick) continue;
            if (cr_dist(env, o->x, o->y) >= despawn_dist) cr_remove(env, o);
        }
    }
}

static void cr_balance_all(Craftax *env) {
    float light = env->daylight;
    for (int c = 0; c < CR_CHUNKS; c++) {
        CraftaxChunk *ch = &env->chunks[c];
        if (!ch->seen) continue;
        cr_balance(env, c, CR_ZOMBIE, ch->zombies, ch->grass, ch->grass < 50 ? 0.0f : 3.5f - 3.0f * light,
                   3.5f - 3.0f * light, 6, 0, 0.3f, 0.4f, CR_GRASS);
        cr_balance(env, c, CR_SKELETON, ch->skeletons, ch->path, ch->path < 6 ? 0.0f : 1.0f, 2.0f, 7, 7, 0.1f, 0.1f,
                   CR_PATH);
        cr_balance(env, c, CR_COW, ch->cows, ch->grass, ch->grass < 30 ? 0.0f : 1.0f, 1.5f + light, 5, 5, 0.01f, 0.1f,
                   CR_GRASS);
    }
}

/* ---- the scripted player ---- */

/* The nearest cell (L1, inside the view) holding material m or an object of kind k (k = 0: material only). */
static int cr_find(const Craftax *env, int m, int kind, int *fx, int *fy) {
    int best = 1 << 30;
    for (int dx = -CR_VIEW_W / 2; dx <= CR_VIEW_W / 2; dx++)
        for (int dy = -CR_VIEW_H / 2; dy <= CR_VIEW_H / 2; dy++) {
            int x = env->px + dx, y = env->py + dy, d = abs(dx) + abs(dy);
            if (!cr_inside(x, y) || d >= best || d == 0) continue;
            int slot = env->objmap[x * CR_SIZE + y];
            int hit = kind ? slot && env->objects[slot - 1].kind == kind : env->mat[x * CR_SIZE + y] == m;
            if (!hit) continue;
            best = d;
            *fx = x;
            *fy = y;
        }
    return best < (1 << 30);
}

/* Step towards (x, y); when next to it, face it and act. Returns the action. */
static int cr_go(const Craftax *env, int x, int y, int act) {
    int dx = x - env->px, dy = y - env->py;
    if (abs(dx) + abs(dy) == 1) {
        int want = dx < 0 ? 0 : dx > 0 ? 1 : dy < 0 ? 2 : 3;
        return want == env->facing ? act : CR_MOVE_LEFT + want;
    }
    if (abs(dx) >= abs(dy) && dx) {
        int m = cr_mat(env, env->px + cr_sign(dx), env->py);
        if (cr_walkable(m)) return dx < 0 ? CR_MOVE_LEFT : CR_MOVE_RIGHT;
    }
    if (dy) return dy < 0 ? CR_MOVE_UP : CR_MOVE_DOWN;
    return dx < 0 ? CR_MOVE_LEFT : CR_MOVE_RIGHT;
}

static int cr_autopilot(Craftax *env) {
    const int *inv = env->inv;
    int x, y;
    if (cr_find(env, 0, CR_ZOMBIE, &x, &y) && abs(x - env->px) + abs(y - env->py) <= 2) return cr_go(env, x, y, CR_DO);
    if (inv[CR_ENERGY] < 3 || (env->sleeping && inv[CR_ENERGY] < CR_ITEM_MAX)) return CR_SLEEP;
    if (inv[CR_DRINK] < 5 && cr_find(env, CR_WATER, 0, &x, &y)) return cr_go(env, x, y, CR_DO);
    if (inv[CR_FOOD] < 5 && cr_find(env, 0, CR_COW, &x, &y)) return cr_go(env, x, y, CR_DO);
    int table = cr_near(env, CR_TABLE);
    if (table && inv[CR_WOOD] >= 1 && !inv[CR_WOOD_PICKAXE]) return CR_MAKE_WOOD_PICKAXE;
    if (table && inv[CR_WOOD] >= 1 && !inv[CR_WOOD_SWORD]) return CR_MAKE_WOOD_SWORD;
    if (table && inv[CR_WOOD] >= 1 && inv[CR_STONE_ITEM] >= 1 && !inv[CR_STONE_PICKAXE]) return CR_MAKE_STONE_PICKAXE;
    if (table && inv[CR_WOOD] >= 1 && inv[CR_STONE_ITEM] >= 1 && !inv[CR_STONE_SWORD]) return CR_MAKE_STONE_SWORD;
    if (!table && inv[CR_WOOD] >= 2 && !cr_find(env, CR_TABLE, 0, &x, &y)) return CR_PLACE_TABLE;
    if (!table && inv[CR_WOOD] >= 1 && cr_find(env, CR_TABLE, 0, &x, &y)) return cr_go(env, x, y, CR_NOOP);
    if (inv[CR_SAPLING] && cr_mat(env, env->px + CR_DX[env->facing], env->py + CR_DY[env->facing]) == CR_GRASS)
        return CR_PLACE_PLANT;
    if (inv[CR_WOOD_PICKAXE] && inv[CR_STONE_ITEM] < 3 && cr_find(env, CR_STONE, 0, &x, &y))
        return cr_go(env, x, y, CR_DO);
    if (inv[CR_WOOD] < 5 && cr_find(env, CR_TREE, 0, &x, &y)) return cr_go(env, x, y, CR_DO);
    if (inv[CR_STONE_ITEM] >= 1 && cr_mat(env, env->px + CR_DX[env->facing], env->py + CR_DY[env->facing]) == CR_WATER)
        return CR_PLACE_STONE;
    return ocean_randint(&env->rng, 3) ? CR_DO : CR_MOVE_LEFT + ocean_randint(&env->rng, 4);
}

/* ---- the step (crafter's Env.step) ---- */

static void cr_end(Craftax *env, int terminal) {
    int count = 0;
    for (int a = 0; a < CR_ACHIEVEMENTS; a++) count += (env->unlocked >> a) & 1;
    ocean_log_episode(&env->log, env->ret, (float)env->tick, (float)count, (float)count / (float)CR_ACHIEVEMENTS);
    float *rates = &env->log.collect_coal; /* the 22 [[log]] fields, in achievement order */
    for (int a = 0; a < CR_ACHIEVEMENTS; a++) rates[a] += (float)((env->unlocked >> a) & 1);
    env->terminals[0] = (unsigned char)terminal;
    env->truncations[0] = (unsigned char)!terminal;
    cr_new_game(env);
}

static void c_step(Craftax *env) {
    int action = env->cfg.autopilot ? cr_autopilot(env) : ocean_clamp(env->actions[0], CR_ACTIONS);
    env->terminals[0] = 0;
    env->truncations[0] = 0;
    env->tick++;
    cr_update_time(env);
    env->achieved = 0;
    cr_player_update(env, action);
    int n = env->num_objects;
    for (int i = 0; i < n; i++) {
        CraftaxObject *o = &env->objects[i];
        if (o->kind == CR_NONE || cr_dist(env, o->x, o->y) >= CR_UPDATE_DIST) continue;
        cr_update_object(env, o);
    }
    if (env->tick % 10 == 0) cr_balance_all(env);
    cr_compact(env);
    float reward = (float)(env->inv[CR_HEALTH] - env->last_health_reward) / 10.0f;
    env->last_health_reward = env->inv[CR_HEALTH];
    uint32_t fresh = env->achieved & ~env->unlocked;
    if (fresh) reward += 1.0f; /* one unit however many unlock on the same step, as crafter pays */
    env->unlocked |= fresh;
    env->ret += reward;
    env->rewards[0] = reward;
    if (env->inv[CR_HEALTH] <= 0) cr_end(env, 1);
    else if (env->tick >= env->cfg.max_steps) cr_end(env, 0);
    else cr_write_obs(env);
}

/* ---- rendering: the local view as crafter's frame shows it (9x7 cells), then the inventory ---- */

#define CR_PX 16
#define CR_FRAME_W (CR_VIEW_W * CR_PX)
#define CR_FRAME_H ((CR_VIEW_H + 2) * CR_PX)

static void c_frame_shape(Craftax *env, int *h, int *w) {
    (void)env;
    *h = CR_FRAME_H;
    *w = CR_FRAME_W;
}

static void c_render_rgb(Craftax *env, unsigned char *frame) {
    static const unsigned char palette[CR_MATERIALS][3] = {
        {0, 0, 0},       {60, 100, 220}, {90, 170, 70}, {130, 130, 130}, {180, 160, 120},
        {220, 200, 140}, {30, 100, 40},  {230, 90, 20}, {40, 40, 40},    {200, 150, 120},
        {140, 240, 255}, {150, 90, 40},  {90, 60, 60}};
    static const unsigned char objects[10][3] = {{0, 0, 0},      {240, 240, 240}, {60, 160, 60}, {230, 230, 200},
                                                 {250, 250, 0},  {250, 250, 0},   {250, 250, 0}, {250, 250, 0},
                                                 {120, 220, 90}, {230, 60, 120}};
    static const unsigned char player[3] = {250, 120, 160}, bar[3] = {240, 240, 240}, back[3] = {20, 20, 20};
    ocean_fill_rect(frame, CR_FRAME_H, CR_FRAME_W, 0, 0, CR_FRAME_W, CR_FRAME_H, back);
    int x0 = env->px - CR_VIEW_W / 2, y0 = env->py - CR_VIEW_H / 2;
    int dim = (int)(80.0f * (1.0f - env->daylight)); /* night darkens the view, as crafter's frame does */
    for (int r = 0; r < CR_VIEW_H; r++)
        for (int c = 0; c < CR_VIEW_W; c++) {
            unsigned char rgb[3];
            const unsigned char *p = palette[cr_mat(env, x0 + c, y0 + r)];
            for (int k = 0; k < 3; k++) rgb[k] = (unsigned char)(p[k] > dim ? p[k] - dim : 0);
            ocean_fill_rect(frame, CR_FRAME_H, CR_FRAME_W, c * CR_PX, r * CR_PX, CR_PX, CR_PX, rgb);
            const CraftaxObject *o = cr_obj(env, x0 + c, y0 + r);
            int code = o ? cr_obj_code(o) : 0;
            if (code)
                ocean_fill_rect(frame, CR_FRAME_H, CR_FRAME_W, c * CR_PX + 3, r * CR_PX + 3, CR_PX - 6, CR_PX - 6,
                                objects[code]);
        }
    int cx = (CR_VIEW_W / 2) * CR_PX, cy = (CR_VIEW_H / 2) * CR_PX;
    ocean_fill_rect(frame, CR_FRAME_H, CR_FRAME_W, cx + 3, cy + 3, CR_PX - 6, CR_PX - 6, player);
    ocean_fill_rect(frame, CR_FRAME_H, CR_FRAME_W, cx + CR_PX / 2 - 2 + 6 * CR_DX[env->facing],
                    cy + CR_PX / 2 - 2 + 6 * CR_DY[env->facing], 4, 4, bar);
    /* the inventory: one column per item, a bar of its count */
    for (int i = 0; i < CR_ITEMS; i++) {
        int h = env->inv[i] * (2 * CR_PX - 4) / CR_ITEM_MAX;
        ocean_fill_rect(frame, CR_FRAME_H, CR_FRAME_W, i * CR_FRAME_W / CR_ITEMS + 1, CR_FRAME_H - 2 - h,
                        CR_FRAME_W / CR_ITEMS - 2, h, i < 4 ? palette[i + 1] : bar);
    }
}

/* The whole world, a character a cell (rows are y, columns x), then the vitals and the inventory. */
static int c_render_text(Craftax *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    static const char mats[] = "?~.#_:T%cid+F", objs[] = " CZS<>^vpP";
    for (int y = 0; y < CR_SIZE; y++) {
        for (int x = 0; x < CR_SIZE; x++) {
            const CraftaxObject *o = cr_obj(env, x, y);
            int code = o ? cr_obj_code(o) : 0;
            ocean_putc(&t, cr_player_at(env, x, y) ? '@' : code ? objs[code] : mats[cr_mat(env, x, y)]);
        }
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t,
               "@ you, ~ water . grass # stone _ path : sand T tree % lava c coal i iron d diamond + table F furnace,\n"
               "C cow Z zombie S skeleton <>^v arrows p sapling P ripe sapling\n");
    static const char *names[CR_ITEMS] = {"health",       "food",       "drink",        "energy",
                                          "sapling",      "wood",       "stone",        "coal",
                                          "iron",         "diamond",    "wood_pickaxe", "stone_pickaxe",
                                          "iron_pickaxe", "wood_sword", "stone_sword",  "iron_sword"};
    for (int i = 0; i < CR_ITEMS; i++) {
        if (i >= 4 && !env->inv[i]) continue;
        ocean_puts(&t, names[i]);
        ocean_putc(&t, ' ');
        ocean_puti(&t, env->inv[i]);
        ocean_putc(&t, ' ');
    }
    ocean_puts(&t, "\nstep ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, env->sleeping ? " asleep" : "");
    ocean_puts(&t, " achievements ");
    ocean_puti(&t, (long)env->unlocked);
    ocean_putc(&t, '\n');
    return t.len;
}
