/* RWARE: the multi-robot warehouse of Papoudakis et al. (2021), rewritten for speed. Robots (the
 * agents) drive a grid of shelf blocks separated by corridors ("highways"). At any time `requests`
 * shelves are requested; a robot drives under one, lifts it, carries it to a goal cell at the bottom
 * (a delivery: a new shelf is requested at random) and must then put it back on any empty shelf
 * cell off the highways. A robot carrying a shelf cannot pass under other shelves; robots never share
 * a cell, and two robots cannot swap cells.
 *
 * Layout (as the paper's): shelf_cols blocks of 2 columns, shelf_rows blocks of column_height rows,
 * one-cell highways between them and around, two goal cells in the middle of the bottom row.
 * shelf_cols=3, shelf_rows=1, column_height=8 is the paper's "tiny" 10x11 warehouse.
 *
 * Actions: 0 nothing, 1 forward, 2 turn left, 3 turn right, 4 lift / put down.
 * Rewards (to the robot that acts): +1 per delivery; +0.5 for lifting a requested shelf (once per
 * request) and +0.5 for putting a delivered shelf back, which credit the two halves of the cycle.
 * All robots of a warehouse share one episode of max_steps steps (then truncated).
 *
 * Observation (int8) per robot: the (2*sight+1)^2 cells around it, 8 flags per cell (wall, highway,
 * goal, shelf, requested shelf, robot, loaded robot, empty shelf cell); its heading (one-hot 4) and
 * load (one-hot: none, requested shelf, other shelf); and where its current job is, in its own frame
 * (cells forward and to the right, clipped to +-8): the nearest free requested shelf when empty, the
 * nearest goal with a requested shelf, the nearest empty shelf cell with any other shelf.
 *
 * Speed: every cell keeps its 8 observation flags in one byte, updated only when something on that
 * cell changes and written out as 8 bytes through a table; the grid has a wall border `sight` cells
 * wide, so a view needs no bounds checks. Moves are resolved in O(agents) with per-cell claim stamps.
 * A thousand warehouses share a core, so a step mostly waits on cache misses: the per-cell state is
 * small (7 bytes a cell) and coordinates and fixed flags are computed, not stored.
 */
#include <stdlib.h>
#include "ocean.h"
#include "spec.h"  /* generated from spec.toml: RwareConfig and the constants */

#define RW_ACTIONS 5
#define RW_SELF 9      /* heading 4 + load 3 + job offset 2 */
#define RW_BIT(flag) (1ULL << (8 * (flag)))

/* A cell's 8 flags are stored as one byte (bit k = flag k) and written to the observation as 8 bytes
 * (byte k = flag k) through this table: a byte per cell keeps a warehouse's grids a few hundred
 * bytes, so thousands of warehouses stay in cache. Built by the preprocessor: no mutable state. */
#define RW_X(b)                                                                                               \
    ((uint64_t)((b) & 1) | (uint64_t)(((b) >> 1) & 1) << 8 | (uint64_t)(((b) >> 2) & 1) << 16 |               \
     (uint64_t)(((b) >> 3) & 1) << 24 | (uint64_t)(((b) >> 4) & 1) << 32 | (uint64_t)(((b) >> 5) & 1) << 40 | \
     (uint64_t)(((b) >> 6) & 1) << 48 | (uint64_t)(((b) >> 7) & 1) << 56)
#define RW_X4(n) RW_X(n), RW_X(n + 1), RW_X(n + 2), RW_X(n + 3)
#define RW_X16(n) RW_X4(n), RW_X4(n + 4), RW_X4(n + 8), RW_X4(n + 12)
#define RW_X64(n) RW_X16(n), RW_X16(n + 16), RW_X16(n + 32), RW_X16(n + 48)
static const uint64_t RW_EXPAND[256] = {RW_X64(0), RW_X64(64), RW_X64(128), RW_X64(192)};

