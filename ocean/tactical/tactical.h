/* Tactical: a turn-based squad battle on a grid (after PufferLib 3.0's tactical, whose units, terrain and
 * ranged attacks with line of sight it keeps, in a smaller game). Two squads of `units` units, soldiers and
 * archers in turn, start on opposite rows of a point-symmetric map of ground, walls and water. The agent
 * (one row) commands our squad one unit a step: the unit moves one cell (or stays), then may attack an
 * enemy in range. When each of our living units has acted, the built-in opponent plays its whole turn in
 * the same step; then the next round starts. Who moves first alternates by episode (an opponent that moves
 * first has played its turn before the first observation).
 *
 * Units: a soldier has TC_SOLDIER_HP hit points and hits an orthogonally adjacent enemy for
 * TC_SOLDIER_DAMAGE; an archer has TC_ARCHER_HP and hits an enemy within Manhattan distance TC_ARCHER_RANGE
 * for TC_ARCHER_DAMAGE when no wall stands on the straight line between them (water does not block sight).
 * Units cannot enter walls, water or another unit's cell. A unit at 0 hit points is removed.
 *
 * The battle ends when a squad is gone: +1 for a win (terminal), -1 for a loss; after max_rounds it is a
 * draw (truncated). damage_reward shapes it: damage dealt minus damage taken, over a squad's hit points.
 * Log: score = enemy units removed, perf = 1 for a win, else 0 (the win rate).
 *
 * The built-in opponent and the autopilot play the same scripted rules per unit: with an enemy in range,
 * stay and hit the weakest (fewest hit points, then the lowest index); else step to the neighbouring cell
 * nearest to an enemy (walking distance around walls and water, ignoring units) if that is nearer than
 * where it stands, and then hit the weakest in range, if any. */
#include <stdlib.h>
#include "spec.h"
#include "ocean.h"

#define TC_CELLS (TC_MAX_SIDE * TC_MAX_SIDE)
#define TC_SOLDIER_HP 12
#define TC_SOLDIER_DAMAGE 4
#define TC_ARCHER_HP 8
#define TC_ARCHER_DAMAGE 3
#define TC_ARCHER_RANGE 4
#define TC_MOVES 5
#define TC_WORDS ((TC_CELLS + 63) / 64) /* 64-bit words of a set of cells */
_Static_assert((TC_CELLS & (TC_CELLS - 1)) == 0, "the search wraps cell indices with TC_CELLS - 1");
#define TC_MAP_TRIES 8 /* maps drawn before falling back to open ground, when the squads cannot meet */
#define TC_SCALE 32 /* pixels per cell */
#define TC_VIEW_W (2 * TC_VIEW + 1)
#define TC_PAD (TC_MAX_SIDE + 2 * TC_VIEW) /* the largest map's side with its border of walls */

enum { TC_GROUND, TC_WATER, TC_WALL };
/* a stored cell: its kind in the low two bits, then whether each move leads to open ground (no unit counted),
 * and whether a unit stands there; a step reads one byte for all of it, on the rows its view reads anyway */
#define TC_KIND 3
#define TC_EXIT(m) (1 << (2 + (m))) /* moves 1-4: bits 3-6 */
#define TC_OCCUPIED 0x80
_Static_assert(TC_GROUND == 0 && TC_WATER == 1 && TC_WALL == 2, "the map draw and the view count on the kinds' order");
enum { TC_OURS, TC_THEIRS };

typedef struct Unit {
    unsigned char x, y, hp, archer, alive;
} Unit;

/* The fields a step reads first, the per-cell arrays after: 4096 games at a time are out of the cache between
 * their steps, so the lines a step touches cost as much as its instructions. */
