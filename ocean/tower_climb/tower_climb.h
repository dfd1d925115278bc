/* Tower climb: PufferLib 3.0's block-pushing climbing puzzle, written anew. A climber stands on a pile of
 * blocks in a TC_SIDE x TC_SIDE grid of height + 2 floors and must stand on the goal block at the top.
 * It walks, climbs one block up, steps down one, or steps off an edge to hang from it; hanging, it
 * shimmies along the face and round corners, climbs up, or lets go and falls to the first block below
 * (into the void when there is none: death). Gripping the block ahead, it pushes the row of blocks in
 * front one cell or pulls the gripped block one cell, stepping back. A block rests on the block below
 * or on the edge of one diagonally below (a side neighbour one floor down); unsupported blocks fall,
 * and one that falls on the climber kills it. Floor 0 is the ground layer: its blocks never fall.
 *
 * Each floor is a 64-bit mask (bit z * 8 + x), so a state is ten words and the falling rule is a few
 * shifts. Levels are drawn from env->rng as a random hill, settled, and solved by a breadth-first search
 * over whole states (blocks, position, facing, hanging, grip) in memory c_init allocates; the shortest
 * plan found is the autopilot. A level is kept for `replays` episodes, since a search costs as much as
 * thousands of steps (3.0 makes 50 levels at start and shares them). Cells are y * 64 + z * 8 + x. */
#include <stdint.h>
#include <stdlib.h>
#include "ocean.h"
#include "spec.h"

#define TC_CELLS (TC_SIDE * TC_SIDE)
#define TC_NODES 2048          /* states the solver may store before it gives a level up */
#define TC_TABLE (2 * TC_NODES) /* its open-addressing table of visited states, a power of two */
#define TC_ATTEMPTS 64         /* levels drawn before one without the min_moves bound is accepted */
#define TC_WINDOW 7            /* the observed window's side in x and z */
#define TC_WINDOW_FLOORS 5
#define TC_COL_X0 0x0101010101010101ULL /* the cells with x = 0 of a floor mask */
#define TC_COL_X7 0x8080808080808080ULL /* the cells with x = 7 */
enum { TC_PX, TC_PZ, TC_NX, TC_NZ, TC_GRAB, TC_DROP, TC_ACTIONS };
enum { TC_ILLEGAL, TC_MOVED, TC_PUSHED, TC_DEATH };
static const int TC_DX[4] = {1, 0, -1, 0}, TC_DZ[4] = {0, 1, 0, -1};

typedef struct TCState {
    uint64_t floors[TC_MAX_FLOORS];
    int16_t pos;
    uint8_t facing, hanging, holding;
} TCState;

typedef struct TCNode {
    TCState s;
    int32_t parent;
    uint8_t action, depth;
} TCNode;

typedef struct TCSearch { /* the solver's memory: not state, its contents are rebuilt by every search */
    TCNode nodes[TC_NODES];
    uint32_t table[TC_TABLE];
} TCSearch;

typedef struct TowerClimb {
    OCEAN_SLOTS(signed char);
    TowerClimbConfig cfg;
    int floors;              /* height + 2 */
    int goal;                /* the goal block's cell */
    TCState start, s;        /* the level's first state; the state now */
    unsigned char plan[TC_MAX_PLAN];
    int plan_len, episodes_on_level, tick, start_floor, best_floor;
    float episode_return;
    TCSearch *search;
} TowerClimb;

/* The search memory is scratch: a saved state carries none of it. */
#define OCEAN_STATE_BLOCKS(X, env) X(search, 0)

static inline int tc_cell(int y, int z, int x) { return y * TC_CELLS + z * TC_SIDE + x; }
static inline int tc_inside(int x, int z) { return x >= 0 && x < TC_SIDE && z >= 0 && z < TC_SIDE; }