enum { RW_NOOP, RW_FORWARD, RW_LEFT, RW_RIGHT, RW_TOGGLE };
enum { RW_UP, RW_RIGHTWARD, RW_DOWN, RW_LEFTWARD };   /* headings, clockwise */
enum { RW_F_WALL, RW_F_HIGHWAY, RW_F_GOAL, RW_F_SHELF, RW_F_REQUESTED, RW_F_AGENT, RW_F_LOADED, RW_F_FREE_SLOT };
enum { RW_EMPTY_HANDED, RW_CARRY_REQUESTED, RW_CARRY_OTHER };

/* Cell kinds in the fixed layout. */
enum { RW_WALL = 0, RW_HIGHWAY = 1, RW_SLOT = 2, RW_GOAL = 3 };

typedef struct RwareAgent {
    int cell, dir;
    int shelf;          /* carried shelf, or -1 */
    int load;           /* RW_EMPTY_HANDED / RW_CARRY_REQUESTED / RW_CARRY_OTHER, kept with `shelf` */
    int stuck;          /* autopilot: steps without progress */
    int target, moving; /* per-step scratch: the cell a forward move wants, whether it goes ahead */
    float ret;          /* the episode's return so far */
} RwareAgent;  /* 32 bytes: what a step reads and writes per robot is together */

typedef struct RwareShelf {
    int cell;
    unsigned char requested, pickup_paid, delivered, carried;
} RwareShelf;

typedef struct Rware {
    OCEAN_SLOTS(signed char);
    RwareConfig cfg;          /* the options of spec.toml, validated */
    /* derived layout, built in c_init */
    int width, height, stride, cells;  /* the field, the padded row length, padded cell count */
    int num_shelves, num_goals;
    unsigned inv_stride;     /* ceil(2^20 / stride): cell / stride as a multiply (exact below 2^20 / stride) */
    /* One allocation holds every array below, the ones each step touches first: a step is mostly cache
     * misses (a thousand warehouses per core), so the per-cell state is kept to 7 bytes a cell and
     * nothing per cell is derivable (coordinates, the fixed flags) is stored. */
    void *block;
    size_t block_bytes;      /* its size */
    unsigned char *code;     /* [cells] all observation flags of each cell (bit k = flag k); the fixed
                              * ones (wall, highway, goal) tell the cell's kind: rw_kind */
    unsigned char *claim;    /* [cells] stamp of the step that last claimed the cell as a target */
    int goals[2];
    int delta[4];            /* cell offset of one step along each heading */
    /* state */
    unsigned short *agent_at;  /* [cells] agent index + 1, or 0 */
    unsigned short *shelf_at;  /* [cells] shelf index + 1, or 0 */
    RwareAgent *agents;      /* [num_agents] */
    RwareShelf *shelves;     /* [num_shelves] */
    int *requested;          /* [requests] shelf index of each open request */
    int *request_cell;       /* [requests] cell of each requested shelf, -1 while a robot carries it */
    int *empty_slots, n_empty;  /* slots without a shelf: at most one per carried shelf */
    int *free_requests, n_free_requests;  /* [requests] cells of requested shelves nobody carries */
    short *dist;             /* [cells] path lengths to a robot's job (allocated with autopilot only) */
    int *queue;              /* [cells] the breadth-first search's queue (allocated with autopilot only) */
    unsigned char stamp;
    int tick, deliveries;
} Rware;

/* Saved states (ocean.h): `block` is the one allocation; the other pointers point into it, so they are
 * kept (0 bytes) and the block is saved once. */
#define OCEAN_STATE_BLOCKS(X, env) \
    X(block, (env)->block_bytes)   \
    X(code, 0)                     \
    X(claim, 0)                    \
    X(agent_at, 0)                 \
    X(shelf_at, 0)                 \
    X(agents, 0)                   \
    X(shelves, 0)                  \
    X(requested, 0)                \
    X(request_cell, 0)             \
    X(empty_slots, 0)              \
    X(free_requests, 0)            \
    X(dist, 0)                     \
    X(queue, 0)

/* ---- layout ---- */

static inline int rw_cell(const Rware *env, int x, int y) {
    return (y + env->cfg.sight) * env->stride + x + env->cfg.sight;
}

