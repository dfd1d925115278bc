/* puffer_moba: a small MOBA. Two teams of `heroes` heroes on a square map of MB_SIZE tiles: team 0's
 * base (its ancient) at the bottom left, team 1's at the top right, three lanes between them (top:
 * up the left edge and along the top; mid: the diagonal; bottom: along the bottom and up the right
 * edge). The map is symmetric under a half turn, and team 1 sees and moves in a frame turned half a
 * turn, so both teams play the same game and one policy can sit in either seat.
 *
 * Rules, in the order of a tick:
 *   1. heroes, in row order (team 0 first on even ticks, team 1 first on odd ones): move one tile in
 *      one of 8 directions (or stay), then act: a basic attack (range 3, every 2 ticks) on the
 *      weakest enemy in range or on the nearest enemy hero in range, or an ability if its cooldown
 *      is over and the mana suffices: Q a bolt at the nearest enemy hero within 5, W a blast on every
 *      enemy creep and hero within 2, E a heal of the hero and its allies within 3.
 *   2. creeps walk their lane (a tile every 2 ticks) towards the enemy base and stop to fight the
 *      first enemy creep, the next standing enemy tower, an enemy hero next to them, and at the end of
 *      the lane the enemy ancient.
 *   3. towers and ancients shoot (range 4, every 3 ticks) the nearest enemy creep, else the nearest
 *      enemy hero.
 *   4. the dead are removed; a hero's death costs reward_death and a respawn delay of 10 + 2 level
 *      ticks at its base (its row is masked meanwhile); a creep's last hit gives its hero 20
 *      experience and the killer's allies within 5 get 8; a fallen tower pays reward_tower to every
 *      hero of the other team; every wave_interval ticks a wave of wave_size creeps per lane per team
 *      spawns at the bases; heroes regain health and mana.
 *   An ancient takes damage only once its team has lost both towers of some lane. When an ancient
 *   falls the game ends (terminal; reward_win to the winners, minus it to the losers); after
 *   max_ticks it is truncated. Every hero is one logged episode per game: score 1 for a win (else 0),
 *   perf the share of the enemy's 7 structures destroyed, and towers, kills, deaths, level.
 *
 * Speed: there is no map in memory. The terrain is a formula of the tile (a crop row is a memcpy from one
 * of four padded row kinds), and each unit is written into the crops of the heroes that see it, so a game
 * is a few kilobytes of units. Creeps live in compact per-lane arrays and only compare their lane position
 * with the enemy's front creep and towers, never with every unit. "Which heroes are near this tile" is two
 * loads of per-column and per-row hero bit masks (MobaNear, MobaViews) rather than a distance per hero.
 */
#include <stdlib.h>
#include "spec.h" /* generated from spec.toml: MobaConfig, the constants and the log fields */
#include "ocean.h"

#define MB_SIDE (2 * MB_VIEW + 1)
#define MB_CROP (MB_SIDE * MB_SIDE)
#define MB_LANES 3
#define MB_PATH (2 * MB_SIZE)
#define MB_CREEPS 32       /* creep slots per lane per team: a wave that finds them full is smaller */
#define MB_TOWERS 2        /* per lane per team */
#define MB_STRUCTURES (MB_LANES * MB_TOWERS + 1)

#define MB_HERO_HP 200.0f
#define MB_HERO_HP_LEVEL 25.0f
#define MB_HERO_DMG 18.0f
#define MB_HERO_DMG_LEVEL 3.0f
#define MB_HERO_RANGE 3
#define MB_MANA 100.0f
#define MB_MAX_LEVEL 10
#define MB_XP_LEVEL 100
#define MB_CREEP_HP 80.0f
#define MB_CREEP_DMG 8.0f
#define MB_TOWER_HP 800.0f
#define MB_ANCIENT_HP 1500.0f
#define MB_TOWER_DMG 40.0f
#define MB_TOWER_RANGE 4

enum {
    MB_GROUND, /* 0: the most common tile, so a crop read as numbers is mostly zero */
    MB_LANE,
    MB_OFF,
    MB_CREEP0,
    MB_CREEP1,
    MB_TOWER0,
    MB_TOWER1,
    MB_ANCIENT0,
    MB_ANCIENT1,
    MB_HERO0,
    MB_HERO1,
    MB_SELF_CODE
};
_Static_assert(MB_GROUND == 0, "mb_terrain_row ORs the mid lane into a ground tile");
enum { MB_ACT_NONE, MB_ACT_ATTACK, MB_ACT_HUNT, MB_ACT_Q, MB_ACT_W, MB_ACT_E, MB_ACTS };
enum { MB_Q, MB_W, MB_E, MB_ABILITIES };
enum { MB_T_CREEP, MB_T_TOWER, MB_T_ANCIENT, MB_T_HERO };

static const int MB_DX[9] = {0, 0, 0, -1, 1, 1, -1, 1, -1};
static const int MB_DY[9] = {0, -1, 1, 0, 0, -1, -1, 1, 1};
static const float MB_MANA_COST[MB_ABILITIES] = {30.0f, 40.0f, 40.0f};
static const int MB_COOLDOWN[MB_ABILITIES] = {15, 25, 30};
static const int MB_LANE_OF[MB_MAX_HEROES] = {1, 0, 2, 0, 2}; /* the autopilot's lanes: mid solo, 2 top, 2 bottom */

typedef struct MobaHero {
    int x, y;
    float hp, mana;
    int level, xp, attack_cd, respawn;
    int cd[MB_ABILITIES];
    int kills, deaths;
    float game_return;
} MobaHero;

typedef struct MobaCreep {
    short p;    /* lane tiles walked from its own base */
    short cd;
    float hp;
} MobaCreep;

typedef struct MobaTower {
    short p;    /* its lane position counted from its own base */
    short cd;
    float hp;
} MobaTower;

typedef struct MobaTeam {
    MobaHero heroes[MB_MAX_HEROES];
    MobaCreep creeps[MB_LANES][MB_CREEPS];
    int n_creeps[MB_LANES];
    MobaTower towers[MB_LANES][MB_TOWERS]; /* inner first */
    float ancient_hp;
    int ancient_cd, towers_lost;
} MobaTeam;

typedef struct Moba {
    OCEAN_SLOTS(unsigned char);
    MobaConfig cfg;
    MobaTeam teams[2];
    int tick;
    int path_len[MB_LANES];
    unsigned char path_x[MB_LANES][MB_PATH], path_y[MB_LANES][MB_PATH];
} Moba;