static inline int tc_block(const TowerClimb *env, const TCState *s, int y, int z, int x) {
    if (y < 0 || y >= env->floors || !tc_inside(x, z)) return 0;
    return (int)((s->floors[y] >> (z * TC_SIDE + x)) & 1);
}

static inline void tc_set(TCState *s, int y, int z, int x, int on) {
    uint64_t bit = 1ULL << (z * TC_SIDE + x);
    s->floors[y] = on ? s->floors[y] | bit : s->floors[y] & ~bit;
}

/* The cells of the floor above that the blocks of `below` hold: straight above, or one cell aside. */
static inline uint64_t tc_held(uint64_t below) {
    return below | ((below & ~TC_COL_X7) << 1) | ((below & ~TC_COL_X0) >> 1) | (below << TC_SIDE) | (below >> TC_SIDE);
}

/* Let every unsupported block fall, a floor at a time, until all rest. Returns 1 when one lands on the
 * climber (at cell `climber`, -1 for none). The goal block and floor 0 never fall. */
static int tc_settle(const TowerClimb *env, TCState *s, int climber) {
    const int gy = env->goal / TC_CELLS;
    const uint64_t gbit = 1ULL << (env->goal % TC_CELLS);
    for (int moved = 1; moved;) {
        moved = 0;
        for (int y = 1; y < env->floors; y++) {
            uint64_t loose = s->floors[y] & ~tc_held(s->floors[y - 1]);
            if (y == gy) loose &= ~gbit;
            if (!loose) continue;
            s->floors[y] &= ~loose;
            s->floors[y - 1] |= loose;
            moved = 1;
        }
        if (climber >= 0 && (s->floors[climber / TC_CELLS] >> (climber % TC_CELLS) & 1)) return 1;
    }
    return 0;
}

static int tc_at_goal(const TowerClimb *env, const TCState *s) { return !s->hanging && s->pos - TC_CELLS == env->goal; }

