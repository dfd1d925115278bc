/* puffer_mmo: a Neural-MMO-like world. A seeded tile map (grass, forest whose food regrows, water,
 * stone, lava) holds `agents` agents in teams and `npcs` NPCs. Agents must eat (step onto a forest
 * with food) and drink (stand next to water) or lose health; they fight with three styles under a
 * rock-paper-scissors rule, gain levels in melee, range, magic and foraging, pick up what NPCs drop
 * (weapons of five tiers, potions) and die: from hunger, thirst, lava or blows.
 *
 * Rules, in the order of a tick:
 *   1. use: pick up the item at the feet (a weapon is equipped at once, the old one is dropped in
 *      its place; a potion joins the stash of at most 3) or drink a potion (+50 health).
 *   2. attacks, all at once: an agent hits the entity of the chosen row of its last observation when
 *      it is still within the style's range (melee 1, magic 2, range 3 tiles, Chebyshev) and not a
 *      teammate. Damage = 8 + 2 (level of the style - 1) + 3 tier (a weapon of that style), times
 *      3/2 when the style beats the target's stance (its last attack style), 1/2 when the stance
 *      beats it: melee beats range, range beats magic, magic beats melee. Hostile NPCs attack agents
 *      in range, neutral ones the agent that hit them; NPC damage is 2 + 2 level, same rule.
 *   3. moves in row order, then NPC moves: onto grass, forest or lava (death) that nobody holds.
 *   4. survival: food and water fall by 1 a tick; at 0 each costs 5 health a tick; above 50 both,
 *      health regrows 1 a tick. A forest tile stepped on gives 30 + 3 foraging level food and bears
 *      again after food_regrow ticks; standing next to water gives 25 water.
 *   5. deaths: terminal, reward_death, the life is logged; the row is masked (env->masks = 0) and
 *      its observation zero until it respawns at the map's edge (respawn, respawn_delay).
 *   6. NPCs that died drop an item (a weapon of their style, tier from their level, or a potion) and
 *      come back at a random free tile; their kind and level follow the distance from the centre.
 * An episode ends at `horizon` ticks (live agents truncated) or when every agent is dead; then a new
 * world is drawn. With two_player the agents form two teams (the halves of the rows) and the end of a
 * world sets every row's truncation (and, when every agent died, its terminal too), so that
 * ocean/mmo/__init__.py can fold each team into one row, a seat for `puffer league`. Every life is one logged episode: episode_return its summed reward, episode_length
 * its ticks, score the skill levels it gained, perf its ticks / horizon, and reward_survival ...
 * reward_death (spec.toml [[log]]) the five terms its return is the sum of.
 *
 * Speed: the maps are padded by the view radius, so an observation's crop is 22 row copies with no
 * bounds checks; a `things` byte map mirrors what stands on each tile, so the crop's second channel
 * is copied too and the entity list is a scan of the view in order of distance that stops after
 * MM_ENTS hits. Harvested forests wait in a FIFO (the delay is constant), not in a map-wide sweep.
 */
#include <stdlib.h>
#include "spec.h" /* generated from spec.toml: MmoConfig, the constants and the reward terms' log fields */
#include "ocean.h"

#define MM_SIDE (2 * MM_VIEW + 1)
#define MM_CROP (MM_SIDE * MM_SIDE)
#define MM_BLOCK 8      /* exploration is counted in blocks of 8x8 tiles */
#define MM_AGENT_HP 100
#define MM_SIGHT 4      /* NPCs notice agents this close */
#define MM_POTIONS 3

enum { MM_VOID, MM_GRASS, MM_FOREST, MM_STUMP, MM_WATER, MM_STONE, MM_LAVA, MM_TERRAINS };
enum { MM_NOTHING, MM_T_AGENT, MM_T_PASSIVE, MM_T_NEUTRAL, MM_T_HOSTILE, MM_T_ITEM };
enum { MM_STYLE_NONE, MM_MELEE, MM_RANGE, MM_MAGIC };
enum { MM_POTION = 4 };  /* item kinds: 1..3 a weapon of that style, 4 a potion */
enum { MM_R_SURVIVAL, MM_R_EXPLORE, MM_R_COMBAT, MM_R_SKILL, MM_R_DEATH, MM_TERMS };
enum { MM_A_MOVE, MM_A_STYLE, MM_A_TARGET, MM_A_USE };
#define MM_MASK_WIDTH (5 + 4 + MM_ENTS + 3)

/* One entity: agents are ids [0, agents), NPCs follow. */
typedef struct MmoEnt {
    int pos;          /* padded tile index */
    short hp, max_hp;
    unsigned char alive, thing; /* thing: its MM_T_* code */
    unsigned char level, stance, style; /* style: an NPC's attack style */
    short team;       /* agents: id / mm_team_size; NPCs: -1 */
    short aggro;      /* NPC: the agent it fights, or -1 */
    int timer;        /* dead: ticks until respawn */
} MmoEnt;

typedef struct MmoAgent {
    short food, water;
    short xp[4], lvl[4];  /* melee, range, magic, foraging (index style - 1; foraging 3) */
    unsigned char weapon; /* item code: kind << 4 | tier, 0 none */
    unsigned char potions;
    short dealt, taken;   /* last tick */
    short slots[MM_ENTS]; /* the entity ids of the rows of the last observation, -1 empty */
    int life_ticks, levels_gained;
    float life_return;
    float terms[MM_TERMS];
} MmoAgent;