static inline int mb_abs(int a) { return a < 0 ? -a : a; }
static inline int mb_cheb(int x0, int y0, int x1, int y1) {
    int dx = mb_abs(x0 - x1), dy = mb_abs(y0 - y1);
    return dx > dy ? dx : dy;
}
/* The absolute lane index of a lane position `p` counted from `team`'s base. */
static inline int mb_index(const Moba *env, int lane, int team, int p) {
    return team == 0 ? p : env->path_len[lane] - 1 - p;
}
static inline int mb_base_x(int team) { return team == 0 ? 2 : MB_SIZE - 3; }
static inline int mb_base_y(int team) { return team == 0 ? MB_SIZE - 3 : 2; }
static inline float mb_max_hp(const MobaHero *h) { return MB_HERO_HP + MB_HERO_HP_LEVEL * (float)(h->level - 1); }

/* The terrain of a tile: off the map, ground, or a lane (the edges of the square between the bases
 * and its diagonal). Computed, not stored, to keep a game's memory small. */
static inline int mb_terrain(int x, int y) {
    const int lo = 2, hi = MB_SIZE - 3;
    if (x < 0 || y < 0 || x >= MB_SIZE || y >= MB_SIZE) return MB_OFF;
    if (x < lo || x > hi || y < lo || y > hi) return MB_GROUND;
    return x == lo || x == hi || y == lo || y == hi || x + y == lo + hi ? MB_LANE : MB_GROUND;
}

/* The kinds of map row, padded by MB_VIEW tiles of MB_OFF on both sides: a crop row is MB_SIDE bytes of one of
 * them (and, on a row between the lane edges, the diagonal lane's tile), so the crops are built with memcpy. */
#define MB_PAD (MB_SIZE + 2 * MB_VIEW)
#define MB_LO 2
#define MB_HI (MB_SIZE - 3)
enum { MB_ROW_OFF, MB_ROW_GROUND, MB_ROW_EDGE, MB_ROW_INNER, MB_ROW_KINDS };
static const unsigned char MB_ROWS[MB_ROW_KINDS][MB_PAD] = {
    [MB_ROW_OFF] = {[0 ... MB_PAD - 1] = MB_OFF},
    [MB_ROW_GROUND] = {[0 ... MB_VIEW - 1] = MB_OFF, [MB_VIEW + MB_SIZE... MB_PAD - 1] = MB_OFF},
    [MB_ROW_EDGE] = {[0 ... MB_VIEW - 1] = MB_OFF,
                     [MB_VIEW + MB_LO... MB_VIEW + MB_HI] = MB_LANE,
                     [MB_VIEW + MB_SIZE... MB_PAD - 1] = MB_OFF},
    [MB_ROW_INNER] = {[0 ... MB_VIEW - 1] = MB_OFF,
                      [MB_VIEW + MB_LO] = MB_LANE,
                      [MB_VIEW + MB_HI] = MB_LANE,
                      [MB_VIEW + MB_SIZE... MB_PAD - 1] = MB_OFF},
};

/* The row kind of each map row y, at y + MB_VIEW (MB_VIEW rows off the map on either side). */
static const unsigned char MB_ROW_KIND[MB_PAD] = {
    [0 ... MB_VIEW - 1] = MB_ROW_OFF,
    [MB_VIEW... MB_VIEW + MB_LO - 1] = MB_ROW_GROUND,
    [MB_VIEW + MB_LO] = MB_ROW_EDGE,
    [MB_VIEW + MB_LO + 1 ... MB_VIEW + MB_HI - 1] = MB_ROW_INNER,
    [MB_VIEW + MB_HI] = MB_ROW_EDGE,
    [MB_VIEW + MB_HI + 1 ... MB_VIEW + MB_SIZE - 1] = MB_ROW_GROUND,
    [MB_VIEW + MB_SIZE... MB_PAD - 1] = MB_ROW_OFF,
};

/* mb_terrain of the MB_SIDE tiles from (x - MB_VIEW, y) rightwards (-MB_VIEW <= y < MB_SIZE + MB_VIEW). */
static inline void mb_terrain_row(int x, int y, unsigned char *row) {
    int kind = MB_ROW_KIND[y + MB_VIEW];
    memcpy(row, MB_ROWS[kind] + x, MB_SIDE);
    /* the mid lane's column in the row (ground in an inner row), set without a branch (tile 0 ORed with 0 when
     * the row has none): whether a crop row crosses the diagonal is a coin toss to the branch predictor */
    int diagonal = MB_LO + MB_HI - y - x + MB_VIEW, lane = (kind == MB_ROW_INNER) & ((unsigned)diagonal < MB_SIDE);
    row[diagonal & -lane] |= (unsigned char)(lane * MB_LANE);
}

static void mb_add_path(Moba *env, int lane, int x1, int y1) {
    int n = env->path_len[lane];
    int x = env->path_x[lane][n - 1], y = env->path_y[lane][n - 1];
    while (x != x1 || y != y1) {
        x += (x1 > x) - (x1 < x);
        y += (y1 > y) - (y1 < y);
        env->path_x[lane][n] = (unsigned char)x;
        env->path_y[lane][n] = (unsigned char)y;
        n++;
    }
    env->path_len[lane] = n;
}

/* The constant parts: the lanes and the terrain. Nothing here is allocated: the game lives in the struct. */
static int c_init(Moba *env) {
    int lo = 2, hi = MB_SIZE - 3;
    for (int lane = 0; lane < MB_LANES; lane++) {
        env->path_x[lane][0] = (unsigned char)mb_base_x(0);
        env->path_y[lane][0] = (unsigned char)mb_base_y(0);
        env->path_len[lane] = 1;
    }
    mb_add_path(env, 0, lo, lo);
    mb_add_path(env, 0, hi, lo);
    mb_add_path(env, 1, hi, lo);
    mb_add_path(env, 2, hi, hi);
    mb_add_path(env, 2, hi, lo);
    return 0;
}

static void mb_spawn_hero(MobaHero *h, int team) {
    h->x = mb_base_x(team);
    h->y = mb_base_y(team);
    h->hp = mb_max_hp(h);
    h->mana = MB_MANA;
    h->attack_cd = 0;
    for (int a = 0; a < MB_ABILITIES; a++) h->cd[a] = 0;
}