/* The fixed observation flags of each cell kind (bit k = flag k). */
static const unsigned char RW_KIND_FLAGS[4] = {1u << RW_F_WALL, 1u << RW_F_HIGHWAY, 0, 1u << RW_F_GOAL};
#define RW_FIXED (1u << RW_F_WALL | 1u << RW_F_HIGHWAY | 1u << RW_F_GOAL)
/* A cell's kind from its fixed flags (other combinations do not occur). */
static const unsigned char RW_KIND_OF[8] = {RW_SLOT, RW_WALL, RW_HIGHWAY, RW_WALL, RW_GOAL, RW_WALL, RW_WALL, RW_WALL};

static inline int rw_kind(const Rware *env, int cell) { return RW_KIND_OF[env->code[cell] & RW_FIXED]; }

static int c_init(Rware *env) {
    int s = env->cfg.sight;
    env->width = 3 * env->cfg.shelf_cols + 1;
    env->height = (env->cfg.column_height + 1) * env->cfg.shelf_rows + 2;
    env->stride = env->width + 2 * s;
    env->cells = env->stride * (env->height + 2 * s);
    size_t cells = (size_t)env->cells, agents = (size_t)env->num_agents;
    size_t shelves = (size_t)(2 * env->cfg.shelf_cols * env->cfg.column_height * env->cfg.shelf_rows);
    /* sizes of the arrays in `block`, each rounded up to 8 bytes */
    size_t requests = (size_t)env->cfg.requests, autopilot = env->cfg.autopilot != 0;  /* path search arrays */
    size_t sizes[] = {cells,
                      cells,
                      2 * cells,
                      2 * cells,
                      agents * sizeof(RwareAgent),
                      requests * sizeof(int),
                      requests * sizeof(int),
                      requests * sizeof(int),
                      (agents + 1) * sizeof(int),
                      shelves * sizeof(RwareShelf),
                      autopilot * 2 * cells,
                      autopilot * cells * sizeof(int)};
    enum { N_ARRAYS = sizeof(sizes) / sizeof(sizes[0]) };
    size_t total = 0;
    for (int k = 0; k < N_ARRAYS; k++) total += (sizes[k] + 7) & ~(size_t)7;
    char *p = (char *)calloc(total, 1);
    if (p == NULL) return ocean_fail(env, "out of memory for the warehouse");
    env->block = p;
    env->block_bytes = total;
    void *arrays[N_ARRAYS];
    for (int k = 0; k < N_ARRAYS; k++) {
        arrays[k] = p;
        p += (sizes[k] + 7) & ~(size_t)7;
    }
    env->code = arrays[0];
    env->claim = arrays[1];
    env->agent_at = arrays[2];
    env->shelf_at = arrays[3];
    env->agents = arrays[4];
    env->requested = arrays[5];
    env->request_cell = arrays[6];
    env->free_requests = arrays[7];
    env->empty_slots = arrays[8];
    env->shelves = arrays[9];
    env->dist = arrays[10];
    env->queue = arrays[11];
    env->inv_stride = ((1u << 20) + (unsigned)env->stride - 1) / (unsigned)env->stride;
    int slots = 0;
    memset(env->code, RW_KIND_FLAGS[RW_WALL], cells);  /* the border; the field is written next */
    for (int y = 0; y < env->height; y++)
        for (int x = 0; x < env->width; x++) {
            int highway = x % 3 == 0 || y % (env->cfg.column_height + 1) == 0 || y >= env->height - 2;
            env->code[rw_cell(env, x, y)] = RW_KIND_FLAGS[highway ? RW_HIGHWAY : RW_SLOT];
            slots += !highway;
        }
    env->num_goals = 2;
    env->goals[0] = rw_cell(env, env->width / 2 - 1, env->height - 1);
    env->goals[1] = rw_cell(env, env->width / 2, env->height - 1);
    for (int g = 0; g < env->num_goals; g++) env->code[env->goals[g]] = RW_KIND_FLAGS[RW_GOAL];
    env->num_shelves = slots;
    env->delta[RW_UP] = -env->stride;
    env->delta[RW_RIGHTWARD] = 1;
    env->delta[RW_DOWN] = env->stride;
    env->delta[RW_LEFTWARD] = -1;
    return 0;
}