/* One action by the rules (the header comment); the env and the solver both play through it. */
static int tc_apply(const TowerClimb *env, TCState *s, int a) {
    const int y = s->pos / TC_CELLS, z = s->pos / TC_SIDE % TC_SIDE, x = s->pos % TC_SIDE, f = s->facing;
    const int ax = x + TC_DX[f], az = z + TC_DZ[f], top = env->floors - 1;
    if (s->hanging) { /* holding the top edge of the block ahead, (y, az, ax) */
        if (a == TC_GRAB) return TC_ILLEGAL;
        if (a == TC_DROP) {
            for (int yy = y - 1; yy >= 0; yy--) {
                if (!tc_block(env, s, yy, z, x)) continue;
                s->pos = (int16_t)tc_cell(yy + 1, z, x);
                s->hanging = 0;
                return TC_MOVED;
            }
            return TC_DEATH;
        }
        if (a == f) { /* pull up onto the block */
            if (y >= top || tc_block(env, s, y + 1, z, x) || tc_block(env, s, y + 1, az, ax)) return TC_ILLEGAL;
            s->pos = (int16_t)tc_cell(y + 1, az, ax);
            s->hanging = 0;
            return TC_MOVED;
        }
        if (a == (f + 2) % 4) return TC_ILLEGAL;
        const int sx = x + TC_DX[a], sz = z + TC_DZ[a];
        if (!tc_inside(sx, sz)) return TC_ILLEGAL;
        if (tc_block(env, s, y, sz, sx)) { /* an inside corner: turn to hang on that block's face */
            if (tc_block(env, s, y + 1, sz, sx)) return TC_ILLEGAL;
            s->facing = (uint8_t)a;
            return TC_MOVED;
        }
        const int wx = sx + TC_DX[f], wz = sz + TC_DZ[f];
        if (tc_block(env, s, y, wz, wx)) { /* the face goes on: shimmy along it */
            if (tc_block(env, s, y + 1, wz, wx)) return TC_ILLEGAL;
            s->pos = (int16_t)tc_cell(y, sz, sx);
            return TC_MOVED;
        }
        if (!tc_inside(wx, wz)) return TC_ILLEGAL;
        s->pos = (int16_t)tc_cell(y, wz, wx); /* an outside corner: round it onto the held block's side */
        s->facing = (uint8_t)((a + 2) % 4);
        return TC_MOVED;
    }
    if (a == TC_DROP) return TC_ILLEGAL;
    const int ahead_block = tc_inside(ax, az) && tc_block(env, s, y, az, ax);
    if (a == TC_GRAB) {
        if (s->holding) {
            s->holding = 0;
            return TC_MOVED;
        }
        if (!ahead_block || tc_cell(y, az, ax) == env->goal) return TC_ILLEGAL;
        s->holding = 1;
        return TC_MOVED;
    }
    if (s->holding) {
        if (a == f) { /* push the row of blocks ahead one cell on */
            int cx = ax, cz = az;
            while (tc_inside(cx, cz) && tc_block(env, s, y, cz, cx)) {
                if (tc_cell(y, cz, cx) == env->goal) return TC_ILLEGAL;
                cx += TC_DX[f];
                cz += TC_DZ[f];
            }
            if (!tc_inside(cx, cz)) return TC_ILLEGAL;
            tc_set(s, y, az, ax, 0); /* a row moved one cell on: its first cell empties, the next fills */
            tc_set(s, y, cz, cx, 1);
            s->holding = 0;
            return tc_settle(env, s, s->pos) ? TC_DEATH : TC_PUSHED;
        }
        if (a == (f + 2) % 4) { /* pull the gripped block, stepping back onto the floor behind */
            const int bx = x - TC_DX[f], bz = z - TC_DZ[f];
            if (!tc_inside(bx, bz) || tc_block(env, s, y, bz, bx) || !tc_block(env, s, y - 1, bz, bx))
                return TC_ILLEGAL;
            tc_set(s, y, az, ax, 0);
            tc_set(s, y, z, x, 1);
            s->pos = (int16_t)tc_cell(y, bz, bx);
            return tc_settle(env, s, s->pos) ? TC_DEATH : TC_PUSHED;
        }
        s->facing = (uint8_t)a; /* a turn lets go */
        s->holding = 0;
        return TC_MOVED;
    }
    if (a != f) {
        s->facing = (uint8_t)a;
        return TC_MOVED;
    }
    if (!tc_inside(ax, az)) return TC_ILLEGAL;
    if (ahead_block) { /* climb one block up */
        if (y >= top || tc_block(env, s, y + 1, z, x) || tc_block(env, s, y + 1, az, ax)) return TC_ILLEGAL;
        s->pos = (int16_t)tc_cell(y + 1, az, ax);
    } else if (tc_block(env, s, y - 1, az, ax)) { /* walk */
        s->pos = (int16_t)tc_cell(y, az, ax);
    } else if (tc_block(env, s, y - 2, az, ax)) { /* step down one */
        s->pos = (int16_t)tc_cell(y - 1, az, ax);
    } else { /* step off and hang from the edge of the block stood on, facing it */
        s->pos = (int16_t)tc_cell(y - 1, az, ax);
        s->facing = (uint8_t)((f + 2) % 4);
        s->hanging = 1;
    }
    return TC_MOVED;
}

static inline uint64_t tc_hash(const TCState *s, int floors) {
    uint64_t h = (uint64_t)s->pos * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)s->facing << 2 | s->hanging << 1 | s->holding);
    for (int y = 0; y < floors; y++) {
        h = (h ^ s->floors[y]) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    return h;
}

static inline int tc_same(const TCState *a, const TCState *b, int floors) {
    return a->pos == b->pos && a->facing == b->facing && a->hanging == b->hanging && a->holding == b->holding &&
           memcmp(a->floors, b->floors, sizeof(uint64_t) * (size_t)floors) == 0;
}