static void mb_new_game(Moba *env) {
    env->tick = 0;
    for (int t = 0; t < 2; t++) {
        MobaTeam *team = &env->teams[t];
        memset(team, 0, sizeof *team);
        for (int i = 0; i < env->cfg.heroes; i++) {
            team->heroes[i].level = 1;
            mb_spawn_hero(&team->heroes[i], t);
        }
        for (int lane = 0; lane < MB_LANES; lane++) {
            int len = env->path_len[lane];
            team->towers[lane][0] = (MobaTower){(short)(len / 7), 0, MB_TOWER_HP};
            team->towers[lane][1] = (MobaTower){(short)(len / 3), 0, MB_TOWER_HP};
        }
        team->ancient_hp = MB_ANCIENT_HP;
    }
}

/* Whether `team`'s ancient can be hurt: it has lost both towers of some lane. */
static int mb_ancient_open(const Moba *env, int team) {
    for (int lane = 0; lane < MB_LANES; lane++) {
        const MobaTower *tw = env->teams[team].towers[lane];
        if (tw[0].hp <= 0.0f && tw[1].hp <= 0.0f) return 1;
    }
    return 0;
}

static void mb_gain_xp(MobaHero *h, int xp, float *reward, float reward_xp) {
    h->xp += xp;
    *reward += reward_xp * (float)xp;
    int level = 1 + h->xp / MB_XP_LEVEL;
    if (level > MB_MAX_LEVEL) level = MB_MAX_LEVEL;
    if (level > h->level) {
        h->hp += MB_HERO_HP_LEVEL * (float)(level - h->level);
        h->level = level;
    }
}

/* The reward slot of hero `i` of `team`, or a scratch slot when the built-in opponent plays it. */
static inline float *mb_reward(Moba *env, int team, int i, float *scratch) {
    if (team == 1 && !env->cfg.two_player) return scratch;
    return &env->rewards[team * env->cfg.heroes + i];
}

/* Credit the killer (a hero index of team 1 - dead_team, or -1) of a creep at (x, y). */
static void mb_creep_died(Moba *env, int dead_team, int killer, int x, int y) {
    float scratch = 0.0f;
    int t = 1 - dead_team;
    for (int i = 0; i < env->cfg.heroes; i++) {
        MobaHero *h = &env->teams[t].heroes[i];
        if (h->respawn) continue;
        if (i == killer) mb_gain_xp(h, 20, mb_reward(env, t, i, &scratch), env->cfg.reward_xp);
        else if (mb_cheb(h->x, h->y, x, y) <= 5) mb_gain_xp(h, 8, mb_reward(env, t, i, &scratch), env->cfg.reward_xp);
    }
}

static void mb_hurt_hero(Moba *env, int team, int i, float dmg, int killer) {
    MobaHero *h = &env->teams[team].heroes[i];
    if (h->respawn || h->hp <= 0.0f) return;
    h->hp -= dmg;
    if (h->hp > 0.0f) return;
    float scratch = 0.0f;
    *mb_reward(env, team, i, &scratch) += env->cfg.reward_death;
    h->deaths++;
    h->respawn = 10 + 2 * h->level;
    if (killer >= 0) {
        MobaHero *k = &env->teams[1 - team].heroes[killer];
        k->kills++;
        float *r = mb_reward(env, 1 - team, killer, &scratch);
        *r += env->cfg.reward_kill;
        mb_gain_xp(k, 60, r, env->cfg.reward_xp);
    }
}

static void mb_hurt_tower(Moba *env, int team, int lane, int k, float dmg) {
    MobaTower *tw = &env->teams[team].towers[lane][k];
    if (tw->hp <= 0.0f) return;
    tw->hp -= dmg;
    if (tw->hp > 0.0f) return;
    env->teams[team].towers_lost++;
    float scratch = 0.0f;
    for (int i = 0; i < env->cfg.heroes; i++) {
        float *r = mb_reward(env, 1 - team, i, &scratch);
        *r += env->cfg.reward_tower;
        mb_gain_xp(&env->teams[1 - team].heroes[i], 50, r, env->cfg.reward_xp);
    }
}

static void mb_hurt_creep(Moba *env, int team, int lane, int k, float dmg, int killer) {
    MobaCreep *c = &env->teams[team].creeps[lane][k];
    if (c->hp <= 0.0f) return;
    c->hp -= dmg;
    if (c->hp > 0.0f) return;
    int idx = mb_index(env, lane, team, c->p);
    mb_creep_died(env, team, killer, env->path_x[lane][idx], env->path_y[lane][idx]);
}

static void mb_hurt_ancient(Moba *env, int team, float dmg) {
    if (mb_ancient_open(env, team)) env->teams[team].ancient_hp -= dmg;
}

/* Whether (x, y) may be within `range` of a tile of `lane`: a cheap test that skips a lane's creeps. */
static inline int mb_near_lane(int lane, int x, int y, int range) {
    const int lo = 2, hi = MB_SIZE - 3;
    if (lane == 0) return x <= lo + range || y <= lo + range;
    if (lane == 2) return x >= hi - range || y >= hi - range;
    return mb_abs(x + y - lo - hi) <= 2 * range;
}

/* A target: its kind, lane and slot (an enemy of the attacker). */
typedef struct MobaTarget {
    int kind, lane, k;
    float hp;
} MobaTarget;

/* The weakest enemy (lowest health) within `range` of (x, y), of any kind; 0 when none. */
static int mb_weakest(const Moba *env, int enemy, int x, int y, int range, MobaTarget *out) {
    const MobaTeam *e = &env->teams[enemy];
    int found = 0;
    out->hp = 1e30f;
    for (int lane = 0; lane < MB_LANES; lane++) {
        if (!mb_near_lane(lane, x, y, range)) continue;
        for (int k = 0; k < e->n_creeps[lane]; k++) {
            const MobaCreep *c = &e->creeps[lane][k];
            int idx = mb_index(env, lane, enemy, c->p);
            if (c->hp > 0.0f && c->hp < out->hp &&
                mb_cheb(x, y, env->path_x[lane][idx], env->path_y[lane][idx]) <= range) {
                *out = (MobaTarget){MB_T_CREEP, lane, k, c->hp};
                found = 1;
            }
        }
        for (int k = 0; k < MB_TOWERS; k++) {
            const MobaTower *tw = &e->towers[lane][k];
            int idx = mb_index(env, lane, enemy, tw->p);
            if (tw->hp > 0.0f && tw->hp < out->hp &&
                mb_cheb(x, y, env->path_x[lane][idx], env->path_y[lane][idx]) <= range) {
                *out = (MobaTarget){MB_T_TOWER, lane, k, tw->hp};
                found = 1;
            }
        }
    }
    for (int i = 0; i < env->cfg.heroes; i++) {
        const MobaHero *h = &e->heroes[i];
        if (!h->respawn && h->hp < out->hp && mb_cheb(x, y, h->x, h->y) <= range) {
            *out = (MobaTarget){MB_T_HERO, 0, i, h->hp};
            found = 1;
        }
    }
    if (!found && mb_ancient_open(env, enemy) && mb_cheb(x, y, mb_base_x(enemy), mb_base_y(enemy)) <= range) {
        *out = (MobaTarget){MB_T_ANCIENT, 0, 0, e->ancient_hp};
        found = 1;
    }
    return found;
}

