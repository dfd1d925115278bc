/* Keyrooms: a grid of rooms joined by doorways along a random spanning tree, one fixed layout per
 * layout_seed (every env and episode of a run shares it, so a policy can learn it and a search over
 * the known layout bounds the optimum). The goal sits in the room farthest from the start; the way
 * there crosses num_keys locked doors, and each door's key lies in the room deepest in a dead end on
 * the near side of that door. Entering a room for the first time in an episode pays room_reward, the
 * goal pays 1: a policy that follows the room rewards walks past the branches that hold the keys, so
 * the frontier (rooms reached) is what exploration buys. The layout is built once in c_init and never
 * changes: taken keys and opened doors are the `held` bits, applied when the view is drawn. */
#include <stdlib.h>
#include "ocean.h"
#include "spec.h"

#define KR_SIDE (2 * KR_VIEW + 1)  /* KR_VIEW (3) comes from spec.toml: it sizes the obs */
#define KR_MAX_ROOM_COUNT (KR_MAX_ROOMS * KR_MAX_ROOMS)
enum { KR_FLOOR = 0, KR_WALL = 1, KR_GOAL = 2, KR_KEY = 3, KR_DOOR = KR_KEY + KR_MAX_KEYS };
enum { KR_UP, KR_DOWN, KR_LEFT, KR_RIGHT, KR_ACTIONS };

typedef struct Keyrooms {
    OCEAN_SLOTS(unsigned char);
    KeyroomsConfig cfg;  /* options (spec.toml) */
    int rows, cols;      /* the grid without its padding: rooms * (room_size + 1) + 1 each way */
    int stride;          /* cols + 2 * KR_VIEW */
    unsigned char *grid; /* [(rows + 2 * KR_VIEW) * stride]: the layout, fixed after c_init */
    int start, goal, num_locks;
    /* the episode */
    int agent, tick, held, room, rooms;
    uint64_t visited; /* rooms entered this episode, one bit each */
    float episode_return;
} Keyrooms;

/* Saved states (ocean.h): the memory c_init allocates. */
#define OCEAN_STATE_BLOCKS(X, env) X(grid, (size_t)((env)->rows + 2 * KR_VIEW) * (size_t)(env)->stride)

static inline int kr_cell(const Keyrooms *env, int r, int c) { return (r + KR_VIEW) * env->stride + c + KR_VIEW; }