typedef struct Mmo {
    OCEAN_SLOTS(unsigned char);
    MmoConfig cfg;
    int size, stride, cells, num_ents, tick;
    int spiral[MM_CROP];  /* view offsets in order of distance, built in c_init */
    unsigned char *terrain, *things, *items;
    short *occ;           /* entity id on each tile, -1 none */
    MmoEnt *ents;
    MmoAgent *agents;
    uint64_t *visited;    /* per agent: one bit per 8x8 block */
    int visit_words;
    int *regrow_tile, *regrow_tick, regrow_head, regrow_len;
    float *lattice;       /* world generation scratch */
    /* summed reward terms of every life finished since c_init, for the text view (the log is emptied at
     * each report) */
    float term_sums[MM_TERMS], lives;
} Mmo;

/* Saved states (ocean.h): the memory c_init allocates. */
#define OCEAN_STATE_BLOCKS(X, env)                                                        \
    X(terrain, (size_t)(env)->cells)                                                      \
    X(things, (size_t)(env)->cells)                                                       \
    X(items, (size_t)(env)->cells)                                                        \
    X(occ, sizeof(short) * (size_t)(env)->cells)                                          \
    X(ents, sizeof(MmoEnt) * (size_t)(env)->num_ents)                                     \
    X(agents, sizeof(MmoAgent) * (size_t)(env)->cfg.agents)                               \
    X(visited, sizeof(uint64_t) * (size_t)(env)->cfg.agents * (size_t)(env)->visit_words) \
    X(regrow_tile, sizeof(int) * (size_t)(env)->size * (size_t)(env)->size)               \
    X(regrow_tick, sizeof(int) * (size_t)(env)->size * (size_t)(env)->size)               \
    X(lattice, sizeof(float) * (size_t)((env)->size / 4 + 3) * (size_t)((env)->size / 4 + 3))

static int mm_x(Mmo *env, int pos) { return pos % env->stride - MM_VIEW; }
static int mm_y(Mmo *env, int pos) { return pos / env->stride - MM_VIEW; }
static int mm_cheb(Mmo *env, int a, int b) {
    int dx = abs(mm_x(env, a) - mm_x(env, b)), dy = abs(mm_y(env, a) - mm_y(env, b));
    return dx > dy ? dx : dy;
}
/* two_player splits the agents into two halves, whatever team_size says */
static int mm_team_size(Mmo *env) { return env->cfg.two_player ? env->cfg.agents / 2 : env->cfg.team_size; }
static int mm_walkable(int t) { return t == MM_GRASS || t == MM_FOREST || t == MM_STUMP || t == MM_LAVA; }
static int mm_npc_walkable(int t) { return t == MM_GRASS || t == MM_FOREST || t == MM_STUMP; }
static const int MM_RANGE_OF[4] = {0, 1, 3, 2};

static int c_init(Mmo *env) {
    int s = env->cfg.map_size;
    env->size = s;
    env->stride = s + 2 * MM_VIEW;
    env->cells = env->stride * env->stride;
    env->num_ents = env->cfg.agents + env->cfg.npcs;
    int blocks = (s + MM_BLOCK - 1) / MM_BLOCK;
    env->visit_words = (blocks * blocks + 63) / 64;
    size_t cells = (size_t)env->cells, agents = (size_t)env->cfg.agents;
    env->terrain = (unsigned char *)calloc(cells, 1);
    env->things = (unsigned char *)calloc(cells, 1);
    env->items = (unsigned char *)calloc(cells, 1);
    env->occ = (short *)calloc(cells, sizeof(short));
    env->ents = (MmoEnt *)calloc((size_t)env->num_ents, sizeof(MmoEnt));
    env->agents = (MmoAgent *)calloc(agents, sizeof(MmoAgent));
    env->visited = (uint64_t *)calloc(agents * (size_t)env->visit_words, sizeof(uint64_t));
    env->regrow_tile = (int *)calloc((size_t)s * s, sizeof(int));
    env->regrow_tick = (int *)calloc((size_t)s * s, sizeof(int));
    env->lattice = (float *)calloc((size_t)(s / 4 + 3) * (s / 4 + 3), sizeof(float));
    if (!env->terrain || !env->things || !env->items || !env->occ || !env->ents || !env->agents || !env->visited ||
        !env->regrow_tile || !env->regrow_tick || !env->lattice)
        return ocean_fail(env, "out of memory for the world");
    /* the view's offsets by Chebyshev then Manhattan distance: the entity scan stops at MM_ENTS hits */
    int n = 0;
    for (int d = 0; d <= MM_VIEW; d++)
        for (int m = 0; m <= 2 * MM_VIEW; m++)
            for (int dy = -d; dy <= d; dy++)
                for (int dx = -d; dx <= d; dx++) {
                    int cheb = abs(dx) > abs(dy) ? abs(dx) : abs(dy);
                    if (cheb == d && abs(dx) + abs(dy) == m) env->spiral[n++] = dy * env->stride + dx;
                }
    return 0;
}

/* ---- world generation ---- */

/* Value noise at one lattice spacing, added to `out` with `weight` (0..255 overall). */
static void mm_noise(Mmo *env, unsigned char *out, int spacing, float weight) {
    int s = env->size, n = s / spacing + 2;
    for (int i = 0; i < n * n; i++) env->lattice[i] = ocean_randf(&env->rng);
    for (int y = 0; y < s; y++) {
        float fy = (float)y / spacing;
        int gy = (int)fy;
        float ty = fy - gy;
        ty = ty * ty * (3 - 2 * ty);
        for (int x = 0; x < s; x++) {
            float fx = (float)x / spacing;
            int gx = (int)fx;
            float tx = fx - gx;
            tx = tx * tx * (3 - 2 * tx);
            const float *l = env->lattice + gy * n + gx;
            float top = l[0] + (l[1] - l[0]) * tx, bottom = l[n] + (l[n + 1] - l[n]) * tx;
            float v = top + (bottom - top) * ty;
            int at = (y + MM_VIEW) * env->stride + x + MM_VIEW;
            out[at] = (unsigned char)(out[at] + (int)(v * weight));
        }
    }
}