/* The nearest live enemy hero within `range` of (x, y), or -1. */
static int mb_nearest_hero(const Moba *env, int enemy, int x, int y, int range) {
    int best = -1, best_d = range + 1;
    for (int i = 0; i < env->cfg.heroes; i++) {
        const MobaHero *h = &env->teams[enemy].heroes[i];
        int d = mb_cheb(x, y, h->x, h->y);
        if (!h->respawn && d < best_d) {
            best = i;
            best_d = d;
        }
    }
    return best;
}

static void mb_hit(Moba *env, int enemy, const MobaTarget *t, float dmg, int killer) {
    switch (t->kind) {
    case MB_T_CREEP:
        mb_hurt_creep(env, enemy, t->lane, t->k, dmg, killer);
        break;
    case MB_T_TOWER:
        mb_hurt_tower(env, enemy, t->lane, t->k, dmg);
        break;
    case MB_T_ANCIENT:
        mb_hurt_ancient(env, enemy, dmg);
        break;
    default:
        mb_hurt_hero(env, enemy, t->k, dmg, killer);
        break;
    }
}

/* Hero `i` of `team` moves (`move` in its team's frame) and acts. `weakest`, when not NULL, is what
 * mb_weakest finds from where the hero ends its move (the autopilot has just asked), else it is asked here. */
static void mb_hero_turn(Moba *env, int team, int i, int move, int act, const MobaTarget *weakest) {
    MobaHero *h = &env->teams[team].heroes[i];
    if (h->respawn) return;
    int sign = team == 0 ? 1 : -1;
    int x = h->x + sign * MB_DX[move], y = h->y + sign * MB_DY[move];
    if (x >= 0 && x < MB_SIZE && y >= 0 && y < MB_SIZE) {
        h->x = x;
        h->y = y;
    }
    int enemy = 1 - team;
    float dmg = MB_HERO_DMG + MB_HERO_DMG_LEVEL * (float)(h->level - 1);
    MobaTarget t;
    if (act == MB_ACT_ATTACK || act == MB_ACT_HUNT) {
        if (h->attack_cd > 0) return;
        if (act == MB_ACT_ATTACK) {
            if (weakest) t = *weakest;
            else if (!mb_weakest(env, enemy, h->x, h->y, MB_HERO_RANGE, &t)) return;
        } else {
            t.kind = MB_T_HERO;
            t.k = mb_nearest_hero(env, enemy, h->x, h->y, MB_HERO_RANGE);
            if (t.k < 0) return;
        }
        mb_hit(env, enemy, &t, dmg, i);
        h->attack_cd = 2;
        return;
    }
    if (act < MB_ACT_Q) return;
    int a = act - MB_ACT_Q;
    if (h->cd[a] > 0 || h->mana < MB_MANA_COST[a]) return;
    if (a == MB_Q) {
        int k = mb_nearest_hero(env, enemy, h->x, h->y, 5);
        if (k < 0) return;
        mb_hurt_hero(env, enemy, k, 60.0f + 10.0f * (float)h->level, i);
    } else if (a == MB_W) {
        float blast = 40.0f + 5.0f * (float)h->level;
        MobaTeam *e = &env->teams[enemy];
        for (int lane = 0; lane < MB_LANES; lane++)
            for (int k = 0; k < e->n_creeps[lane] && mb_near_lane(lane, h->x, h->y, 2); k++) {
                int idx = mb_index(env, lane, enemy, e->creeps[lane][k].p);
                if (mb_cheb(h->x, h->y, env->path_x[lane][idx], env->path_y[lane][idx]) <= 2)
                    mb_hurt_creep(env, enemy, lane, k, blast, i);
            }
        for (int k = 0; k < env->cfg.heroes; k++)
            if (mb_cheb(h->x, h->y, e->heroes[k].x, e->heroes[k].y) <= 2) mb_hurt_hero(env, enemy, k, blast, i);
    } else {
        for (int k = 0; k < env->cfg.heroes; k++) {
            MobaHero *ally = &env->teams[team].heroes[k];
            if (ally->respawn || mb_cheb(h->x, h->y, ally->x, ally->y) > 3) continue;
            ally->hp += 60.0f;
            float cap = mb_max_hp(ally);
            if (ally->hp > cap) ally->hp = cap;
        }
    }
    h->mana -= MB_MANA_COST[a];
    h->cd[a] = MB_COOLDOWN[a];
}

/* Which live heroes of `team` are within Chebyshev distance r of a tile: bit i of cols[x + MB_NEAR_PAD] &
 * rows[y + MB_NEAR_PAD] is hero i, so a unit asks two loads instead of measuring every hero. The masks run
 * MB_NEAR_PAD past the map on both sides, so a hero's square is 2 r + 1 entries, never clipped: a loop of a
 * fixed count, without the branches of a clipped one. */
#define MB_NEAR_PAD MB_TOWER_RANGE /* the largest r asked for */
typedef struct MobaNear {
    uint16_t cols[MB_SIZE + 2 * MB_NEAR_PAD], rows[MB_SIZE + 2 * MB_NEAR_PAD];
} MobaNear;

static inline void mb_near_heroes(const Moba *env, int team, int r, MobaNear *near) {
    memset(near, 0, sizeof *near);
    for (int i = 0; i < env->cfg.heroes; i++) {
        const MobaHero *h = &env->teams[team].heroes[i];
        uint16_t bit = (uint16_t)(!h->respawn << i);
        for (int c = -r; c <= r; c++) {
            near->cols[h->x + c + MB_NEAR_PAD] |= bit;
            near->rows[h->y + c + MB_NEAR_PAD] |= bit;
        }
    }
}