static inline int kr_popcount(uint64_t x) {
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

/* The room a grid cell lies in, or -1 for a wall or a doorway. */
static int kr_room_of(const Keyrooms *env, int cell) {
    int r = cell / env->stride - KR_VIEW, c = cell % env->stride - KR_VIEW, step = env->cfg.room_size + 1;
    if (r % step == 0 || c % step == 0) return -1;
    return (r / step) * env->cfg.rooms_x + c / step;
}

/* A cell of room `room`, `dr` and `dc` floor cells from its top-left corner. */
static int kr_room_cell(const Keyrooms *env, int room, int dr, int dc) {
    int step = env->cfg.room_size + 1;
    return kr_cell(env, (room / env->cfg.rooms_x) * step + 1 + dr, (room % env->cfg.rooms_x) * step + 1 + dc);
}

/* The doorway between neighbouring rooms a and b, `offset` cells along their shared wall. */
static int kr_doorway(const Keyrooms *env, int a, int b, int offset) {
    int step = env->cfg.room_size + 1, w = env->cfg.rooms_x;
    int lo = a < b ? a : b, hi = a < b ? b : a;
    if (hi - lo == w) return kr_cell(env, (hi / w) * step, (lo % w) * step + 1 + offset);  /* b below a */
    return kr_cell(env, (lo / w) * step + 1 + offset, (hi % w) * step);                    /* b right of a */
}

/* The layout: a depth-first spanning tree of the rooms from room 0 (the start), the goal in the
 * deepest room, num_keys locked doors spread along the path to it and each key in the room of its
 * region (reachable with the keys before it) that lies deepest off that path. */
static void kr_build_layout(Keyrooms *env) {
    const int w = env->cfg.rooms_x, n = w * env->cfg.rooms_y, S = env->cfg.room_size;
    uint64_t s = ocean_seed_mix((uint64_t)env->cfg.layout_seed, 0x6B657973);
    int parent[KR_MAX_ROOM_COUNT], depth[KR_MAX_ROOM_COUNT], door[KR_MAX_ROOM_COUNT], stack[KR_MAX_ROOM_COUNT];
    int order[KR_MAX_ROOM_COUNT], lock[KR_MAX_ROOM_COUNT], need[KR_MAX_ROOM_COUNT], off[KR_MAX_ROOM_COUNT];
    int on_path[KR_MAX_ROOM_COUNT];
    memset(env->grid, KR_WALL, (size_t)(env->rows + 2 * KR_VIEW) * (size_t)env->stride);
    for (int room = 0; room < n; room++) {
        parent[room] = -2;  /* not reached yet */
        lock[room] = -1;
        on_path[room] = 0;
        for (int dr = 0; dr < S; dr++)
            for (int dc = 0; dc < S; dc++) env->grid[kr_room_cell(env, room, dr, dc)] = KR_FLOOR;
    }
    int top = 0, count = 0;
    parent[0] = -1;
    depth[0] = 0;
    stack[top++] = 0;
    order[count++] = 0;
    while (top > 0) {
        int room = stack[top - 1], rx = room % w, ry = room / w;
        int options[4], k = 0;
        if (ry > 0 && parent[room - w] == -2) options[k++] = room - w;
        if (ry < env->cfg.rooms_y - 1 && parent[room + w] == -2) options[k++] = room + w;
        if (rx > 0 && parent[room - 1] == -2) options[k++] = room - 1;
        if (rx < w - 1 && parent[room + 1] == -2) options[k++] = room + 1;
        if (k == 0) {
            top--;
            continue;
        }
        int next = options[ocean_randint(&s, k)];
        parent[next] = room;
        depth[next] = depth[room] + 1;
        door[next] = kr_doorway(env, room, next, ocean_randint(&s, S));
        env->grid[door[next]] = KR_FLOOR;
        stack[top++] = next;
        order[count++] = next;  /* parents before children */
    }
    int goal_room = 0;
    for (int room = 1; room < n; room++)
        if (depth[room] > depth[goal_room]) goal_room = room;
    for (int room = goal_room; room >= 0; room = parent[room]) on_path[room] = 1;
    /* locked doors: on the path's edges (the edge into path room p has index depth[p]), spread out */
    int length = depth[goal_room], locks = env->cfg.num_keys < length ? env->cfg.num_keys : length, prev = 0;
    int locked_edge[KR_MAX_KEYS];
    for (int i = 0; i < locks; i++) {
        int e = (i + 1) * length / (locks + 1);
        if (e <= prev) e = prev + 1;
        if (e > length - (locks - 1 - i)) e = length - (locks - 1 - i);
        locked_edge[i] = prev = e;
    }
    for (int room = goal_room; room > 0; room = parent[room])
        for (int i = 0; i < locks; i++)
            if (depth[room] == locked_edge[i]) {
                lock[room] = i;
                env->grid[door[room]] = (unsigned char)(KR_DOOR + i);
            }
    for (int k = 0; k < count; k++) {  /* in tree order: a parent's values are ready */
        int room = order[k], p = parent[room];
        need[room] = p < 0 ? 0 : (lock[room] >= 0 ? lock[room] + 1 : need[p]);
        off[room] = on_path[room] ? 0 : off[p] + 1;
    }
    for (int i = 0; i < locks; i++) {
        int best = -1;
        for (int room = 0; room < n; room++) {
            if (need[room] != i) continue;
            if (best < 0 || off[room] > off[best] || (off[room] == off[best] && depth[room] > depth[best])) best = room;
        }
        int cell;
        do cell = kr_room_cell(env, best, ocean_randint(&s, S), ocean_randint(&s, S));
        while (best == 0 && cell == kr_room_cell(env, 0, S / 2, S / 2));
        env->grid[cell] = (unsigned char)(KR_KEY + i);
    }
    env->num_locks = locks;
    env->start = kr_room_cell(env, 0, S / 2, S / 2);
    env->goal = kr_room_cell(env, goal_room, S / 2, S / 2);
    env->grid[env->goal] = KR_GOAL;
}

static int c_init(Keyrooms *env) {
    int step = env->cfg.room_size + 1;
    env->rows = env->cfg.rooms_y * step + 1;
    env->cols = env->cfg.rooms_x * step + 1;
    env->stride = env->cols + 2 * KR_VIEW;
    env->grid = (unsigned char *)malloc((size_t)(env->rows + 2 * KR_VIEW) * (size_t)env->stride);
    if (env->grid == NULL) return ocean_fail(env, "out of memory for the rooms");
    kr_build_layout(env);
    return 0;
}

/* What the agent sees of a cell: a taken key and a door whose key is held read as floor; the other keys
 * and doors read alike (3, 4), the keys vector says which are held. Small values on purpose: the
 * default policy feeds observations to its MLP unscaled. */
static inline unsigned char kr_seen(const Keyrooms *env, unsigned char v) {
    if (v < KR_KEY) return v;
    int key = v < KR_DOOR, k = key ? v - KR_KEY : v - KR_DOOR;
    return (env->held >> k) & 1 ? KR_FLOOR : (unsigned char)(key ? 3 : 4);
}

/* A layout cell as drawn (frames, text): taken keys and doors whose key is held as floor, the others
 * with their index. */
static inline unsigned char kr_shown(const Keyrooms *env, unsigned char v) {
    if (v >= KR_KEY && ((env->held >> (v < KR_DOOR ? v - KR_KEY : v - KR_DOOR)) & 1)) return KR_FLOOR;
    return v;
}

static void kr_write_obs(Keyrooms *env) {
    unsigned char *o = env->observations;
    const unsigned char *src = env->grid + env->agent - KR_VIEW * env->stride - KR_VIEW;
    for (int r = 0; r < KR_SIDE; r++)
        for (int c = 0; c < KR_SIDE; c++) *o++ = kr_seen(env, src[r * env->stride + c]);
    for (int k = 0; k < KR_MAX_KEYS; k++) *o++ = (unsigned char)((env->held >> k) & 1);
    memset(o, 0, KR_MAX_ROOM_COUNT);
    o[env->room] = 1;
    o += KR_MAX_ROOM_COUNT;
    int step = env->cfg.room_size + 1;
    *o++ = (unsigned char)((env->agent / env->stride - KR_VIEW - 1) % step);
    *o = (unsigned char)((env->agent % env->stride - KR_VIEW - 1) % step);
}

static void kr_new_episode(Keyrooms *env) {
    env->agent = env->start;
    env->tick = 0;
    env->held = 0;
    env->room = 0;  /* before the observation, which shows it */
    env->visited = 1;
    env->rooms = 1;
    env->episode_return = 0.0f;
    kr_write_obs(env);
}

static void c_reset(Keyrooms *env) { kr_new_episode(env); }

static void c_step(Keyrooms *env) {
    const int delta[KR_ACTIONS] = {-env->stride, env->stride, -1, 1};
    int next = env->agent + delta[ocean_clamp(env->actions[0], KR_ACTIONS)];
    unsigned char v = env->grid[next];
    int blocked = v == KR_WALL || (v >= KR_DOOR && !((env->held >> (v - KR_DOOR)) & 1));
    float reward = 0.0f;
    if (!blocked) {
        env->agent = next;
        if (v >= KR_KEY && v < KR_DOOR) env->held |= 1 << (v - KR_KEY);
        int room = kr_room_of(env, next);
        if (room >= 0) {
            env->room = room;
            if (!((env->visited >> room) & 1)) {
                env->visited |= (uint64_t)1 << room;
                env->rooms++;
                reward += env->cfg.room_reward;
            }
        }
    }
    env->tick++;
    int reached = env->agent == env->goal;
    int timeout = !reached && env->tick >= env->cfg.max_steps;
    if (reached) reward += 1.0f;
    env->episode_return += reward;
    env->rewards[0] = reward;
    env->terminals[0] = (unsigned char)reached;
    env->truncations[0] = (unsigned char)timeout;
    if (reached || timeout) {
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)env->rooms, (float)reached);
        env->log.keys += (float)kr_popcount((uint64_t)env->held);
        kr_new_episode(env);
    } else if (!blocked) {
        kr_write_obs(env);  /* a bump leaves the view as it was */
    }
}