/* Breadth-first search from env->start for the fewest actions to the goal, deaths excluded: writes the
 * plan and returns its length; -1 when no plan fits in max_steps, -2 when the node budget ran out. */
static int tc_solve(TowerClimb *env) {
    TCSearch *S = env->search;
    memset(S->table, 0, sizeof(S->table));
    int head = 0, tail = 1;
    S->nodes[0] = (TCNode){env->start, -1, 0, 0};
    S->table[tc_hash(&env->start, env->floors) & (TC_TABLE - 1)] = 1;
    if (tc_at_goal(env, &env->start)) return 0;
    while (head < tail) {
        const int from = head++;
        if (S->nodes[from].depth >= env->cfg.max_steps) continue;
        for (int a = 0; a < TC_ACTIONS; a++) {
            TCState t = S->nodes[from].s;
            int r = tc_apply(env, &t, a);
            if (r == TC_ILLEGAL || r == TC_DEATH) continue;
            if (tc_at_goal(env, &t)) {
                int len = S->nodes[from].depth + 1;
                env->plan[len - 1] = (unsigned char)a;
                for (int n = from, i = len - 2; n > 0; n = S->nodes[n].parent, i--) env->plan[i] = S->nodes[n].action;
                return len;
            }
            uint32_t slot = (uint32_t)tc_hash(&t, env->floors) & (TC_TABLE - 1);
            int seen = 0;
            for (; S->table[slot]; slot = (slot + 1) & (TC_TABLE - 1)) {
                if (tc_same(&S->nodes[S->table[slot] - 1].s, &t, env->floors)) {
                    seen = 1;
                    break;
                }
            }
            if (seen) continue;
            if (tail == TC_NODES) return -2;
            S->nodes[tail] = (TCNode){t, from, (uint8_t)a, (uint8_t)(S->nodes[from].depth + 1)};
            S->table[slot] = (uint32_t)++tail;
        }
    }
    return -1;
}

/* A random hill: the ground layer under the middle 6x6 cells, then on each floor up to height - 1 a
 * block with probability 0.55 on the cells near a random peak (nearer on higher floors), settled. The
 * goal goes on a block of the top floor, the climber on the ground layer. Returns 0 when the draw has
 * no place for the goal. */
static int tc_draw_level(TowerClimb *env) {
    TCState *s = &env->start;
    const int h = env->cfg.height;
    memset(s, 0, sizeof(*s));
    env->goal = -1;
    for (int z = 1; z < TC_SIDE - 1; z++)
        for (int x = 1; x < TC_SIDE - 1; x++) tc_set(s, 0, z, x, 1);
    const int px = 2 + ocean_randint(&env->rng, 4), pz = 2 + ocean_randint(&env->rng, 4);
    for (int y = 1; y < h; y++) {
        const int reach = 1 + (h - y) * 3 / h;
        for (int z = 1; z < TC_SIDE - 1; z++)
            for (int x = 1; x < TC_SIDE - 1; x++) {
                int far = abs(x - px) > abs(z - pz) ? abs(x - px) : abs(z - pz);
                if (far <= reach && ocean_randf(&env->rng) < 0.55f) tc_set(s, y, z, x, 1);
            }
    }
    env->goal = tc_cell(TC_MAX_FLOORS - 1, 0, 0); /* out of the way while the pile settles */
    tc_settle(env, s, -1);
    int count = 0, goal = -1;
    for (int c = 0; c < TC_CELLS; c++)
        if ((s->floors[h - 1] >> c & 1) && ocean_randint(&env->rng, ++count) == 0)
            goal = tc_cell(h, c / TC_SIDE, c % TC_SIDE);
    if (goal < 0) return 0;
    env->goal = goal;
    tc_set(s, h, goal / TC_SIDE % TC_SIDE, goal % TC_SIDE, 1);
    count = 0;
    int spawn = -1;
    for (int c = 0; c < TC_CELLS; c++)
        if ((s->floors[0] >> c & 1) && !(s->floors[1] >> c & 1) && ocean_randint(&env->rng, ++count) == 0)
            spawn = tc_cell(1, c / TC_SIDE, c % TC_SIDE);
    if (spawn < 0) return 0;
    s->pos = (int16_t)spawn;
    s->facing = (uint8_t)ocean_randint(&env->rng, 4);
    return 1;
}