/* mb_nearest_hero(env, team, x, y, r) for the r that `near` was built with: the same hero (the nearest,
 * the first of equals), measured only among those whose squares hold the tile. */
static inline int mb_nearest_near(const Moba *env, int team, const MobaNear *near, int x, int y) {
    int best = -1, best_d = MB_SIZE;
    for (unsigned m = near->cols[x + MB_NEAR_PAD] & near->rows[y + MB_NEAR_PAD]; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        const MobaHero *h = &env->teams[team].heroes[i];
        if (h->respawn) continue; /* fell earlier in this turn */
        int d = mb_cheb(x, y, h->x, h->y);
        if (d < best_d) {
            best = i;
            best_d = d;
        }
    }
    return best;
}

/* The lane position (from `team`'s base) of its most advanced live creep on `lane`, or -1. */
static int mb_front(const Moba *env, int team, int lane) {
    int front = -1;
    const MobaTeam *t = &env->teams[team];
    for (int k = 0; k < t->n_creeps[lane]; k++)
        if (t->creeps[lane][k].hp > 0.0f && t->creeps[lane][k].p > front) front = t->creeps[lane][k].p;
    return front;
}

static void mb_creeps_turn(Moba *env, int team) {
    MobaTeam *me = &env->teams[team];
    int enemy = 1 - team;
    MobaTeam *e = &env->teams[enemy];
    MobaNear near;
    mb_near_heroes(env, enemy, 1, &near);
    for (int lane = 0; lane < MB_LANES; lane++) {
        int len = env->path_len[lane];
        int enemy_front = mb_front(env, enemy, lane);
        int front_at = enemy_front < 0 ? len + 8 : len - 1 - enemy_front; /* in this team's positions */
        int tower = -1, tower_at = len + 8;                             /* the nearest standing enemy tower */
        for (int k = MB_TOWERS - 1; k >= 0; k--)
            if (e->towers[lane][k].hp > 0.0f) {
                tower = k;
                tower_at = len - 1 - e->towers[lane][k].p;
                break;
            }
        for (int k = 0; k < me->n_creeps[lane]; k++) {
            MobaCreep *c = &me->creeps[lane][k];
            if (c->hp <= 0.0f) continue;
            if (c->cd > 0) c->cd--;
            int idx = mb_index(env, lane, team, c->p);
            int x = env->path_x[lane][idx], y = env->path_y[lane][idx];
            int blocked = front_at - c->p <= 1 || tower_at - c->p <= 1 || c->p >= len - 2;
            if (c->cd == 0) {
                MobaTarget t = {MB_T_CREEP, lane, -1, 0.0f};
                if (front_at - c->p <= 1) {
                    for (int j = 0; j < e->n_creeps[lane]; j++)
                        if (e->creeps[lane][j].hp > 0.0f && e->creeps[lane][j].p == enemy_front) {
                            t.k = j;
                            break;
                        }
                } else if (tower_at - c->p <= 1) {
                    t = (MobaTarget){MB_T_TOWER, lane, tower, 0.0f};
                } else {
                    int h = mb_nearest_near(env, enemy, &near, x, y);
                    if (h >= 0) t = (MobaTarget){MB_T_HERO, 0, h, 0.0f};
                    else if (c->p >= len - 2) t = (MobaTarget){MB_T_ANCIENT, 0, 0, 0.0f};
                }
                if (t.k >= 0) {
                    mb_hit(env, enemy, &t, MB_CREEP_DMG, -1);
                    c->cd = 2;
                    continue;
                }
            }
            if (!blocked && (env->tick & 1) == 0) c->p++;
        }
    }
}

static void mb_structures_turn(Moba *env, int team) {
    MobaTeam *me = &env->teams[team];
    int enemy = 1 - team;
    MobaTeam *e = &env->teams[enemy];
    MobaNear near;
    mb_near_heroes(env, enemy, MB_TOWER_RANGE, &near);
    for (int lane = 0; lane < MB_LANES; lane++) {
        for (int k = 0; k < MB_TOWERS; k++) {
            MobaTower *tw = &me->towers[lane][k];
            if (tw->hp <= 0.0f) continue;
            if (tw->cd > 0) {
                tw->cd--;
                continue;
            }
            int best = -1, best_d = MB_TOWER_RANGE + 1;
            int at = env->path_len[lane] - 1 - tw->p; /* in the enemy's lane positions */
            for (int j = 0; j < e->n_creeps[lane]; j++) {
                int d = mb_abs(e->creeps[lane][j].p - at);
                if (e->creeps[lane][j].hp > 0.0f && d < best_d) {
                    best = j;
                    best_d = d;
                }
            }
            if (best >= 0) {
                mb_hurt_creep(env, enemy, lane, best, MB_TOWER_DMG, -1);
            } else {
                int idx = mb_index(env, lane, team, tw->p);
                int h = mb_nearest_near(env, enemy, &near, env->path_x[lane][idx], env->path_y[lane][idx]);
                if (h < 0) continue;
                mb_hurt_hero(env, enemy, h, MB_TOWER_DMG, -1);
            }
            tw->cd = 3;
        }
    }
    if (me->ancient_cd > 0) {
        me->ancient_cd--;
        return;
    }
    int bx = mb_base_x(team), by = mb_base_y(team);
    for (int lane = 0; lane < MB_LANES; lane++) {
        int end = env->path_len[lane] - 1;
        for (int j = 0; j < e->n_creeps[lane]; j++)
            if (e->creeps[lane][j].hp > 0.0f && end - e->creeps[lane][j].p <= MB_TOWER_RANGE) {
                mb_hurt_creep(env, enemy, lane, j, MB_TOWER_DMG, -1);
                me->ancient_cd = 3;
                return;
            }
    }
    int h = mb_nearest_near(env, enemy, &near, bx, by);
    if (h < 0) return;
    mb_hurt_hero(env, enemy, h, MB_TOWER_DMG, -1);
    me->ancient_cd = 3;
}