typedef struct Tactical {
    OCEAN_SLOTS(float);
    TacticalConfig cfg;
    /* the whole game lives in the struct (no pointers), so a saved state is the struct itself */
    Unit squad[2][TC_MAX_UNITS];
    /* per unit of each side, bit m: the move m leads one step nearer to that side's nearest enemy */
    unsigned char toward[2][TC_MAX_UNITS];
    int current; /* our unit to command */
    int round, first; /* first: the side that moves first this episode */
    int hp_total; /* a squad's hit points at the start */
    int kills; /* enemy units removed this episode */
    int steps; /* steps (our units' moves) this episode */
    float ret;
    /* sets of cells, bit c of word c / 64: open ground, and open ground off the first (last) column */
    uint64_t ground[TC_WORDS], ground_x0[TC_WORDS], ground_xw[TC_WORDS];
    /* the map's cells (TC_KIND, TC_EXIT, TC_OCCUPIED) at (x + TC_VIEW, y + TC_VIEW), rows width + 2 TC_VIEW apart,
     * walls around it: a view row is 7 bytes in a row */
    unsigned char terrain[TC_PAD * TC_PAD];
} Tactical;

static int c_init(Tactical *env) {
    (void)env;
    return 0;
}

static void c_close(Tactical *env) { (void)env; }

static inline int tc_cell(const Tactical *env, int x, int y) { return y * env->cfg.width + x; }
static inline int tc_stride(const Tactical *env) { return env->cfg.width + 2 * TC_VIEW; }
static inline int tc_at(const Tactical *env, int x, int y) { /* in env->terrain */
    return (y + TC_VIEW) * tc_stride(env) + x + TC_VIEW;
}
static inline int tc_abs(int v) { return v < 0 ? -v : v; }

static const int TC_DX[TC_MOVES] = {0, 0, 0, -1, 1};
static const int TC_DY[TC_MOVES] = {0, -1, 1, 0, 0};

/* Whether a unit may step `move` from where it stands (staying is always allowed): an exit, and no unit there. */
static inline int tc_can_move(const Tactical *env, const Unit *u, int move) {
    int a = tc_at(env, u->x, u->y), to = a + TC_DY[move] * tc_stride(env) + TC_DX[move];
    return move == 0 || ((env->terrain[a] & TC_EXIT(move)) && !(env->terrain[to] & TC_OCCUPIED));
}

/* No wall strictly between two cells, along the line a Bresenham walk draws from one to the other. */
static int tc_sight(const Tactical *env, int x0, int y0, int x1, int y1) {
    int dx = tc_abs(x1 - x0), dy = -tc_abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy, x = x0, y = y0;
    for (;;) {
        if (x == x1 && y == y1) return 1;
        if ((x != x0 || y != y0) && (env->terrain[tc_at(env, x, y)] & TC_KIND) == TC_WALL) return 0;
        int e2 = 2 * err;
        if (e2 >= dy) err += dy, x += sx;
        if (e2 <= dx) err += dx, y += sy;
    }
}

/* Whether a unit at distance d (Manhattan) from a living target is close enough to hit it, sight aside. */
static inline int tc_near(const Unit *u, int d) { return u->archer ? d <= TC_ARCHER_RANGE : d == 1; }

/* Whether a unit standing at (x, y) can hit `target`. */
static inline int tc_in_range(const Tactical *env, const Unit *u, int x, int y, const Unit *target) {
    int d = tc_abs(target->x - x) + tc_abs(target->y - y);
    if (!(target->alive & tc_near(u, d))) return 0; /* one branch: most enemies are out of reach */
    return !u->archer || tc_sight(env, x, y, target->x, target->y);
}

/* Cells one step from `f` (up, down, left, right) on open ground and not in `seen`, over `nw` words: the
 * next ring of a breadth-first search, 64 cells at a time and without a branch per cell. */
static inline __attribute__((always_inline)) void tc_ring(const Tactical *env, const uint64_t *f, const uint64_t *seen,
                                                          uint64_t *out, int nw) {
    int w = env->cfg.width;
    for (int i = 0; i < nw; i++) {
        uint64_t below = i > 0 ? f[i - 1] : 0, above = i + 1 < nw ? f[i + 1] : 0;
        uint64_t vertical = (f[i] << w) | (below >> (64 - w)) | (f[i] >> w) | (above << (64 - w));
        uint64_t right = (f[i] << 1) | (below >> 63), left = (f[i] >> 1) | (above << 63);
        out[i] = ((vertical & env->ground[i]) | (right & env->ground_x0[i]) | (left & env->ground_xw[i])) & ~seen[i];
    }
}