/* Column and row of a padded cell: cells < 2^20 / stride always (stride <= 55, cells < 8000). */
static inline void rw_xy(const Rware *env, int cell, int *x, int *y) {
    *y = (int)(((uint64_t)(unsigned)cell * env->inv_stride) >> 20);
    *x = cell - *y * env->stride;
}

/* Recompute the observation flags of one cell from the state. */
static inline void rw_update_code(Rware *env, int cell) {
    unsigned code = env->code[cell] & RW_FIXED;
    int shelf = env->shelf_at[cell] - 1, agent = env->agent_at[cell] - 1;
    if (shelf >= 0) code |= 1u << RW_F_SHELF | (unsigned)env->shelves[shelf].requested << RW_F_REQUESTED;
    else if (code == 0) code |= 1u << RW_F_FREE_SLOT;  /* a shelf cell (no fixed flag) */
    if (agent >= 0) code |= 1u << RW_F_AGENT | (unsigned)(env->agents[agent].shelf >= 0) << RW_F_LOADED;
    env->code[cell] = (unsigned char)code;
}

/* Only the robot on a cell changed (a move): the shelf flags stay as they are. */
static inline void rw_update_robot_code(Rware *env, int cell) {
    int agent = env->agent_at[cell] - 1;
    unsigned bits = agent >= 0 ? 1u << RW_F_AGENT | (unsigned)(env->agents[agent].shelf >= 0) << RW_F_LOADED : 0;
    env->code[cell] = (unsigned char)((env->code[cell] & ~(1u << RW_F_AGENT | 1u << RW_F_LOADED)) | bits);
}

/* ---- jobs: where each robot should head next ---- */


/* Cells a robot in each load state may head for: free requested shelves (not being carried), goals,
 * empty shelf cells. Gathered once per step, then every robot takes the nearest of its list. */
static void rw_gather_jobs(Rware *env) {
    int n = 0;
    for (int k = 0; k < env->cfg.requests; k++)
        if (env->request_cell[k] >= 0) env->free_requests[n++] = env->request_cell[k];
    env->n_free_requests = n;
}

/* The cell of the robot's current job, or -1 when there is none (every request is being carried). */
static inline int rw_job(const Rware *env, const RwareAgent *ag) {
    const int *lists[3] = {env->free_requests, env->goals, env->empty_slots};
    const int counts[3] = {env->n_free_requests, env->num_goals, env->n_empty};
    const int *cells = lists[ag->load];
    int count = counts[ag->load];
    int best = -1, best_d = 1 << 30, x, y;
    rw_xy(env, ag->cell, &x, &y);
    for (int k = 0; k < count; k++) {
        int cx, cy;
        rw_xy(env, cells[k], &cx, &cy);
        int dx = cx - x, dy = cy - y;
        int d = (dx < 0 ? -dx : dx) + (dy < 0 ? -dy : dy);
        if (d < best_d) {
            best_d = d;
            best = cells[k];
        }
    }
    return best;
}

static inline int rw_clip(int v) { return v < -RW_JOB_CLIP ? -RW_JOB_CLIP : (v > RW_JOB_CLIP ? RW_JOB_CLIP : v); }

static void rw_write_obs(Rware *env) {
    int s = env->cfg.sight, side = 2 * s + 1;
    static const int fx[4] = {0, 1, 0, -1}, fy[4] = {-1, 0, 1, 0};  /* heading vectors, y down */
    rw_gather_jobs(env);
    for (int i = 0; i < env->num_agents; i++) {
        const RwareAgent *ag = &env->agents[i];
        signed char *o = env->observations + (size_t)i * env->obs_size;
        const unsigned char *src = env->code + ag->cell - s * env->stride - s;
        for (int r = 0; r < side; r++, src += env->stride)  /* memcpy of RW_EXPAND's words: little-endian */
            for (int c = 0; c < side; c++, o += RW_FLAGS) memcpy(o, &RW_EXPAND[src[c]], RW_FLAGS);
        /* heading one-hot in bytes 0-3, load one-hot in 4-6, then the job offset */
        uint64_t self = RW_BIT(ag->dir) | RW_BIT(4 + ag->load);
        memcpy(o, &self, 8);
        o[8] = 0;
        int job = rw_job(env, ag);
        if (job >= 0) {
            int jx, jy, x, y;
            rw_xy(env, job, &jx, &jy);
            rw_xy(env, ag->cell, &x, &y);
            int dx = jx - x, dy = jy - y;
            int d = ag->dir, r = (d + 1) & 3;
            o[7] = (signed char)rw_clip(dx * fx[d] + dy * fy[d]);
            o[8] = (signed char)rw_clip(dx * fx[r] + dy * fy[r]);
        }
    }
}