/* Remove dead creeps, spawn a wave when one is due, regenerate and respawn heroes. */
static void mb_upkeep(Moba *env) {
    int wave = env->tick % env->cfg.wave_interval == 0;
    for (int t = 0; t < 2; t++) {
        MobaTeam *team = &env->teams[t];
        for (int lane = 0; lane < MB_LANES; lane++) {
            int n = 0;
            for (int k = 0; k < team->n_creeps[lane]; k++)
                if (team->creeps[lane][k].hp > 0.0f) team->creeps[lane][n++] = team->creeps[lane][k];
            for (int k = 0; wave && k < env->cfg.wave_size && n < MB_CREEPS; k++)
                team->creeps[lane][n++] = (MobaCreep){1, 0, MB_CREEP_HP};
            team->n_creeps[lane] = n;
        }
        for (int i = 0; i < env->cfg.heroes; i++) {
            MobaHero *h = &team->heroes[i];
            if (h->hp <= 0.0f && !h->respawn) h->respawn = 1; /* died this tick from a hero turned already */
            if (h->respawn) {
                if (h->hp <= 0.0f) { /* just died: go home and wait */
                    h->hp = 0.0f;
                    h->x = mb_base_x(t);
                    h->y = mb_base_y(t);
                }
                if (--h->respawn == 0) mb_spawn_hero(h, t);
                continue;
            }
            float cap = mb_max_hp(h);
            h->hp = h->hp + 0.5f > cap ? cap : h->hp + 0.5f;
            h->mana = h->mana + 1.0f > MB_MANA ? MB_MANA : h->mana + 1.0f;
            if (h->attack_cd > 0) h->attack_cd--;
            for (int a = 0; a < MB_ABILITIES; a++)
                if (h->cd[a] > 0) h->cd[a]--;
        }
    }
}

static inline int mb_tenths(float hp, float max_hp) {
    int v = (int)(10.0f * hp / max_hp + 0.999f);
    return v < 0 ? 0 : (v > 10 ? 10 : v);
}

typedef struct MobaUnit {
    unsigned char x, y, code, hp; /* code as team 0 sees it; health in tenths, rounded up */
} MobaUnit;
#define MB_UNITS (2 * (MB_LANES * (MB_TOWERS + MB_CREEPS) + 1 + MB_MAX_HEROES))

static inline MobaUnit mb_unit(int x, int y, int code, float hp, float max_hp) {
    return (MobaUnit){(unsigned char)x, (unsigned char)y, (unsigned char)code, (unsigned char)mb_tenths(hp, max_hp)};
}

/* Every unit, towers and ancients first, heroes last, so that a later unit covers an earlier one on its
 * tile. Returns their number. */
static int mb_units(const Moba *env, MobaUnit *out) {
    int n = 0;
    for (int t = 0; t < 2; t++) {
        const MobaTeam *team = &env->teams[t];
        for (int lane = 0; lane < MB_LANES; lane++)
            for (int k = 0; k < MB_TOWERS; k++) {
                const MobaTower *tw = &team->towers[lane][k];
                if (tw->hp <= 0.0f) continue;
                int idx = mb_index(env, lane, t, tw->p);
                out[n++] = mb_unit(env->path_x[lane][idx], env->path_y[lane][idx], MB_TOWER0 + t, tw->hp, MB_TOWER_HP);
            }
        out[n++] = mb_unit(mb_base_x(t), mb_base_y(t), MB_ANCIENT0 + t, team->ancient_hp, MB_ANCIENT_HP);
    }
    for (int t = 0; t < 2; t++)
        for (int lane = 0; lane < MB_LANES; lane++)
            for (int k = 0; k < env->teams[t].n_creeps[lane]; k++) {
                const MobaCreep *c = &env->teams[t].creeps[lane][k];
                int idx = mb_index(env, lane, t, c->p);
                out[n++] = mb_unit(env->path_x[lane][idx], env->path_y[lane][idx], MB_CREEP0 + t, c->hp, MB_CREEP_HP);
            }
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < env->cfg.heroes; i++) {
            const MobaHero *h = &env->teams[t].heroes[i];
            if (!h->respawn) out[n++] = mb_unit(h->x, h->y, MB_HERO0 + t, h->hp, mb_max_hp(h));
        }
    return n;
}

/* The map as team 0 sees it, one code per tile (for rendering). */
static void mb_paint(const Moba *env, unsigned char *codes) {
    MobaUnit units[MB_UNITS];
    for (int y = 0; y < MB_SIZE; y++)
        for (int x = 0; x < MB_SIZE; x++) codes[y * MB_SIZE + x] = (unsigned char)mb_terrain(x, y);
    int n = mb_units(env, units);
    for (int u = 0; u < n; u++) codes[units[u].y * MB_SIZE + units[u].x] = units[u].code;
}

/* Ticks in thirds, rounded up: cooldowns and respawn delays on the scale of the other features (0-10),
 * because the default policy reads the row's bytes as numbers, unscaled. */
static inline int mb_thirds(int ticks) { return ticks <= 0 ? 0 : (ticks + 2) / 3 > 10 ? 10 : (ticks + 2) / 3; }

static int mb_towers_standing(const Moba *env, int team) { return MB_LANES * MB_TOWERS - env->teams[team].towers_lost; }

/* The terrain part of a live hero's crops and its own state; mb_observe_all adds the units. */
static void mb_observe(Moba *env, int team, int i, unsigned char *obs) {
    const MobaHero *h = &env->teams[team].heroes[i];
    unsigned char *self = obs + 2 * MB_CROP;
    if (h->respawn) {
        memset(obs, 0, 2 * MB_CROP + MB_SELF);
        self[8] = (unsigned char)mb_thirds(h->respawn);
        return;
    }
    /* the map is symmetric under the half turn, so team 1's crop is team 0's at the mirrored tile */
    int x = team == 0 ? h->x : MB_SIZE - 1 - h->x, y = team == 0 ? h->y : MB_SIZE - 1 - h->y;
    for (int r = 0; r < MB_SIDE; r++) mb_terrain_row(x, y + r - MB_VIEW, obs + r * MB_SIDE);
    memset(obs + MB_CROP, 0, MB_CROP);
    const MobaTeam *me = &env->teams[team], *e = &env->teams[1 - team];
    self[0] = (unsigned char)mb_tenths(h->hp, mb_max_hp(h));
    self[1] = (unsigned char)mb_tenths(h->mana, MB_MANA);
    self[2] = (unsigned char)h->level;
    self[3] =
        h->level >= MB_MAX_LEVEL ? 10 : (unsigned char)mb_tenths((float)(h->xp % MB_XP_LEVEL), (float)MB_XP_LEVEL);
    self[4] = (unsigned char)h->attack_cd;
    for (int a = 0; a < MB_ABILITIES; a++) self[5 + a] = (unsigned char)mb_thirds(h->cd[a]);
    self[8] = 0;
    self[9] = (unsigned char)((team == 0 ? h->x : MB_SIZE - 1 - h->x) / 4);
    self[10] = (unsigned char)((team == 0 ? h->y : MB_SIZE - 1 - h->y) / 4);
    self[11] = (unsigned char)mb_towers_standing(env, team);
    self[12] = (unsigned char)mb_towers_standing(env, 1 - team);
    self[13] = (unsigned char)mb_tenths(me->ancient_hp, MB_ANCIENT_HP);
    self[14] = (unsigned char)mb_tenths(e->ancient_hp, MB_ANCIENT_HP);
    self[15] = (unsigned char)mb_tenths((float)env->tick, (float)env->cfg.max_ticks);
}