static void mm_generate(Mmo *env) {
    int s = env->size, stride = env->stride;
    memset(env->terrain, MM_VOID, (size_t)env->cells);
    memset(env->things, 0, (size_t)env->cells);  /* elevation scratch first */
    memset(env->items, 0, (size_t)env->cells);
    for (int i = 0; i < env->cells; i++) env->occ[i] = -1;
    mm_noise(env, env->things, 16, 170.0f);
    mm_noise(env, env->things, 4, 85.0f);
    mm_noise(env, env->terrain, 8, 255.0f); /* moisture, in the terrain map until classified */
    for (int y = 0; y < s; y++)
        for (int x = 0; x < s; x++) {
            int at = (y + MM_VIEW) * stride + x + MM_VIEW;
            int e = env->things[at], m = env->terrain[at], t;
            int edge = x < 2 || y < 2 || x >= s - 2 || y >= s - 2;
            if (e < 80) t = MM_WATER;
            else if (e > 175 && m < 110) t = MM_LAVA;
            else if (e > 168) t = MM_STONE;
            else if (m > 135) t = MM_FOREST;
            else t = MM_GRASS;
            if (edge && (t == MM_STONE || t == MM_LAVA)) t = MM_GRASS; /* the spawn band is walkable */
            env->terrain[at] = (unsigned char)t;
        }
    memset(env->things, 0, (size_t)env->cells);
    env->regrow_head = env->regrow_len = 0;
}

/* A free walkable tile (no lava) near (x, y), else anywhere: the spec's checks leave 7/8 of the map. */
static int mm_free_near(Mmo *env, int x, int y, int radius) {
    int s = env->size;
    for (int r = 0; r <= radius; r++)
        for (int k = 0; k < 8 * r + 1; k++) {
            int dx = ocean_randint(&env->rng, 2 * r + 1) - r, dy = ocean_randint(&env->rng, 2 * r + 1) - r;
            int nx = x + dx, ny = y + dy;
            if (nx < 0 || ny < 0 || nx >= s || ny >= s) continue;
            int at = (ny + MM_VIEW) * env->stride + nx + MM_VIEW;
            if (env->occ[at] < 0 && mm_npc_walkable(env->terrain[at])) return at;
        }
    for (int k = 0; k < 64; k++) {
        /* two draws in two statements: C leaves the order of a + b's operands to the compiler (gcc and
         * emscripten's clang differ), and the web page must play the training game */
        int row = ocean_randint(&env->rng, s);
        int at = (row + MM_VIEW) * env->stride + ocean_randint(&env->rng, s) + MM_VIEW;
        if (env->occ[at] < 0 && mm_npc_walkable(env->terrain[at])) return at;
    }
    int start = ocean_randint(&env->rng, s * s);
    for (int k = 0; k < s * s; k++) {
        int i = (start + k) % (s * s);
        int at = (i / s + MM_VIEW) * env->stride + i % s + MM_VIEW;
        if (env->occ[at] < 0 && mm_npc_walkable(env->terrain[at])) return at;
    }
    return -1; /* every tile is water, stone or taken: only a degenerate map; the entity waits */
}

/* A point on the band along the map's edge. */
static void mm_edge_point(Mmo *env, int *x, int *y) {
    int s = env->size, along = ocean_randint(&env->rng, s), side = ocean_randint(&env->rng, 4);
    int depth = ocean_randint(&env->rng, 2);
    *x = side == 0 ? depth : side == 1 ? s - 1 - depth : along;
    *y = side == 2 ? depth : side == 3 ? s - 1 - depth : along;
}

static void mm_place(Mmo *env, int id, int at) {
    MmoEnt *e = &env->ents[id];
    e->pos = at;
    env->occ[at] = (short)id;
    env->things[at] = e->thing;
}

static void mm_unplace(Mmo *env, int id) {
    int at = env->ents[id].pos;
    env->occ[at] = -1;
    env->things[at] = env->items[at] ? MM_T_ITEM : MM_NOTHING;
}

static void mm_mark_visit(Mmo *env, int i) {
    int x = mm_x(env, env->ents[i].pos) / MM_BLOCK, y = mm_y(env, env->ents[i].pos) / MM_BLOCK;
    int blocks = (env->size + MM_BLOCK - 1) / MM_BLOCK, b = y * blocks + x;
    uint64_t *v = env->visited + (size_t)i * env->visit_words;
    uint64_t bit = 1ULL << (b & 63);
    if (!(v[b >> 6] & bit)) {
        v[b >> 6] |= bit;
        if (env->agents[i].life_ticks > 0) {
            float r = env->cfg.reward_explore;
            env->rewards[i] += r;
            env->agents[i].terms[MM_R_EXPLORE] += r;
        }
    }
}

static void mm_spawn_agent(Mmo *env, int i, int x, int y) {
    MmoEnt *e = &env->ents[i];
    MmoAgent *a = &env->agents[i];
    int at = mm_free_near(env, x, y, 6);
    short slots_none[MM_ENTS];
    for (int k = 0; k < MM_ENTS; k++) slots_none[k] = -1;
    memset(a, 0, sizeof *a);
    memcpy(a->slots, slots_none, sizeof slots_none);
    a->food = a->water = 100;
    for (int k = 0; k < 4; k++) a->lvl[k] = 1;
    e->hp = e->max_hp = MM_AGENT_HP;
    e->thing = MM_T_AGENT;
    e->level = 1;
    e->stance = MM_STYLE_NONE;
    e->team = (short)(i / mm_team_size(env));
    e->aggro = -1;
    e->timer = 0;
    memset(env->visited + (size_t)i * env->visit_words, 0, sizeof(uint64_t) * (size_t)env->visit_words);
    if (at < 0) { /* no room: try again next tick */
        e->alive = 0;
        e->timer = 1;
        return;
    }
    e->alive = 1;
    mm_place(env, i, at);
    mm_mark_visit(env, i);
}