static inline int tc_has(const uint64_t *set, int c) { return (int)((set[c >> 6] >> (c & 63)) & 1); }

/* For each living unit of side 1 - enemy from unit `from` on, the moves that step nearer to the nearest
 * living unit of side `enemy`, walking around walls and water (units ignored): the neighbours whose walking
 * distance is one less than the unit's own. A search grows rings out of the enemies and stops when every
 * such unit is reached: the unit reached in ring d gets the neighbours of ring d - 1. A unit no enemy can
 * reach gets none. The units that have acted in the turn are left out (a kill searches again for the rest). */
static inline __attribute__((always_inline)) void tc_search_words(Tactical *env, int enemy, int from, int nw) {
    /* all words zero: a ring of nw words leaves the rest zero, so a wrapped index reads nothing */
    uint64_t seen[TC_WORDS] = {0}, ring[TC_WORDS] = {0}, next[TC_WORDS] = {0}, walkers[TC_WORDS] = {0};
    int side = 1 - enemy, left = 0;
    for (int k = 0; k < env->cfg.units; k++) {
        const Unit *e = &env->squad[enemy][k], *u = &env->squad[side][k];
        env->toward[side][k] = 0;
        if (e->alive) {
            int c = tc_cell(env, e->x, e->y);
            seen[c >> 6] |= 1ull << (c & 63), ring[c >> 6] |= 1ull << (c & 63);
        }
        if (u->alive && k >= from) {
            int c = tc_cell(env, u->x, u->y);
            walkers[c >> 6] |= 1ull << (c & 63);
            left++;
        }
    }
    const int step[TC_MOVES] = {0, -env->cfg.width, env->cfg.width, -1, 1};
    while (left > 0) {
        tc_ring(env, ring, seen, next, nw);
        uint64_t any = 0, met = 0;
        for (int i = 0; i < nw; i++) seen[i] |= next[i], any |= next[i], met |= next[i] & walkers[i];
        if (!any) break; /* the rest stand where no enemy can walk */
        if (met) /* the units this ring reached */
            for (int k = from; k < env->cfg.units; k++) {
                const Unit *u = &env->squad[side][k];
                int c = tc_cell(env, u->x, u->y);
                if (!u->alive || !tc_has(next, c)) continue;
                int exits = env->terrain[tc_at(env, u->x, u->y)], toward = 0;
                for (int m = 1; m < TC_MOVES; m++) /* a step off the map wraps to some cell, but no exit leads there */
                    toward |= (((exits & TC_EXIT(m)) != 0) & tc_has(ring, (c + step[m]) & (TC_CELLS - 1))) << m;
                env->toward[side][k] = (unsigned char)toward;
                left--;
            }
        for (int i = 0; i < nw; i++) ring[i] = next[i];
    }
}

static void tc_fill_toward(Tactical *env, int enemy, int from) {
    int n = env->cfg.width * env->cfg.height;
    if (n <= 64) tc_search_words(env, enemy, from, 1);
    else if (n <= 128) tc_search_words(env, enemy, from, 2);
    else tc_search_words(env, enemy, from, TC_WORDS);
}

static void tc_place(Tactical *env, int side, int k, int x, int y) {
    Unit *u = &env->squad[side][k];
    env->terrain[tc_at(env, u->x, u->y)] &= (unsigned char)~TC_OCCUPIED;
    u->x = (unsigned char)x, u->y = (unsigned char)y;
    env->terrain[tc_at(env, x, y)] |= TC_OCCUPIED;
}

static inline int tc_alive(const Tactical *env, int side) {
    int n = 0;
    for (int k = 0; k < env->cfg.units; k++) n += env->squad[side][k].alive;
    return n;
}

/* Unit k of `side` hits enemy `target`; returns the damage dealt. */
static int tc_attack(Tactical *env, int side, int k, int target) {
    Unit *u = &env->squad[side][k], *t = &env->squad[1 - side][target];
    int damage = u->archer ? TC_ARCHER_DAMAGE : TC_SOLDIER_DAMAGE;
    damage = damage < t->hp ? damage : t->hp;
    t->hp -= damage;
    if (t->hp == 0) {
        t->alive = 0;
        env->terrain[tc_at(env, t->x, t->y)] &= (unsigned char)~TC_OCCUPIED;
        if (side == TC_OURS) env->kills++;
        /* the dead no longer draw the side's units (ours follow the distances only under the autopilot) */
        if (side == TC_THEIRS || env->cfg.autopilot) tc_fill_toward(env, 1 - side, k + 1);
    }
    return damage;
}