/* The crops that see the tiles: bit o of a column's (row's) mask, at x + MB_VIEW (y + MB_VIEW), is set when
 * observer o's view spans it; padded like MobaNear, so each view sets MB_SIDE entries, unclipped. */
typedef struct MobaViews {
    uint16_t cols[MB_SIZE + 2 * MB_VIEW], rows[MB_SIZE + 2 * MB_VIEW];
    int hx[2 * MB_MAX_HEROES], hy[2 * MB_MAX_HEROES], hteam[2 * MB_MAX_HEROES];
    unsigned char *hobs[2 * MB_MAX_HEROES];
} MobaViews;

/* Put a unit (code as team 0 sees it; health `hp` of `max_hp`) into the crops of the heroes that see its tile.
 * Its health is only turned into tenths when some hero sees it: most units are out of every view. */
static inline void mb_put(const MobaViews *v, int x, int y, int code, float hp, float max_hp) {
    unsigned seen = v->cols[x + MB_VIEW] & v->rows[y + MB_VIEW];
    if (!seen) return;
    unsigned char tenths = (unsigned char)mb_tenths(hp, max_hp);
    do {
        int o = __builtin_ctz(seen);
        seen &= seen - 1;
        int dx = x - v->hx[o], dy = y - v->hy[o], c = code;
        if (v->hteam[o]) { /* the half turn, and the other team's units are the enemies */
            dx = -dx;
            dy = -dy;
            c += 1 - 2 * ((code - MB_CREEP0) & 1);
        }
        int cell = (dy + MB_VIEW) * MB_SIDE + dx + MB_VIEW;
        v->hobs[o][cell] = (unsigned char)c;
        v->hobs[o][MB_CROP + cell] = tenths;
    } while (seen);
}

/* Every row's observation. Units are put into the crops of the live heroes that see them, rather than
 * painted on a map that is then cropped: a map per game made the step memory-bound. The order is
 * mb_units's, so that a later unit covers an earlier one on its tile; the units are walked here again
 * rather than listed by mb_units first, which cost 13-15% of a step in an interleaved bench. */
static void mb_observe_all(Moba *env) {
    int rows = env->num_agents, n = 0;
    MobaViews v;
    memset(v.cols, 0, sizeof v.cols);
    memset(v.rows, 0, sizeof v.rows);
    for (int r = 0; r < rows; r++) {
        int team = r / env->cfg.heroes, i = r % env->cfg.heroes;
        const MobaHero *h = &env->teams[team].heroes[i];
        unsigned char *obs = env->observations + (size_t)r * env->obs_size;
        mb_observe(env, team, i, obs);
        env->masks[r] = (unsigned char)!h->respawn;
        if (h->respawn) continue;
        v.hx[n] = h->x;
        v.hy[n] = h->y;
        v.hteam[n] = team;
        v.hobs[n] = obs;
        for (int c = 0; c < MB_SIDE; c++) {
            v.cols[h->x + c] |= (uint16_t)(1u << n);
            v.rows[h->y + c] |= (uint16_t)(1u << n);
        }
        n++;
    }
    if (n == 0) return;
    for (int t = 0; t < 2; t++) {
        const MobaTeam *team = &env->teams[t];
        for (int lane = 0; lane < MB_LANES; lane++)
            for (int k = 0; k < MB_TOWERS; k++) {
                const MobaTower *tw = &team->towers[lane][k];
                if (tw->hp <= 0.0f) continue;
                int idx = mb_index(env, lane, t, tw->p);
                mb_put(&v, env->path_x[lane][idx], env->path_y[lane][idx], MB_TOWER0 + t, tw->hp, MB_TOWER_HP);
            }
        mb_put(&v, mb_base_x(t), mb_base_y(t), MB_ANCIENT0 + t, team->ancient_hp, MB_ANCIENT_HP);
    }
    for (int t = 0; t < 2; t++)
        for (int lane = 0; lane < MB_LANES; lane++) {
            const unsigned char *px = env->path_x[lane], *py = env->path_y[lane];
            int last = env->path_len[lane] - 1;
            for (int k = 0; k < env->teams[t].n_creeps[lane]; k++) {
                const MobaCreep *c = &env->teams[t].creeps[lane][k];
                int idx = t == 0 ? c->p : last - c->p;
                mb_put(&v, px[idx], py[idx], MB_CREEP0 + t, c->hp, MB_CREEP_HP);
            }
        }
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < env->cfg.heroes; i++) {
            const MobaHero *h = &env->teams[t].heroes[i];
            if (!h->respawn) mb_put(&v, h->x, h->y, MB_HERO0 + t, h->hp, mb_max_hp(h));
        }
    for (int o = 0; o < n; o++) v.hobs[o][MB_CROP / 2] = MB_SELF_CODE;
}

/* The scripted hero: fight what is in range with the ability that fits, retreat to heal when hurt,
 * and otherwise walk its lane behind the front of its creeps. Returns move and act (team's frame); with
 * a basic attack, `target` is its target (the hero holds its tile), for mb_hero_turn. */