static void mm_spawn_npc(Mmo *env, int id) {
    MmoEnt *e = &env->ents[id];
    int x = ocean_randint(&env->rng, env->size); /* one draw per statement: argument order is unspecified */
    int at = mm_free_near(env, x, ocean_randint(&env->rng, env->size), 0);
    if (at < 0) {
        e->alive = 0;
        e->timer = 1;
        return;
    }
    int half = env->size / 2, dx = abs(mm_x(env, at) - half), dy = abs(mm_y(env, at) - half);
    float d = (float)(dx > dy ? dx : dy) / (float)half; /* 0 at the centre, 1 at the edge */
    int kind = d > 0.6f ? MM_T_PASSIVE : d > 0.3f ? MM_T_NEUTRAL : MM_T_HOSTILE;
    if (kind == MM_T_HOSTILE && !env->cfg.hostile) kind = MM_T_NEUTRAL;
    int level = 1 + (int)((1.0f - d) * (float)(env->cfg.npc_max_level - 1) + 0.5f);
    e->thing = (unsigned char)kind;
    e->level = (unsigned char)(level < 1 ? 1 : level);
    e->hp = e->max_hp = (short)(10 + 10 * e->level);
    e->style = (unsigned char)(1 + ocean_randint(&env->rng, 3));
    e->stance = e->style;
    e->team = -1;
    e->aggro = -1;
    e->alive = 1;
    e->timer = 0;
    mm_place(env, id, at);
}

static void mm_write_obs(Mmo *env);

static void mm_new_episode(Mmo *env) {
    mm_generate(env);
    env->tick = 0;
    int agents = env->cfg.agents, team = mm_team_size(env);
    for (int t = 0; t < agents / team; t++) {
        int x, y;
        mm_edge_point(env, &x, &y);
        for (int i = t * team; i < (t + 1) * team; i++) mm_spawn_agent(env, i, x, y);
    }
    for (int id = agents; id < env->num_ents; id++) mm_spawn_npc(env, id);
    mm_write_obs(env);
}

static void c_reset(Mmo *env) { mm_new_episode(env); }

/* ---- observations and masks ---- */

static void mm_write_obs(Mmo *env) {
    int agents = env->cfg.agents, stride = env->stride;
    for (int i = 0; i < agents; i++) {
        unsigned char *o = env->observations + (size_t)i * env->obs_size;
        unsigned char *m = env->action_masks + (size_t)i * MM_MASK_WIDTH;
        MmoEnt *e = &env->ents[i];
        MmoAgent *a = &env->agents[i];
        env->masks[i] = e->alive;
        if (!e->alive) {
            memset(o, 0, (size_t)env->obs_size);
            memset(m, 0, MM_MASK_WIDTH);
            m[0] = m[5] = m[9] = m[9 + MM_ENTS] = 1; /* the first choice of each part: a defined no-op */
            for (int k = 0; k < MM_ENTS; k++) a->slots[k] = -1;
            continue;
        }
        int at = e->pos, corner = at - MM_VIEW * stride - MM_VIEW;
        for (int r = 0; r < MM_SIDE; r++) {
            memcpy(o + r * MM_SIDE, env->terrain + corner + r * stride, MM_SIDE);
            memcpy(o + MM_CROP + r * MM_SIDE, env->things + corner + r * stride, MM_SIDE);
        }
        unsigned char *rows = o + 2 * MM_CROP;
        memset(rows, 0, MM_ENTS * MM_EFEAT);
        int found = 0, in_range[4] = {1, 0, 0, 0}, any_target = 0;
        unsigned char *tmask = m + 9;
        memset(tmask, 0, MM_ENTS);
        for (int k = 1; k < MM_CROP && found < MM_ENTS; k++) { /* k = 0 is the agent itself */
            int t = at + env->spiral[k];
            int thing = env->things[t];
            if (thing == MM_NOTHING || thing == MM_T_ITEM) continue;
            int id = env->occ[t];
            MmoEnt *other = &env->ents[id];
            int dx = mm_x(env, t) - mm_x(env, at), dy = mm_y(env, t) - mm_y(env, at);
            int dist = abs(dx) > abs(dy) ? abs(dx) : abs(dy);
            int ally = id < agents && other->team == e->team;
            unsigned char *row = rows + found * MM_EFEAT;
            row[0] = 1;
            row[1] = (unsigned char)(ally ? 1 : thing == MM_T_AGENT ? 2 : thing + 1);
            row[2] = (unsigned char)(dx + MM_VIEW);
            row[3] = (unsigned char)(dy + MM_VIEW);
            row[4] = (unsigned char)(100 * other->hp / other->max_hp);
            row[5] = other->level;
            row[6] = other->stance;
            row[7] = (unsigned char)dist;
            a->slots[found] = (short)id;
            if (!ally) {
                for (int s = 1; s <= 3; s++)
                    if (dist <= MM_RANGE_OF[s]) in_range[s] = 1;
                if (dist <= 3) tmask[found] = 1, any_target = 1;
            }
            found++;
        }
        for (int k = found; k < MM_ENTS; k++) a->slots[k] = -1;
        if (!any_target) tmask[0] = 1;
        unsigned char *me = o + 2 * MM_CROP + MM_ENTS * MM_EFEAT;
        int item = env->items[at];
        me[0] = (unsigned char)e->hp;
        me[1] = (unsigned char)a->food;
        me[2] = (unsigned char)a->water;
        for (int k = 0; k < 4; k++) me[3 + k] = (unsigned char)a->lvl[k];
        me[7] = (unsigned char)(a->weapon >> 4);
        me[8] = (unsigned char)(a->weapon & 15);
        me[9] = a->potions;
        me[10] = (unsigned char)(item >> 4);
        me[11] = (unsigned char)(item & 15);
        me[12] = e->stance;
        me[13] = (unsigned char)(a->dealt > 100 ? 100 : a->dealt);
        me[14] = (unsigned char)(a->taken > 100 ? 100 : a->taken);
        me[15] = (unsigned char)(100 * mm_x(env, at) / env->size);
        me[16] = (unsigned char)(100 * mm_y(env, at) / env->size);
        me[17] = (unsigned char)(100LL * env->tick / env->cfg.horizon);
        /* moves: stay always; a direction onto a walkable tile nobody holds */
        static const int dxs[5] = {0, 0, 0, -1, 1}, dys[5] = {0, -1, 1, 0, 0};
        m[0] = 1;
        for (int d = 1; d < 5; d++) {
            int t = at + dys[d] * stride + dxs[d];
            m[d] = (unsigned char)(mm_walkable(env->terrain[t]) && env->occ[t] < 0);
        }
        for (int s = 0; s < 4; s++) m[5 + s] = (unsigned char)in_range[s];
        unsigned char *use = m + 9 + MM_ENTS;
        use[0] = 1;
        use[1] = (unsigned char)(item != 0);
        use[2] = (unsigned char)(a->potions > 0);
    }
}