/* The weakest enemy unit k of `side` can hit from (x, y): fewest hit points, then the lowest index; -1: none. */
static int tc_weakest_in_range(const Tactical *env, int side, int k, int x, int y) {
    const Unit *u = &env->squad[side][k];
    int best = -1, best_hp = 0;
    for (int j = 0; j < env->cfg.units; j++) {
        const Unit *t = &env->squad[1 - side][j];
        int d = tc_abs(t->x - x) + tc_abs(t->y - y);
        if (!(t->alive & tc_near(u, d)) || (best >= 0 && t->hp >= best_hp)) continue;
        if (u->archer && !tc_sight(env, x, y, t->x, t->y)) continue; /* the costly test last */
        best = j, best_hp = t->hp;
    }
    return best;
}

/* The scripted rules for unit k of `side` (env->toward[side] must be filled for that side's enemies as they
 * stand): the move and the target (-1: none). The first move in order that steps nearer and is free. */
static void tc_scripted(const Tactical *env, int side, int k, int *move, int *target) {
    const Unit *u = &env->squad[side][k];
    *move = 0;
    *target = tc_weakest_in_range(env, side, k, u->x, u->y);
    if (*target >= 0) return;
    int toward = env->toward[side][k];
    for (int m = 1; m < TC_MOVES && !*move; m++)
        if (((toward >> m) & 1) && tc_can_move(env, u, m)) *move = m;
    *target = tc_weakest_in_range(env, side, k, u->x + TC_DX[*move], u->y + TC_DY[*move]);
}

/* Unit k of `side` moves (an illegal move stays) and attacks (an illegal target is none); the damage dealt. */
static int tc_act(Tactical *env, int side, int k, int move, int target) {
    Unit *u = &env->squad[side][k];
    if (tc_can_move(env, u, move)) tc_place(env, side, k, u->x + TC_DX[move], u->y + TC_DY[move]);
    if (target < 0 || target >= env->cfg.units || !tc_in_range(env, u, u->x, u->y, &env->squad[1 - side][target]))
        return 0;
    return tc_attack(env, side, k, target);
}

/* The opponent's whole turn; returns the damage it dealt. */
static int tc_opponent_turn(Tactical *env) {
    int dealt = 0;
    tc_fill_toward(env, TC_OURS, 0);
    for (int k = 0; k < env->cfg.units && tc_alive(env, TC_OURS); k++) {
        if (!env->squad[TC_THEIRS][k].alive) continue;
        int move, target;
        tc_scripted(env, TC_THEIRS, k, &move, &target);
        dealt += tc_act(env, TC_THEIRS, k, move, target);
    }
    return dealt;
}

static inline int tc_next_alive(const Tactical *env, int from) {
    for (int k = from; k < env->cfg.units; k++)
        if (env->squad[TC_OURS][k].alive) return k;
    return -1;
}

/* Hit points over the maximum, by archer and hit points (a table: the same floats as the division). */
_Static_assert(TC_SOLDIER_HP == 12 && TC_ARCHER_HP == 8, "TC_HP_SHARE is written out for these maxima");
static const float TC_HP_SHARE[2][TC_SOLDIER_HP + 1] = {
    {0 / 12.0f, 1 / 12.0f, 2 / 12.0f, 3 / 12.0f, 4 / 12.0f, 5 / 12.0f, 6 / 12.0f, 7 / 12.0f, 8 / 12.0f, 9 / 12.0f,
     10 / 12.0f, 11 / 12.0f, 12 / 12.0f},
    {0 / 8.0f, 1 / 8.0f, 2 / 8.0f, 3 / 8.0f, 4 / 8.0f, 5 / 8.0f, 6 / 8.0f, 7 / 8.0f, 8 / 8.0f},
};