static void mb_autopilot(const Moba *env, int team, int i, int *move, int *act, MobaTarget *target) {
    static const int dir[3][3] = {{6, 1, 5}, {3, 0, 4}, {8, 2, 7}}; /* [dy + 1][dx + 1] in team 0's frame */
    const MobaHero *h = &env->teams[team].heroes[i];
    *move = 0;
    *act = MB_ACT_NONE;
    if (h->respawn) return;
    int enemy = 1 - team, lane = MB_LANE_OF[i];
    float frac = h->hp / mb_max_hp(h);
    int gx, gy;
    MobaTarget *t = target;
    int in_range = mb_weakest(env, enemy, h->x, h->y, MB_HERO_RANGE, t);
    if (frac < 0.35f) {
        if (h->cd[MB_E] == 0 && h->mana >= MB_MANA_COST[MB_E]) *act = MB_ACT_E;
        gx = mb_base_x(team);
        gy = mb_base_y(team);
    } else {
        int near = 0;
        const MobaTeam *e = &env->teams[enemy];
        for (int k = 0; k < env->cfg.heroes; k++)
            near += !e->heroes[k].respawn && mb_cheb(h->x, h->y, e->heroes[k].x, e->heroes[k].y) <= 2;
        if (h->cd[MB_Q] == 0 && h->mana >= MB_MANA_COST[MB_Q] && mb_nearest_hero(env, enemy, h->x, h->y, 5) >= 0)
            *act = MB_ACT_Q;
        else if (h->cd[MB_W] == 0 && h->mana >= MB_MANA_COST[MB_W] && near >= 2) *act = MB_ACT_W;
        else if (frac < 0.6f && h->cd[MB_E] == 0 && h->mana >= MB_MANA_COST[MB_E]) *act = MB_ACT_E;
        else if (in_range) *act = MB_ACT_ATTACK;
        if (in_range) return; /* hold the ground while something is in reach */
        int p = mb_front(env, team, lane);
        if (p < 0) { /* no creeps: wait by the outermost standing tower, or at the base */
            p = 0;
            for (int k = 0; k < MB_TOWERS; k++)
                if (env->teams[team].towers[lane][k].hp > 0.0f) p = env->teams[team].towers[lane][k].p;
        }
        int idx = mb_index(env, lane, team, p);
        gx = env->path_x[lane][idx];
        gy = env->path_y[lane][idx];
    }
    int dx = (gx > h->x) - (gx < h->x), dy = (gy > h->y) - (gy < h->y);
    if (team == 1) {
        dx = -dx;
        dy = -dy;
    }
    *move = dir[dy + 1][dx + 1];
}

static void mb_finish(Moba *env, int winner) {
    int rows = env->num_agents;
    for (int r = 0; r < rows; r++) {
        int team = r / env->cfg.heroes;
        MobaHero *h = &env->teams[team].heroes[r % env->cfg.heroes];
        env->terminals[r] = (unsigned char)(winner >= 0);
        env->truncations[r] = (unsigned char)(winner < 0);
        float ret = h->game_return;
        int destroyed = env->teams[1 - team].towers_lost + (env->teams[1 - team].ancient_hp <= 0.0f);
        env->log.towers += (float)env->teams[1 - team].towers_lost;
        env->log.kills += (float)h->kills;
        env->log.deaths += (float)h->deaths;
        env->log.level += (float)h->level;
        ocean_log_episode(&env->log, ret, (float)env->tick, winner == team ? 1.0f : 0.0f,
                          (float)destroyed / (float)MB_STRUCTURES);
    }
}

static void c_reset(Moba *env) {
    mb_new_game(env);
    mb_observe_all(env);
}

static void c_step(Moba *env) {
    int rows = env->num_agents, heroes = env->cfg.heroes;
    for (int r = 0; r < rows; r++) {
        env->rewards[r] = 0.0f;
        env->terminals[r] = env->truncations[r] = 0;
    }
    env->tick++;
    for (int o = 0; o < 2; o++) {
        int team = o ^ (env->tick & 1);
        for (int i = 0; i < heroes; i++) {
            int move, act;
            int r = team * heroes + i;
            MobaTarget target, *weakest = NULL;
            if ((env->cfg.autopilot && r < rows) || (r >= rows && env->cfg.opponent == 0)) {
                mb_autopilot(env, team, i, &move, &act, &target);
                if (act == MB_ACT_ATTACK) weakest = &target;
            } else if (r < rows) {
                move = ocean_clamp(env->actions[2 * r], 9);
                act = ocean_clamp(env->actions[2 * r + 1], MB_ACTS);
            } else if (env->cfg.opponent == 1) {
                move = ocean_randint(&env->rng, 9);
                act = ocean_randint(&env->rng, MB_ACTS);
            } else {
                move = act = 0;
            }
            mb_hero_turn(env, team, i, move, act, weakest);
        }
    }
    for (int o = 0; o < 2; o++) mb_creeps_turn(env, o ^ (env->tick & 1));
    for (int o = 0; o < 2; o++) mb_structures_turn(env, o ^ (env->tick & 1));
    mb_upkeep(env);
    int fallen0 = env->teams[0].ancient_hp <= 0.0f, fallen1 = env->teams[1].ancient_hp <= 0.0f;
    int over = fallen0 || fallen1 || env->tick >= env->cfg.max_ticks;
    /* both fall in one tick only when both were open: the one hit harder loses */
    int winner = !(fallen0 || fallen1)
                     ? -1
                     : (!fallen0 ? 0 : (!fallen1 ? 1 : (env->teams[0].ancient_hp < env->teams[1].ancient_hp ? 1 : 0)));
    for (int r = 0; r < rows; r++) {
        int team = r / heroes;
        if (winner >= 0) env->rewards[r] += team == winner ? env->cfg.reward_win : -env->cfg.reward_win;
        env->teams[team].heroes[r % heroes].game_return += env->rewards[r];
    }
    if (over) {
        mb_finish(env, winner);
        mb_new_game(env);
    }
    mb_observe_all(env);
}

#define MB_SCALE 8
static void c_frame_shape(Moba *env, int *h, int *w) {
    (void)env;
    *h = *w = MB_SIZE * MB_SCALE;
}

static void c_render_rgb(Moba *env, unsigned char *frame) {
    static const unsigned char palette[MB_SELF_CODE + 1][3] = {
        {34, 60, 34},  {120, 100, 70}, {0, 0, 0},     {90, 160, 255},  {255, 110, 90}, {40, 90, 220},
        {200, 40, 40}, {20, 40, 160},  {140, 20, 20}, {140, 230, 255}, {255, 200, 80}, {255, 255, 255}};
    unsigned char codes[MB_SIZE * MB_SIZE];
    mb_paint(env, codes);
    ocean_render_grid(frame, codes, MB_SIZE, MB_SIZE, MB_SIZE, MB_SCALE, palette, MB_SELF_CODE + 1);
}

static int c_render_text(Moba *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    unsigned char codes[MB_SIZE * MB_SIZE];
    mb_paint(env, codes);
    ocean_text_grid(&t, codes, MB_SIZE, MB_SIZE, MB_SIZE, ".: cdTtAaHh@", MB_SELF_CODE + 1);
    return t.len;
}

static void c_close(Moba *env) { (void)env; }