/* ---- the tick ---- */

static int mm_beats(int a, int b) { return a != MM_STYLE_NONE && b == a % 3 + 1; }

static void mm_add(Mmo *env, int i, int term, float r) {
    env->rewards[i] += r;
    env->agents[i].terms[term] += r;
}

static void mm_gain_xp(Mmo *env, int i, int skill, int xp) {
    MmoAgent *a = &env->agents[i];
    a->xp[skill] = (short)(a->xp[skill] + xp > 30000 ? 30000 : a->xp[skill] + xp);
    while (a->lvl[skill] < MM_MAX_LEVEL && a->xp[skill] >= 10 * a->lvl[skill] * a->lvl[skill]) {
        a->lvl[skill]++;
        a->levels_gained++;
        mm_add(env, i, MM_R_SKILL, env->cfg.reward_skill);
    }
}

/* One blow from `src` with `style` on `dst`; the damage dealt (capped at the target's health). */
static int mm_hit(Mmo *env, int src, int dst, int style) {
    MmoEnt *s = &env->ents[src], *d = &env->ents[dst];
    int agents = env->cfg.agents, dmg;
    if (src < agents) {
        MmoAgent *a = &env->agents[src];
        dmg = 8 + 2 * (a->lvl[style - 1] - 1) + ((a->weapon >> 4) == style ? 3 * (a->weapon & 15) : 0);
    } else {
        dmg = 2 + 2 * s->level;
    }
    int mult = mm_beats(style, d->stance) ? 3 : mm_beats(d->stance, style) ? 1 : 2;
    dmg = dmg * mult / 2;
    if (dmg > d->hp) dmg = d->hp;
    d->hp = (short)(d->hp - dmg);
    s->stance = (unsigned char)style;
    if (src < agents) {
        env->agents[src].dealt = (short)(env->agents[src].dealt + dmg);
        mm_gain_xp(env, src, style - 1, dmg);
        mm_add(env, src, MM_R_COMBAT, env->cfg.reward_combat * (float)dmg / 100.0f);
    }
    if (dst < agents) env->agents[dst].taken = (short)(env->agents[dst].taken + dmg);
    else if (src < agents) d->aggro = (short)src;
    return dmg;
}

static void mm_harvest(Mmo *env, int i) {
    int at = env->ents[i].pos;
    MmoAgent *a = &env->agents[i];
    if (env->terrain[at] == MM_FOREST) {
        env->terrain[at] = MM_STUMP;
        int q = (env->regrow_head + env->regrow_len) % (env->size * env->size);
        env->regrow_tile[q] = at;
        env->regrow_tick[q] = env->tick + env->cfg.food_regrow;
        env->regrow_len++;
        int food = a->food + 30 + 3 * a->lvl[3];
        a->food = (short)(food > 100 ? 100 : food);
        mm_gain_xp(env, i, 3, 10);
    }
    int s = env->stride;
    if (a->water < 100 && (env->terrain[at - 1] == MM_WATER || env->terrain[at + 1] == MM_WATER ||
                           env->terrain[at - s] == MM_WATER || env->terrain[at + s] == MM_WATER)) {
        a->water = (short)(a->water + 25 > 100 ? 100 : a->water + 25);
        mm_gain_xp(env, i, 3, 1);
    }
}

static void mm_end_life(Mmo *env, int i, int truncated) {
    MmoAgent *a = &env->agents[i];
    env->log.reward_survival += a->terms[MM_R_SURVIVAL];
    env->log.reward_explore += a->terms[MM_R_EXPLORE];
    env->log.reward_combat += a->terms[MM_R_COMBAT];
    env->log.reward_skill += a->terms[MM_R_SKILL];
    env->log.reward_death += a->terms[MM_R_DEATH];
    ocean_log_episode(&env->log, a->life_return, (float)a->life_ticks, (float)a->levels_gained,
                      (float)a->life_ticks / (float)env->cfg.horizon);
    for (int k = 0; k < MM_TERMS; k++) env->term_sums[k] += a->terms[k];
    env->lives += 1;
    if (truncated) env->truncations[i] = 1;
    else env->terminals[i] = 1;
}