/* A cell's kind in the view: 0 ground, 0.5 water, 1 wall (a load rather than a conversion per cell). */
static const float TC_KIND_VIEW[3] = {[TC_GROUND] = 0.0f, [TC_WATER] = 0.5f, [TC_WALL] = 1.0f};

static void tc_write_obs(Tactical *env) {
    int units = env->cfg.units, w = env->cfg.width, h = env->cfg.height, side = w > h ? w : h;
    const Unit *me = &env->squad[TC_OURS][env->current];
    float *o = env->observations;
    float inv_side = 1.0f / (float)side;
    o[0] = (float)me->archer;
    o[1] = TC_HP_SHARE[me->archer][me->hp];
    o[2] = (float)me->x / (float)w;
    o[3] = (float)me->y / (float)h;
    o[4] = (float)env->round / (float)env->cfg.max_rounds;
    /* the mask first: every legal move, with no attack or with each enemy in range from where the move lands;
     * staying is always legal, so its column is also the observation's "can hit it from where it stands" */
    unsigned char *mask = env->action_masks;
    memset(mask, 0, (size_t)(TC_MOVES * (1 + units)));
    for (int m = 0; m < TC_MOVES; m++) mask[m] = (unsigned char)tc_can_move(env, me, m);
    int reach = me->archer ? TC_ARCHER_RANGE : 1;
    for (int j = 0; j < units; j++) {
        const Unit *t = &env->squad[TC_THEIRS][j];
        /* one step changes the distance by at most one: an enemy beyond reach + 1 is out of range from every move */
        if (!t->alive || tc_abs(t->x - me->x) + tc_abs(t->y - me->y) > reach + 1) continue;
        for (int m = 0; m < TC_MOVES; m++)
            if (mask[m])
                mask[(1 + j) * TC_MOVES + m] =
                    (unsigned char)tc_in_range(env, me, me->x + TC_DX[m], me->y + TC_DY[m], t);
    }
    o += 5;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < units; k++) {
            const Unit *u = &env->squad[s][k];
            o[0] = (float)u->alive;
            o[1] = u->alive ? (float)(u->x - me->x) * inv_side : 0.0f;
            o[2] = u->alive ? (float)(u->y - me->y) * inv_side : 0.0f;
            o[3] = TC_HP_SHARE[u->archer][u->hp];
            o[4] = (float)u->archer;
            if (s == TC_THEIRS) o[5] = (float)mask[(1 + k) * TC_MOVES];
            o += s == TC_OURS ? 5 : 6;
        }
    /* the border of walls stands for the cells off the map, so the view is 7 rows of 7 bytes, never clipped */
    const unsigned char *row = env->terrain + tc_at(env, me->x - TC_VIEW, me->y - TC_VIEW);
    for (int dy = 0, stride = tc_stride(env); dy < TC_VIEW_W; dy++, o += TC_VIEW_W, row += stride)
        for (int c = 0; c < TC_VIEW_W; c++) o[c] = TC_KIND_VIEW[row[c] & TC_KIND];
}