/* ---- requests ---- */

/* Request a random shelf that is neither requested nor being carried; `slot` is the request index. */
static void rw_request(Rware *env, int slot) {
    int n = env->num_shelves, pick = -1;
    for (int tries = 0; tries < 16 && pick < 0; tries++) {
        int k = ocean_randint(&env->rng, n);
        if (!env->shelves[k].requested && !env->shelves[k].carried) pick = k;
    }
    if (pick < 0) {  /* crowded: scan from a random start (requests + agents < shelves is checked at config) */
        int start = ocean_randint(&env->rng, n);
        for (int k = 0; k < n && pick < 0; k++) {
            int j = (start + k) % n;
            if (!env->shelves[j].requested && !env->shelves[j].carried) pick = j;
        }
    }
    env->requested[slot] = pick;
    env->request_cell[slot] = env->shelves[pick].cell;
    env->shelves[pick].requested = 1;
    env->shelves[pick].pickup_paid = 0;
    rw_update_code(env, env->shelves[pick].cell);
}

/* ---- episode ---- */

static void rw_new_episode(Rware *env) {
    memset(env->agent_at, 0, sizeof(unsigned short) * (size_t)env->cells);
    memset(env->shelf_at, 0, sizeof(unsigned short) * (size_t)env->cells);
    int k = 0;
    for (int cell = 0; cell < env->cells; cell++) {
        if (rw_kind(env, cell) != RW_SLOT) continue;
        env->shelves[k] = (RwareShelf){cell, 0, 0, 0, 0};
        env->shelf_at[cell] = (unsigned short)(k + 1);
        k++;
    }
    env->n_empty = 0;
    /* robots start on random free highway cells (never on goals), facing anywhere */
    for (int i = 0; i < env->num_agents; i++) {
        int cell;
        do {
            /* one draw per statement: C leaves the order of a call's arguments to the compiler (row first,
             * as gcc, which builds the training envs, always evaluated them) */
            int y = ocean_randint(&env->rng, env->height);
            int x = ocean_randint(&env->rng, env->width);
            cell = rw_cell(env, x, y);
        } while (rw_kind(env, cell) != RW_HIGHWAY || env->agent_at[cell]);
        env->agents[i] = (RwareAgent){cell, ocean_randint(&env->rng, 4), -1, RW_EMPTY_HANDED, 0};
        env->agent_at[cell] = (unsigned short)(i + 1);
    }
    for (int cell = 0; cell < env->cells; cell++) rw_update_code(env, cell);
    for (int r = 0; r < env->cfg.requests; r++) rw_request(env, r);
    env->tick = env->deliveries = 0;
    rw_write_obs(env);
}

static void c_reset(Rware *env) { rw_new_episode(env); }

/* ---- the scripted warehouse policy (autopilot) ----
 * Each robot works its own job (the same job the observation points to): lift when on a free
 * requested shelf, put down on an empty shelf cell when carrying anything else, and otherwise follow
 * a shortest path to the job (breadth-first over the cells it may enter: a loaded robot avoids
 * shelves, and every robot avoids the cells other robots stand on now), turning to face the next
 * cell and driving into it. With no path it waits; after 4 blocked steps it gives way, turning at
 * random until it faces a free cell and stepping into it, then plans again. Nobody coordinates:
 * robots meeting head-on in a corridor wait for each other until one of them gives way. */