/* A staircase up to the goal along x (the fallback when no drawn hill is solvable within max_steps). */
static void tc_staircase(TowerClimb *env) {
    TCState *s = &env->start;
    memset(s, 0, sizeof(*s));
    for (int z = 1; z < TC_SIDE - 1; z++)
        for (int x = 1; x < TC_SIDE - 1; x++) tc_set(s, 0, z, x, 1);
    for (int y = 1; y < env->cfg.height; y++)
        for (int x = y; x < TC_SIDE - 1; x++) tc_set(s, y, 3, x, 1);
    env->goal = tc_cell(env->cfg.height, 3, env->cfg.height); /* height <= TC_SIDE - 2: on the last step */
    tc_set(s, env->cfg.height, 3, env->cfg.height, 1);
    s->pos = (int16_t)tc_cell(1, 4, 1);
    s->facing = TC_NZ;
}

static void tc_new_level(TowerClimb *env) {
    int len = -1;
    for (int attempt = 0; attempt < TC_ATTEMPTS && len < 0; attempt++) {
        if (!tc_draw_level(env)) continue;
        len = tc_solve(env);
        if (len >= 0 && len < env->cfg.min_moves && attempt < TC_ATTEMPTS - 1) len = -1;
    }
    if (len < 0) {
        tc_staircase(env);
        len = tc_solve(env);
    }
    env->plan_len = len < 0 ? 0 : len;
    env->episodes_on_level = 0;
}

#define TC_PLANE (TC_WINDOW * TC_WINDOW * TC_WINDOW_FLOORS)

/* The climber's facing, grip and the goal's offset: the observation's tail, all a turn or a grip changes. */
static void tc_write_tail(TowerClimb *env) {
    const TCState *s = &env->s;
    signed char *o = env->observations + 2 * TC_PLANE;
    for (int d = 0; d < 4; d++) o[d] = (signed char)(s->facing == d);
    o[4] = (signed char)s->hanging;
    o[5] = (signed char)s->holding;
    o[6] = (signed char)(env->goal % TC_SIDE - s->pos % TC_SIDE);
    o[7] = (signed char)(env->goal / TC_SIDE % TC_SIDE - s->pos / TC_SIDE % TC_SIDE);
    o[8] = (signed char)(env->goal / TC_CELLS - s->pos / TC_CELLS);
}

/* Two planes over the window: what the climber cannot walk into (blocks, the goal, the grid's sides) and
 * the goal. Row by row: a floor row's 8 cells go into a row padded with TC_WINDOW / 2 side cells each
 * way, and the window's 7 cells are one copy from it. Floors past the grid's are empty (the void). */
static void tc_write_obs(TowerClimb *env) {
    const TCState *s = &env->s;
    const int y = s->pos / TC_CELLS, z = s->pos / TC_SIDE % TC_SIDE, x = s->pos % TC_SIDE, r = TC_WINDOW / 2;
    unsigned char *o = (unsigned char *)env->observations, row[TC_SIDE + 2 * (TC_WINDOW / 2)];
    memset(row, 1, sizeof(row));
    for (int yy = y - 2; yy <= y + 2; yy++)
        for (int zz = z - r; zz <= z + r; zz++, o += TC_WINDOW) {
            if (yy < 0 || yy >= env->floors || zz < 0 || zz >= TC_SIDE) {
                memset(o, yy < 0 || yy >= env->floors ? 0 : 1, TC_WINDOW);
                continue;
            }
            const unsigned bits = (unsigned)(s->floors[yy] >> (zz * TC_SIDE)) & 0xFF;
            for (int i = 0; i < TC_SIDE; i++) row[r + i] = (unsigned char)(bits >> i & 1);
            memcpy(o, row + x, TC_WINDOW);
        }
    memset(o, 0, TC_PLANE);
    const int gy = env->goal / TC_CELLS - y, gz = env->goal / TC_SIDE % TC_SIDE - z, gx = env->goal % TC_SIDE - x;
    if (gy >= -2 && gy <= 2 && gz >= -r && gz <= r && gx >= -r && gx <= r)
        o[((gy + 2) * TC_WINDOW + gz + r) * TC_WINDOW + gx + r] = 1;
    tc_write_tail(env);
}