/* A point-symmetric map of walls and water where the two squads can reach each other. */
static void tc_new_map(Tactical *env) {
    int w = env->cfg.width, h = env->cfg.height, n = w * h;
    const float walls = env->cfg.walls, wet = env->cfg.walls + env->cfg.water;
    unsigned char *t = env->terrain;
    memset(t, TC_WALL, (size_t)((h + 2 * TC_VIEW) * tc_stride(env)));
    for (int tries = 0; tries <= TC_MAP_TRIES; tries++) {
        for (int y = 0; y < h; y++) memset(t + tc_at(env, 0, y), TC_GROUND, (size_t)w);
        if (tries < TC_MAP_TRIES) /* the first half of the map but its top row; the starting rows stay open */
            for (int c = w, x = 0, y = 1; c < (n + 1) / 2; c++, x = x + 1 == w ? 0 : x + 1, y += x == 0) {
                float r = ocean_randf(&env->rng);
                unsigned char kind = (unsigned char)((r < wet) + (r < walls)); /* wall 2, water 1, ground 0 */
                t[tc_at(env, x, y)] = t[tc_at(env, w - 1 - x, h - 1 - y)] = kind;
            }
        uint64_t *sets[3] = {env->ground, env->ground_x0, env->ground_xw};
        for (int i = 0; i < 3; i++) memset(sets[i], 0, sizeof(env->ground));
        for (int c = 0, x = 0, y = 0; c < n; c++, x = x + 1 == w ? 0 : x + 1, y += x == 0) {
            uint64_t bit = (uint64_t)(t[tc_at(env, x, y)] == TC_GROUND) << (c & 63);
            env->ground[c >> 6] |= bit;
            env->ground_x0[c >> 6] |= x != 0 ? bit : 0;
            env->ground_xw[c >> 6] |= x != w - 1 ? bit : 0;
        }
        /* the squads can meet when every cell of the bottom row (open ground) reaches the top left corner */
        uint64_t seen[TC_WORDS] = {1}, ring[TC_WORDS] = {1}, next[TC_WORDS];
        for (uint64_t any = 1; any;) {
            tc_ring(env, ring, seen, next, TC_WORDS);
            any = 0;
            for (int i = 0; i < TC_WORDS; i++) seen[i] |= next[i], ring[i] = next[i], any |= next[i];
        }
        int reachable = 1;
        for (int x = 0; x < w; x++) reachable &= tc_has(seen, tc_cell(env, x, h - 1));
        if (reachable) break;
    }
    /* the border is walls, so no test for the map's edges */
    for (int y = 0; y < h; y++)
        for (int x = 0, a = tc_at(env, 0, y), stride = tc_stride(env); x < w; x++, a++) {
            int up = (t[a - stride] & TC_KIND) == TC_GROUND, down = (t[a + stride] & TC_KIND) == TC_GROUND;
            int left = (t[a - 1] & TC_KIND) == TC_GROUND, right = (t[a + 1] & TC_KIND) == TC_GROUND;
            t[a] |= (unsigned char)(up * TC_EXIT(1) | down * TC_EXIT(2) | left * TC_EXIT(3) | right * TC_EXIT(4));
        }
}

static void tc_new_episode(Tactical *env) {
    int w = env->cfg.width, h = env->cfg.height, units = env->cfg.units;
    tc_new_map(env);
    /* our squad on the bottom row, centred; theirs mirrored through the centre on the top row */
    int left = (w - units) / 2;
    env->hp_total = 0;
    for (int k = 0; k < units; k++) {
        int archer = k % 2;
        int hp = archer ? TC_ARCHER_HP : TC_SOLDIER_HP;
        env->hp_total += hp;
        for (int s = 0; s < 2; s++) {
            int x = s == TC_OURS ? left + k : w - 1 - (left + k), y = s == TC_OURS ? h - 1 : 0;
            env->squad[s][k] = (Unit){.x = x, .y = y, .hp = hp, .archer = archer, .alive = 1};
            env->terrain[tc_at(env, x, y)] |= TC_OCCUPIED;
        }
    }
    for (int s = 0; s < 2; s++)
        for (int k = units; k < TC_MAX_UNITS; k++) env->squad[s][k] = (Unit){0};
    env->round = 0;
    env->kills = 0;
    env->steps = 0;
    env->ret = 0.0f;
    env->first = (int)(ocean_rand(&env->rng) & 1);
    if (env->first == TC_THEIRS) tc_opponent_turn(env); /* its damage, if any, is in no reward: few maps let it hit */
    env->current = tc_next_alive(env, 0);
    if (env->cfg.autopilot) tc_fill_toward(env, TC_THEIRS, 0);
    tc_write_obs(env);
}

static void c_reset(Tactical *env) { tc_new_episode(env); }