static void rw_distances(Rware *env, int job, int loaded, int self) {
    short *dist = env->dist;
    int *queue = env->queue;
    for (int c = 0; c < env->cells; c++) dist[c] = -1;
    int head = 0, tail = 0;
    dist[job] = 0;
    queue[tail++] = job;
    while (head < tail) {
        int c = queue[head++];
        for (int d = 0; d < 4; d++) {
            int n = c + env->delta[d];
            if (dist[n] >= 0 || rw_kind(env, n) == RW_WALL || (loaded && env->shelf_at[n])) continue;
            if (env->agent_at[n] && n != self) continue;
            dist[n] = (short)(dist[c] + 1);
            queue[tail++] = n;
        }
    }
}

static int rw_scripted_action(Rware *env, int i) {
    RwareAgent *ag = &env->agents[i];
    int load = ag->load, here = ag->cell;
    int shelf = env->shelf_at[here] - 1;
    if (load == RW_EMPTY_HANDED && shelf >= 0 && env->shelves[shelf].requested) return RW_TOGGLE;
    if (load == RW_CARRY_OTHER && rw_kind(env, here) == RW_SLOT && shelf < 0) return RW_TOGGLE;
    rw_gather_jobs(env);  /* robots earlier in this step may have lifted a request */
    int job = rw_job(env, ag);
    if (job < 0) return RW_NOOP;
    if (ag->stuck >= 4) {  /* give way: turn at random until a free cell is ahead, then step into it */
        int ahead = here + env->delta[ag->dir];
        if (rw_kind(env, ahead) != RW_WALL && !env->agent_at[ahead] && !(ag->shelf >= 0 && env->shelf_at[ahead]))
            return RW_FORWARD;
        return ocean_randint(&env->rng, 2) ? RW_LEFT : RW_RIGHT;
    }
    rw_distances(env, job, ag->shelf >= 0, here);
    int best = -1;  /* the heading toward the neighbour nearest the job; ahead wins ties */
    for (int k = 0; k < 4; k++) {
        int d = (ag->dir + k) & 3, n = here + env->delta[d];
        if (env->dist[n] >= 0 && env->dist[n] < env->dist[here] && best < 0) best = d;
    }
    if (best < 0) {
        ag->stuck++;
        return RW_NOOP;
    }
    if (best != ag->dir) return best == ((ag->dir + 3) & 3) ? RW_LEFT : RW_RIGHT;
    if (env->agent_at[here + env->delta[best]]) {
        ag->stuck++;
        return RW_NOOP;
    }
    return RW_FORWARD;
}

/* ---- step ---- */

static void rw_empty_slots_remove(Rware *env, int cell) {
    for (int k = 0; k < env->n_empty; k++)
        if (env->empty_slots[k] == cell) {
            env->empty_slots[k] = env->empty_slots[--env->n_empty];
            return;
        }
}

/* A requested shelf was lifted (cell -1) or put down again before its delivery (its cell). */
static void rw_request_moved(Rware *env, int shelf, int cell) {
    for (int k = 0; k < env->cfg.requests; k++)
        if (env->requested[k] == shelf) {
            env->request_cell[k] = cell;
            return;
        }
}

static float rw_toggle(Rware *env, int i) {
    RwareAgent *ag = &env->agents[i];
    int cell = ag->cell;
    if (ag->shelf < 0) {
        int shelf = env->shelf_at[cell] - 1;
        if (shelf < 0) return 0;
        RwareShelf *s = &env->shelves[shelf];
        ag->shelf = shelf;
        ag->load = s->requested ? RW_CARRY_REQUESTED : RW_CARRY_OTHER;
        s->carried = 1;
        if (s->requested) rw_request_moved(env, shelf, -1);
        env->shelf_at[cell] = 0;  /* the shelf now rides on the robot: the cell is an empty slot */
        env->empty_slots[env->n_empty++] = cell;
        rw_update_code(env, cell);
        if (s->requested && !s->pickup_paid) {
            s->pickup_paid = 1;
            return 0.5f;
        }
        return 0;
    }
    if (rw_kind(env, cell) != RW_SLOT || env->shelf_at[cell]) return 0;
    RwareShelf *s = &env->shelves[ag->shelf];
    float reward = s->delivered ? 0.5f : 0.0f;
    s->delivered = 0;
    s->carried = 0;
    s->cell = cell;
    if (s->requested) rw_request_moved(env, ag->shelf, cell);
    env->shelf_at[cell] = (unsigned short)(ag->shelf + 1);
    ag->shelf = -1;
    ag->load = RW_EMPTY_HANDED;
    rw_empty_slots_remove(env, cell);
    rw_update_code(env, cell);
    return reward;
}