/* [[progress]] (spec.toml): rooms reached this episode, keys held. */
static void c_progress(Keyrooms *env, double *out) {
    out[0] = (double)env->rooms;
    out[1] = (double)kr_popcount((uint64_t)env->held);
}

/* Go-Explore's cell: the room (the last one entered, in a doorway) and the keys held. */
static uint64_t c_cell(Keyrooms *env) {
    return (uint64_t)env->room * ((uint64_t)1 << KR_MAX_KEYS) + (uint64_t)env->held;
}

#define KR_SCALE 8
static void c_frame_shape(Keyrooms *env, int *h, int *w) {
    *h = env->rows * KR_SCALE;
    *w = env->cols * KR_SCALE;
}

static void c_render_rgb(Keyrooms *env, unsigned char *frame) {
    static const unsigned char base[3][3] = {{230, 230, 230}, {30, 30, 60}, {40, 200, 40}};
    static const unsigned char hue[KR_MAX_KEYS][3] = {{220, 160, 0}, {0, 150, 220}, {200, 0, 200},
                                                      {0, 180, 120}, {150, 90, 40}, {120, 120, 250}};
    static const unsigned char agent_rgb[3] = {220, 40, 40};
    int h = env->rows * KR_SCALE, w = env->cols * KR_SCALE;
    for (int r = 0; r < env->rows; r++)
        for (int c = 0; c < env->cols; c++) {
            unsigned char v = kr_shown(env, env->grid[kr_cell(env, r, c)]);
            int key = v >= KR_KEY && v < KR_DOOR;
            const unsigned char *rgb = v < KR_KEY ? base[v] : hue[key ? v - KR_KEY : v - KR_DOOR];
            ocean_fill_rect(frame, h, w, c * KR_SCALE, r * KR_SCALE, KR_SCALE, KR_SCALE, key ? base[KR_FLOOR] : rgb);
            if (key) ocean_fill_rect(frame, h, w, c * KR_SCALE + 2, r * KR_SCALE + 2, KR_SCALE - 4, KR_SCALE - 4, rgb);
        }
    int r = env->agent / env->stride - KR_VIEW, c = env->agent % env->stride - KR_VIEW;
    ocean_fill_rect(frame, h, w, c * KR_SCALE + 1, r * KR_SCALE + 1, KR_SCALE - 2, KR_SCALE - 2, agent_rgb);
}

/* '#' wall, ' ' floor, 'G' goal, 'a'.. keys not taken, 'A'.. locked doors, '@' the agent; then the keys
 * held and the step (pufferlib.ocean.keyrooms reads this to plan its scripted solver). */
static int c_render_text(Keyrooms *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int r = 0; r < env->rows; r++) {
        for (int c = 0; c < env->cols; c++) {
            int cell = kr_cell(env, r, c);
            unsigned char v = kr_shown(env, env->grid[cell]);
            ocean_putc(&t, cell == env->agent ? '@'
                           : v < KR_KEY       ? " #G"[v]
                           : v < KR_DOOR      ? (char)('a' + v - KR_KEY)
                                              : (char)('A' + v - KR_DOOR));
        }
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "keys ");
    ocean_puti(&t, env->held);
    ocean_puts(&t, " rooms ");
    ocean_puti(&t, env->rooms);
    ocean_puts(&t, " step ");
    ocean_puti(&t, env->tick);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Keyrooms *env) {
    free(env->grid);
    env->grid = NULL;
}