static void tc_new_episode(TowerClimb *env) {
    if (env->episodes_on_level >= env->cfg.replays) tc_new_level(env);
    env->episodes_on_level++;
    env->s = env->start;
    env->tick = 0;
    env->start_floor = env->best_floor = env->s.pos / TC_CELLS;
    env->episode_return = 0.0f;
    tc_write_obs(env);
}

static int c_init(TowerClimb *env) {
    env->floors = env->cfg.height + 2;
    env->search = (TCSearch *)malloc(sizeof(TCSearch));
    if (env->search == NULL) return ocean_fail(env, "out of memory for the level solver");
    return 0;
}

static void c_reset(TowerClimb *env) {
    env->episodes_on_level = env->cfg.replays; /* a reset draws a new level from the new seed */
    tc_new_episode(env);
}

static void c_step(TowerClimb *env) {
    const int a = env->cfg.autopilot ? (env->tick < env->plan_len ? env->plan[env->tick] : TC_GRAB)
                                     : ocean_clamp(env->actions[0], TC_ACTIONS);
    const int from = env->s.pos, result = tc_apply(env, &env->s, a);
    float reward = result == TC_ILLEGAL  ? env->cfg.reward_illegal
                   : result == TC_PUSHED ? env->cfg.reward_block
                   : result == TC_DEATH  ? env->cfg.reward_death
                                         : 0.0f;
    const int floor = env->s.pos / TC_CELLS;
    if (result != TC_DEATH && !env->s.hanging && floor > env->best_floor) {
        reward += env->cfg.reward_climb * (float)(floor - env->best_floor);
        env->best_floor = floor;
    }
    const int won = result != TC_DEATH && tc_at_goal(env, &env->s);
    if (won) reward += 1.0f;
    env->tick++;
    const int over = won || result == TC_DEATH, timeout = !over && env->tick >= env->cfg.max_steps;
    env->episode_return += reward;
    env->rewards[0] = reward;
    env->terminals[0] = (unsigned char)over;
    env->truncations[0] = (unsigned char)timeout;
    if (over || timeout) {
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)(env->best_floor - env->start_floor),
                          (float)won);
        tc_new_episode(env);
    } else if (env->s.pos != from || result == TC_PUSHED) {
        tc_write_obs(env);
    } else if (result != TC_ILLEGAL) {
        tc_write_tail(env); /* a turn or a grip: the window is as it was */
    }
}

#define TC_SCALE 16
static void c_frame_shape(TowerClimb *env, int *h, int *w) {
    *h = TC_SCALE * (env->floors > TC_SIDE ? env->floors : TC_SIDE);
    *w = TC_SCALE * (2 * TC_SIDE + 1);
}

/* Two panels: the pile from above (each column shaded by its top block's floor) and from the side
 * (looking along +z: each floor's blocks in x, shaded by the nearest z). The climber is blue (orange
 * while hanging), with a notch on the side it faces (red while gripping a block). */