static void c_step(Rware *env) {
    int n = env->num_agents;
    float *rewards = env->rewards;
    unsigned char stamp = ++env->stamp;
    if (stamp == 0) {  /* wrapped: clear old stamps so none collides with a new one */
        memset(env->claim, 0, (size_t)env->cells);
        stamp = env->stamp = 1;
    }
    /* turns, lifts, and the cell each forward-moving robot wants */
    int first = env->tick % n;  /* claim priority rotates so no robot always wins a contested cell */
    for (int k = 0; k < n; k++) {
        int i = first + k < n ? first + k : first + k - n;
        RwareAgent *ag = &env->agents[i];
        int a = env->cfg.autopilot ? rw_scripted_action(env, i) : ocean_clamp(env->actions[i], RW_ACTIONS);
        rewards[i] = 0;
        ag->moving = 0;
        static const int turn[RW_ACTIONS] = {0, 0, 3, 1, 0};
        ag->dir = (ag->dir + turn[a]) & 3;
        if (a == RW_TOGGLE) rewards[i] = rw_toggle(env, i);
        else if (a == RW_FORWARD) {
            int t = ag->cell + env->delta[ag->dir];
            int blocked = rw_kind(env, t) == RW_WALL || (ag->shelf >= 0 && env->shelf_at[t]);
            if (!blocked && env->claim[t] != stamp) {
                env->claim[t] = stamp;
                ag->target = t;
                ag->moving = 1;
            }
        }
    }
    /* a robot moves only into a cell that is empty or being vacated; swaps are blocked. Repeat until
     * no robot changes its mind (each pass can only stop robots, so at most n passes). */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < n; i++) {
            if (!env->agents[i].moving) continue;
            int j = env->agent_at[env->agents[i].target] - 1;
            if (j < 0) continue;
            if (!env->agents[j].moving || env->agents[j].target == env->agents[i].cell) {
                env->agents[i].moving = 0;
                changed = 1;
            }
        }
    }
    for (int i = 0; i < n; i++)
        if (env->agents[i].moving) {
            int from = env->agents[i].cell;
            if (env->agent_at[from] == i + 1) env->agent_at[from] = 0;
            rw_update_robot_code(env, from);
        }
    for (int i = 0; i < n; i++) {
        RwareAgent *ag = &env->agents[i];
        if (ag->moving) {
            ag->cell = ag->target;
            env->agent_at[ag->cell] = (unsigned short)(i + 1);
            rw_update_robot_code(env, ag->cell);
            ag->stuck = 0;
        }
        /* delivery: a requested shelf on a goal */
        if (ag->shelf >= 0 && rw_kind(env, ag->cell) == RW_GOAL && env->shelves[ag->shelf].requested) {
            RwareShelf *s = &env->shelves[ag->shelf];
            s->requested = 0;
            s->delivered = 1;
            ag->load = RW_CARRY_OTHER;
            rewards[i] += 1.0f;
            env->deliveries++;
            for (int r = 0; r < env->cfg.requests; r++)
                if (env->requested[r] == ag->shelf) {
                    rw_request(env, r);
                    break;
                }
        }
        ag->ret += rewards[i];
    }
    env->tick++;
    int timeout = env->tick >= env->cfg.max_steps;
    for (int i = 0; i < n; i++) {
        env->terminals[i] = 0;
        env->truncations[i] = (unsigned char)timeout;
    }
    if (timeout) {
        float total = 0;
        for (int i = 0; i < n; i++) total += env->agents[i].ret;
        float per_agent = (float)env->deliveries / (float)n;
        float perf = per_agent * 25.0f / (float)env->cfg.max_steps;  /* one delivery per 25 robot-steps = 1 */
        ocean_log_episode(&env->log, total / (float)n, (float)env->tick, per_agent, perf > 1 ? 1 : perf);
        rw_new_episode(env);
        return;
    }
    rw_write_obs(env);
}