static void mm_kill(Mmo *env, int id) {
    MmoEnt *e = &env->ents[id];
    e->alive = 0;
    mm_unplace(env, id);
    if (id < env->cfg.agents) {
        mm_add(env, id, MM_R_DEATH, env->cfg.reward_death);
        env->agents[id].life_return += env->rewards[id];
        mm_end_life(env, id, 0);
        e->timer = env->cfg.respawn ? env->cfg.respawn_delay : -1;
        return;
    }
    /* NPC: half drop a weapon of their style, a quarter a potion */
    int at = e->pos, roll = ocean_randint(&env->rng, 4);
    if (!env->items[at] && roll < 3) {
        int tier = 1 + (e->level - 1) * MM_TIERS / MM_MAX_LEVEL;
        env->items[at] = (unsigned char)(roll < 2 ? (e->style << 4 | tier) : (MM_POTION << 4));
        if (env->occ[at] < 0) env->things[at] = MM_T_ITEM;
    }
    e->timer = 1;
}

/* Step toward (or at random around) a target tile; NPCs avoid water, stone and lava. */
static void mm_npc_move(Mmo *env, int id, int toward) {
    MmoEnt *e = &env->ents[id];
    int stride = env->stride, dir;
    if (toward >= 0) {
        int dx = mm_x(env, toward) - mm_x(env, e->pos), dy = mm_y(env, toward) - mm_y(env, e->pos);
        dir = abs(dx) >= abs(dy) ? (dx > 0 ? 1 : -1) : (dy > 0 ? stride : -stride);
    } else {
        int r = ocean_randint(&env->rng, 8);
        if (r >= 4) return; /* idle half of the time */
        static const int dirs[4] = {1, -1, 0, 0};
        dir = r < 2 ? dirs[r] : (r == 2 ? stride : -stride);
    }
    int t = e->pos + dir;
    if (mm_npc_walkable(env->terrain[t]) && env->occ[t] < 0) {
        mm_unplace(env, id);
        mm_place(env, id, t);
    }
}

/* The nearest agent within MM_SIGHT, or -1. */
static int mm_nearest_agent(Mmo *env, int at) {
    int stop = (2 * MM_SIGHT + 1) * (2 * MM_SIGHT + 1);
    for (int k = 1; k < stop; k++) {
        int t = at + env->spiral[k];
        if (env->things[t] == MM_T_AGENT) return env->occ[t];
    }
    return -1;
}

static void mm_autopilot(Mmo *env);

static void c_step(Mmo *env) {
    int agents = env->cfg.agents, stride = env->stride;
    memset(env->rewards, 0, sizeof(float) * (size_t)agents);
    memset(env->terminals, 0, (size_t)agents);
    memset(env->truncations, 0, (size_t)agents);
    if (env->cfg.autopilot) mm_autopilot(env);
    env->tick++;
    for (int i = 0; i < agents; i++) env->agents[i].dealt = env->agents[i].taken = 0;

    /* 1. use */
    for (int i = 0; i < agents; i++) {
        MmoEnt *e = &env->ents[i];
        if (!e->alive) continue;
        MmoAgent *a = &env->agents[i];
        int use = ocean_clamp(env->actions[i * 4 + MM_A_USE], 3), at = e->pos;
        if (use == 1 && env->items[at]) {
            int item = env->items[at];
            if (item >> 4 == MM_POTION) {
                if (a->potions < MM_POTIONS) a->potions++, env->items[at] = 0;
            } else {
                env->items[at] = a->weapon;
                a->weapon = (unsigned char)item;
            }
        } else if (use == 2 && a->potions > 0) {
            a->potions--;
            e->hp = (short)(e->hp + 50 > e->max_hp ? e->max_hp : e->hp + 50);
        }
    }
    /* 2. attacks: agents on their chosen rows, then NPCs; deaths after all blows */
    for (int i = 0; i < agents; i++) {
        MmoEnt *e = &env->ents[i];
        if (!e->alive) continue;
        int style = ocean_clamp(env->actions[i * 4 + MM_A_STYLE], 4);
        int slot = ocean_clamp(env->actions[i * 4 + MM_A_TARGET], MM_ENTS);
        int target = env->agents[i].slots[slot];
        if (style == MM_STYLE_NONE || target < 0) continue;
        MmoEnt *d = &env->ents[target];
        if (!d->alive || d->hp <= 0) continue;
        if (target < agents && d->team == e->team) continue;
        if (mm_cheb(env, e->pos, d->pos) > MM_RANGE_OF[style]) continue;
        mm_hit(env, i, target, style);
    }
    for (int id = agents; id < env->num_ents; id++) {
        MmoEnt *e = &env->ents[id];
        if (!e->alive || e->hp <= 0 || e->thing == MM_T_PASSIVE) continue;
        int target = e->thing == MM_T_HOSTILE ? mm_nearest_agent(env, e->pos) : e->aggro;
        if (target < 0 || !env->ents[target].alive || env->ents[target].hp <= 0) {
            e->aggro = -1;
            continue;
        }
        int dist = mm_cheb(env, e->pos, env->ents[target].pos);
        if (dist <= MM_RANGE_OF[e->style]) mm_hit(env, id, target, e->style);
        else if (dist > MM_SIGHT) e->aggro = -1;
    }
    for (int id = 0; id < env->num_ents; id++)
        if (env->ents[id].alive && env->ents[id].hp <= 0) mm_kill(env, id);

    /* 3. moves */
    static const int dxs[5] = {0, 0, 0, -1, 1}, dys[5] = {0, -1, 1, 0, 0};
    for (int i = 0; i < agents; i++) {
        MmoEnt *e = &env->ents[i];
        if (!e->alive) continue;
        int d = ocean_clamp(env->actions[i * 4 + MM_A_MOVE], 5);
        if (d) {
            int t = e->pos + dys[d] * stride + dxs[d];
            if (mm_walkable(env->terrain[t]) && env->occ[t] < 0) {
                mm_unplace(env, i);
                mm_place(env, i, t);
                mm_mark_visit(env, i);
            }
        }
        if (env->terrain[e->pos] == MM_LAVA) {
            e->hp = 0;
            mm_kill(env, i);
            continue;
        }
        mm_harvest(env, i);
    }
    for (int id = agents; id < env->num_ents; id++) {
        MmoEnt *e = &env->ents[id];
        if (!e->alive) continue;
        int target = e->thing == MM_T_HOSTILE ? mm_nearest_agent(env, e->pos) : e->aggro;
        if (target >= 0 && !env->ents[target].alive) target = -1;
        if (target < 0) mm_npc_move(env, id, -1);
        else if (mm_cheb(env, e->pos, env->ents[target].pos) > MM_RANGE_OF[e->style]) /* else it holds */
            mm_npc_move(env, id, env->ents[target].pos);
    }

    /* 4. survival */
    for (int i = 0; i < agents; i++) {
        MmoEnt *e = &env->ents[i];
        if (!e->alive) continue;
        MmoAgent *a = &env->agents[i];
        if (a->food > 0) a->food--;
        if (a->water > 0) a->water--;
        int hp = e->hp - (a->food == 0 ? 5 : 0) - (a->water == 0 ? 5 : 0);
        if (a->food > 50 && a->water > 50) hp++;
        e->hp = (short)(hp > e->max_hp ? e->max_hp : hp);
        if (e->hp <= 0) {
            e->hp = 0;
            mm_kill(env, i);
            continue;
        }
        a->life_ticks++;
        mm_add(env, i, MM_R_SURVIVAL, env->cfg.reward_survival);
        a->life_return += env->rewards[i];
    }

    /* 5. the world: regrowth, respawns */
    int area = env->size * env->size;
    while (env->regrow_len > 0 && env->regrow_tick[env->regrow_head] <= env->tick) {
        int t = env->regrow_tile[env->regrow_head];
        if (env->terrain[t] == MM_STUMP) env->terrain[t] = MM_FOREST;
        env->regrow_head = (env->regrow_head + 1) % area;
        env->regrow_len--;
    }
    int alive = 0;
    for (int i = 0; i < agents; i++) {
        MmoEnt *e = &env->ents[i];
        if (!e->alive && e->timer >= 0 && --e->timer < 0) {
            int x, y;
            mm_edge_point(env, &x, &y);
            mm_spawn_agent(env, i, x, y);
        }
        alive += e->alive || e->timer >= 0;
    }
    for (int id = agents; id < env->num_ents; id++) {
        MmoEnt *e = &env->ents[id];
        if (!e->alive && --e->timer < 0) mm_spawn_npc(env, id);
    }

    if (env->tick >= env->cfg.horizon || alive == 0) {
        for (int i = 0; i < agents; i++)
            if (env->ents[i].alive) mm_end_life(env, i, 1);
        if (env->cfg.two_player) { /* the team rows' episode is the world: every row says it ended */
            memset(env->truncations, 1, (size_t)agents);
            if (alive == 0) memset(env->terminals, 1, (size_t)agents);
        }
        mm_new_episode(env);
        return;
    }
    mm_write_obs(env);
}