static void c_render_rgb(TowerClimb *env, unsigned char *frame) {
    static const unsigned char bg[3] = {20, 24, 40}, goal_rgb[3] = {230, 60, 60}, me[3] = {60, 140, 255};
    static const unsigned char hang[3] = {250, 170, 40};
    const int fh = TC_SCALE * (env->floors > TC_SIDE ? env->floors : TC_SIDE), fw = TC_SCALE * (2 * TC_SIDE + 1);
    const TCState *s = &env->s;
    ocean_fill_rect(frame, fh, fw, 0, 0, fw, fh, bg);
    for (int z = 0; z < TC_SIDE; z++)
        for (int x = 0; x < TC_SIDE; x++) {
            for (int y = env->floors - 1; y >= 0; y--) {
                if (!tc_block(env, s, y, z, x)) continue;
                unsigned char shade = (unsigned char)(70 + 170 * (y + 1) / env->floors);
                const unsigned char rgb[3] = {shade, shade, (unsigned char)(shade * 3 / 4)};
                ocean_fill_rect(frame, fh, fw, x * TC_SCALE, z * TC_SCALE, TC_SCALE - 1, TC_SCALE - 1,
                                tc_cell(y, z, x) == env->goal ? goal_rgb : rgb);
                break;
            }
        }
    for (int y = 0; y < env->floors; y++)
        for (int x = 0; x < TC_SIDE; x++)
            for (int z = 0; z < TC_SIDE; z++) {
                if (!tc_block(env, s, y, z, x)) continue;
                unsigned char shade = (unsigned char)(230 - 18 * z);
                const unsigned char rgb[3] = {shade, shade, (unsigned char)(shade * 3 / 4)};
                ocean_fill_rect(frame, fh, fw, (TC_SIDE + 1 + x) * TC_SCALE, fh - (y + 1) * TC_SCALE, TC_SCALE - 1,
                                TC_SCALE - 1, tc_cell(y, z, x) == env->goal ? goal_rgb : rgb);
                break;
            }
    const int y = s->pos / TC_CELLS, z = s->pos / TC_SIDE % TC_SIDE, x = s->pos % TC_SIDE, q = TC_SCALE / 4;
    ocean_fill_rect(frame, fh, fw, x * TC_SCALE + q, z * TC_SCALE + q, 2 * q, 2 * q, s->hanging ? hang : me);
    /* a notch on the side the climber faces */
    ocean_fill_rect(frame, fh, fw, x * TC_SCALE + q + q * TC_DX[s->facing] + q / 2,
                    z * TC_SCALE + q + q * TC_DZ[s->facing] + q / 2, q, q, s->holding ? goal_rgb : me);
    ocean_fill_rect(frame, fh, fw, (TC_SIDE + 1 + x) * TC_SCALE + q, fh - (y + 1) * TC_SCALE + q, 2 * q, 2 * q,
                    s->hanging ? hang : me);
}

/* A status line, then each floor from the top down as TC_SIDE rows of TC_SIDE cells (x across, z down):
 * '#' a block, 'G' the goal, '@' the climber, '.' empty (pufferlib.ocean.tower_climb reads this). */
static int c_render_text(TowerClimb *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    const TCState *s = &env->s;
    ocean_puts(&t, "step ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, " facing ");
    ocean_puti(&t, s->facing);
    ocean_puts(&t, " hanging ");
    ocean_puti(&t, s->hanging);
    ocean_puts(&t, " holding ");
    ocean_puti(&t, s->holding);
    ocean_putc(&t, '\n');
    for (int y = env->floors - 1; y >= 0; y--) {
        ocean_puts(&t, "floor ");
        ocean_puti(&t, y);
        ocean_putc(&t, '\n');
        for (int z = 0; z < TC_SIDE; z++) {
            for (int x = 0; x < TC_SIDE; x++) {
                int c = tc_cell(y, z, x);
                ocean_putc(&t, c == s->pos ? '@' : c == env->goal ? 'G' : tc_block(env, s, y, z, x) ? '#' : '.');
            }
            ocean_putc(&t, '\n');
        }
    }
    return t.len;
}

static void c_close(TowerClimb *env) {
    free(env->search);
    env->search = NULL;
}