/* ---- rendering ---- */

#define RW_SCALE 16

static void c_frame_shape(Rware *env, int *h, int *w) {
    *h = env->height * RW_SCALE;
    *w = env->width * RW_SCALE;
}

static void c_render_rgb(Rware *env, unsigned char *frame) {
    static const unsigned char floor_rgb[3] = {30, 34, 40}, highway_rgb[3] = {52, 58, 66}, goal_rgb[3] = {60, 170, 90},
                               shelf_rgb[3] = {0, 150, 170}, requested_rgb[3] = {220, 50, 50},
                               agent_rgb[3] = {240, 200, 60}, nose_rgb[3] = {20, 20, 20};
    int h = env->height * RW_SCALE, w = env->width * RW_SCALE;
    for (int y = 0; y < env->height; y++)
        for (int x = 0; x < env->width; x++) {
            int cell = rw_cell(env, x, y), kind = rw_kind(env, cell);
            const unsigned char *rgb = kind == RW_GOAL ? goal_rgb : (kind == RW_HIGHWAY ? highway_rgb : floor_rgb);
            ocean_fill_rect(frame, h, w, x * RW_SCALE, y * RW_SCALE, RW_SCALE - 1, RW_SCALE - 1, rgb);
            int shelf = env->shelf_at[cell] - 1;
            if (shelf >= 0)
                ocean_fill_rect(frame, h, w, x * RW_SCALE + 2, y * RW_SCALE + 2, RW_SCALE - 5, RW_SCALE - 5,
                                env->shelves[shelf].requested ? requested_rgb : shelf_rgb);
        }
    for (int i = 0; i < env->num_agents; i++) {
        const RwareAgent *ag = &env->agents[i];
        int x = ag->cell % env->stride - env->cfg.sight, y = ag->cell / env->stride - env->cfg.sight;
        int px = x * RW_SCALE, py = y * RW_SCALE;
        ocean_fill_rect(frame, h, w, px + 4, py + 4, RW_SCALE - 9, RW_SCALE - 9, agent_rgb);
        if (ag->shelf >= 0)  /* a carried shelf shows as a frame around the robot */
            for (int e = 0; e < 4; e++) {
                const unsigned char *rgb = env->shelves[ag->shelf].requested ? requested_rgb : shelf_rgb;
                static const int ex[4] = {1, 1, 1, 13}, ey[4] = {1, 13, 1, 1}, ew[4] = {13, 13, 2, 2},
                                 eh[4] = {2, 2, 13, 13};
                ocean_fill_rect(frame, h, w, px + ex[e], py + ey[e], ew[e], eh[e], rgb);
            }
        static const int nx[4] = {6, 10, 6, 4}, ny[4] = {4, 6, 10, 6};  /* a dark nose shows the heading */
        ocean_fill_rect(frame, h, w, px + nx[ag->dir], py + ny[ag->dir], 2, 2, nose_rgb);
    }
}

/* Text: '#' shelf, 'R' requested shelf, ':' highway, '.' empty shelf cell, 'G' goal; robots are
 * their heading ^ > v < (a, b, c, d when carrying a shelf). */
static int c_render_text(Rware *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "step ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, "  deliveries ");
    ocean_puti(&t, env->deliveries);
    ocean_putc(&t, '\n');
    for (int y = 0; y < env->height; y++) {
        for (int x = 0; x < env->width; x++) {
            int cell = rw_cell(env, x, y), kind = rw_kind(env, cell);
            char ch = kind == RW_GOAL ? 'G' : (kind == RW_HIGHWAY ? ':' : '.');
            int shelf = env->shelf_at[cell] - 1;
            if (shelf >= 0) ch = env->shelves[shelf].requested ? 'R' : '#';
            int agent = env->agent_at[cell] - 1;
            if (agent >= 0) ch = (env->agents[agent].shelf >= 0 ? "abcd" : "^>v<")[env->agents[agent].dir];
            ocean_putc(&t, ch);
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Rware *env) {
    free(env->block);
    env->block = NULL;
}