static void c_step(Tactical *env) {
    int units = env->cfg.units, move, target;
    if (env->cfg.autopilot) {
        tc_scripted(env, TC_OURS, env->current, &move, &target);
    } else {
        int a = ocean_clamp(env->actions[0], TC_MOVES * (1 + units));
        move = a % TC_MOVES;
        target = a / TC_MOVES - 1;
    }
    float scale = env->cfg.damage_reward / (float)env->hp_total;
    float reward = scale * (float)tc_act(env, TC_OURS, env->current, move, target);
    int over = 0, won = 0;
    if (!tc_alive(env, TC_THEIRS)) {
        over = won = 1;
    } else {
        env->current = tc_next_alive(env, env->current + 1);
        if (env->current < 0) { /* our turn is over: theirs, then the next round */
            reward -= scale * (float)tc_opponent_turn(env);
            env->round++;
            if (!tc_alive(env, TC_OURS)) over = 1;
            env->current = tc_next_alive(env, 0);
            if (env->cfg.autopilot) tc_fill_toward(env, TC_THEIRS, 0);
        }
    }
    int timeout = !over && env->round >= env->cfg.max_rounds;
    if (over) reward += won ? 1.0f : -1.0f;
    env->rewards[0] = reward;
    env->terminals[0] = (unsigned char)over;
    env->truncations[0] = (unsigned char)timeout;
    env->ret += reward;
    env->steps++;
    if (over || timeout) {
        ocean_log_episode(&env->log, env->ret, (float)env->steps, (float)env->kills, (float)won);
        tc_new_episode(env);
        return;
    }
    tc_write_obs(env);
}

/* ---- rendering ---- */

static void c_frame_shape(Tactical *env, int *h, int *w) {
    *h = env->cfg.height * TC_SCALE;
    *w = env->cfg.width * TC_SCALE;
}

static void c_render_rgb(Tactical *env, unsigned char *frame) {
    static const unsigned char ground[3] = {120, 150, 100}, water[3] = {40, 90, 170}, wall[3] = {70, 60, 55},
                               ours[3] = {40, 200, 230}, theirs[3] = {220, 60, 50}, hp_rgb[3] = {250, 250, 250},
                               current_rgb[3] = {250, 220, 60};
    int fh = env->cfg.height * TC_SCALE, fw = env->cfg.width * TC_SCALE;
    for (int y = 0; y < env->cfg.height; y++)
        for (int x = 0; x < env->cfg.width; x++) {
            int t = env->terrain[tc_at(env, x, y)] & TC_KIND;
            const unsigned char *rgb = t == TC_WALL ? wall : (t == TC_WATER ? water : ground);
            ocean_fill_rect(frame, fh, fw, x * TC_SCALE, y * TC_SCALE, TC_SCALE - 1, TC_SCALE - 1, rgb);
        }
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < env->cfg.units; k++) {
            const Unit *u = &env->squad[s][k];
            if (!u->alive) continue;
            int px = u->x * TC_SCALE, py = u->y * TC_SCALE, inset = u->archer ? 9 : 5;
            if (s == TC_OURS && k == env->current)
                ocean_fill_rect(frame, fh, fw, px + 2, py + 2, TC_SCALE - 5, TC_SCALE - 5, current_rgb);
            ocean_fill_rect(frame, fh, fw, px + inset, py + inset, TC_SCALE - 2 * inset, TC_SCALE - 2 * inset,
                            s == TC_OURS ? ours : theirs);
            int max_hp = u->archer ? TC_ARCHER_HP : TC_SOLDIER_HP;
            ocean_fill_rect(frame, fh, fw, px + 3, py + TC_SCALE - 5, (TC_SCALE - 7) * u->hp / max_hp, 2, hp_rgb);
        }
}

static int c_render_text(Tactical *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "round ");
    ocean_puti(&t, env->round);
    ocean_puts(&t, "  ours ");
    ocean_puti(&t, tc_alive(env, TC_OURS));
    ocean_puts(&t, "  theirs ");
    ocean_puti(&t, tc_alive(env, TC_THEIRS));
    ocean_putc(&t, '\n');
    for (int y = 0; y < env->cfg.height; y++) {
        for (int x = 0; x < env->cfg.width; x++) {
            int kind = env->terrain[tc_at(env, x, y)] & TC_KIND;
            char ch = kind == TC_WALL ? '#' : (kind == TC_WATER ? '~' : '.');
            for (int s = 0; s < 2; s++)
                for (int k = 0; k < env->cfg.units; k++) {
                    const Unit *u = &env->squad[s][k];
                    if (u->alive && u->x == x && u->y == y)
                        ch = s == TC_OURS ? (u->archer ? 'a' : 's') : (u->archer ? 'A' : 'S');
                }
            ocean_putc(&t, ch);
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}