/* ---- the scripted forager/fighter: reads only the agent's own observation and masks ---- */

static void mm_autopilot(Mmo *env) {
    int agents = env->cfg.agents;
    for (int i = 0; i < agents; i++) {
        int32_t *act = env->actions + i * 4;
        act[0] = act[1] = act[2] = act[3] = 0;
        if (!env->ents[i].alive) continue;
        const unsigned char *o = env->observations + (size_t)i * env->obs_size;
        const unsigned char *m = env->action_masks + (size_t)i * MM_MASK_WIDTH;
        const unsigned char *rows = o + 2 * MM_CROP, *me = rows + MM_ENTS * MM_EFEAT;
        int hp = me[0], food = me[1], water = me[2];
        /* fight: the weakest attackable row in reach, with the style that beats its stance when it can;
         * flee from hostile NPCs when hurt */
        int best = -1, best_style = 0, best_score = 1 << 30, threat = -1;
        for (int k = 0; k < MM_ENTS; k++) {
            const unsigned char *r = rows + k * MM_EFEAT;
            if (!r[0]) break;
            if (r[1] == 5 && threat < 0) threat = k;
            if (r[1] == 1 || !m[9 + k] || (r[1] == 2 && me[14] == 0)) continue; /* agents only in defence */
            int stance = r[6], style = 0, score;
            for (int s = 1; s <= 3; s++) {
                if (r[7] > MM_RANGE_OF[s]) continue;
                if (!style || (mm_beats(s, stance) && !mm_beats(style, stance)) ||
                    (!mm_beats(s, stance) && mm_beats(stance, style) && !mm_beats(stance, s)))
                    style = s;
            }
            if (!style) continue;
            score = r[4] * r[5] + (r[1] == 5 ? -1000 : 0);
            if (score < best_score) best = k, best_style = style, best_score = score;
        }
        if (best >= 0 && (hp > 40 || rows[best * MM_EFEAT + 1] != 5)) {
            act[1] = best_style;
            act[2] = best;
        }
        if (me[10]) act[3] = 1;
        else if (hp < 50 && me[9]) act[3] = 2;
        /* move: away from a hostile when hurt, else to water or food when below 70, else roam */
        int want_dx = 0, want_dy = 0, stay = 0;
        if (threat >= 0 && hp <= 40) {
            want_dx = MM_VIEW - rows[threat * MM_EFEAT + 2];
            want_dy = MM_VIEW - rows[threat * MM_EFEAT + 3];
        } else if (food < 70 || water < 70) {
            int goal = water <= food ? MM_WATER : MM_FOREST, bd = 1 << 30;
            for (int k = 0; k < MM_CROP; k++) {
                if (o[k] != goal) continue;
                int dx = k % MM_SIDE - MM_VIEW, dy = k / MM_SIDE - MM_VIEW, d = abs(dx) + abs(dy);
                if (d < bd) bd = d, want_dx = dx, want_dy = dy;
            }
            if (goal == MM_WATER && bd == 1) want_dx = want_dy = 0, stay = 1; /* drinking */
        }
        int order[4], n = 0;
        if (want_dx || want_dy) {
            int h = want_dx > 0 ? 4 : 3, v = want_dy > 0 ? 2 : 1;
            if (abs(want_dx) >= abs(want_dy)) {
                if (want_dx) order[n++] = h;
                if (want_dy) order[n++] = v;
            } else {
                if (want_dy) order[n++] = v;
                if (want_dx) order[n++] = h;
            }
        }
        if (!n && !stay && best < 0) order[n++] = 1 + ocean_randint(&env->rng, 4); /* nothing to do or see: roam */
        for (int k = 0; k < n; k++) {
            int d = order[k];
            int t = MM_VIEW * MM_SIDE + MM_VIEW + (d == 1 ? -MM_SIDE : d == 2 ? MM_SIDE : d == 3 ? -1 : 1);
            if (m[d] && o[t] != MM_LAVA) {
                act[0] = d;
                break;
            }
        }
    }
}

/* ---- rendering ---- */

static int mm_scale(Mmo *env) { return env->size >= 256 ? 2 : 512 / env->size; }

static void c_frame_shape(Mmo *env, int *h, int *w) { *h = *w = env->size * mm_scale(env); }

static void c_render_rgb(Mmo *env, unsigned char *frame) {
    static const unsigned char tiles[MM_TERRAINS][3] = {{0, 0, 0},     {96, 160, 64},   {24, 100, 32}, {110, 120, 60},
                                                        {40, 90, 200}, {120, 120, 120}, {230, 80, 20}};
    static const unsigned char things[6][3] = {{0, 0, 0},      {255, 255, 255}, {250, 220, 120},
                                               {230, 150, 40}, {200, 20, 20},   {240, 240, 0}};
    int s = env->size, sc = mm_scale(env), fw = s * sc;
    for (int y = 0; y < s; y++)
        for (int x = 0; x < s; x++) {
            int at = (y + MM_VIEW) * env->stride + x + MM_VIEW, th = env->things[at];
            ocean_fill_rect(frame, fw, fw, x * sc, y * sc, sc, sc, tiles[env->terrain[at]]);
            if (th) {
                unsigned char c[3] = {things[th][0], things[th][1], things[th][2]};
                if (th == MM_T_AGENT) { /* a hue per team */
                    int team = env->ents[env->occ[at]].team;
                    c[0] = (unsigned char)(120 + (team * 67) % 136);
                    c[1] = (unsigned char)(120 + (team * 151) % 136);
                    c[2] = 255;
                }
                int inset = sc >= 8 ? 1 : 0;
                ocean_fill_rect(frame, fw, fw, x * sc + inset, y * sc + inset, sc - 2 * inset, sc - 2 * inset, c);
            }
        }
}

static int c_render_text(Mmo *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    static const char tiles[] = " .Tt~#^", things[] = " @pnhi";
    int s = env->size, side = s > 96 ? 96 : s, x0 = 0, y0 = 0;
    if (side < s) { /* a window on the first live agent */
        for (int i = 0; i < env->cfg.agents; i++)
            if (env->ents[i].alive) {
                x0 = mm_x(env, env->ents[i].pos) - side / 2;
                y0 = mm_y(env, env->ents[i].pos) - side / 2;
                break;
            }
        x0 = x0 < 0 ? 0 : x0 > s - side ? s - side : x0;
        y0 = y0 < 0 ? 0 : y0 > s - side ? s - side : y0;
    }
    for (int y = y0; y < y0 + side; y++) {
        for (int x = x0; x < x0 + side; x++) {
            int at = (y + MM_VIEW) * env->stride + x + MM_VIEW, th = env->things[at];
            ocean_putc(&t, th ? things[th] : tiles[env->terrain[at]]);
        }
        ocean_putc(&t, '\n');
    }
    int alive = 0;
    for (int i = 0; i < env->cfg.agents; i++) alive += env->ents[i].alive;
    ocean_puts(&t, "tick ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, "  agents alive ");
    ocean_puti(&t, alive);
    ocean_puts(&t, "/");
    ocean_puti(&t, env->cfg.agents);
    if (env->lives > 0) { /* mean reward terms per finished life, in thousandths */
        static const char *names[MM_TERMS] = {"survival", "explore", "combat", "skill", "death"};
        ocean_puts(&t, "\nper life (x1000):");
        for (int k = 0; k < MM_TERMS; k++) {
            ocean_putc(&t, ' ');
            ocean_puts(&t, names[k]);
            ocean_putc(&t, ' ');
            ocean_puti(&t, (long)(1000.0f * env->term_sums[k] / env->lives));
        }
    }
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Mmo *env) {
    free(env->terrain);
    free(env->things);
    free(env->items);
    free(env->occ);
    free(env->ents);
    free(env->agents);
    free(env->visited);
    free(env->regrow_tile);
    free(env->regrow_tick);
    free(env->lattice);
    env->terrain = env->things = env->items = NULL;
    env->occ = NULL;
    env->ents = NULL;
    env->agents = NULL;
    env->visited = NULL;
    env->regrow_tile = env->regrow_tick = NULL;
    env->lattice = NULL;
}
