/* Boxoban: Sokoban on a new room every episode, built the way the Boxoban levels were (gym-sokoban's
 * generator): a random walk carves the room, the targets are drawn on its floor with the boxes on them,
 * and the level is then played backwards (the player pulls boxes) from that solved state. Every pull
 * played backwards is a push played forwards, so the level is solvable by construction, and the backward
 * play reversed is a solution: the autopilot follows it. The generator walks the player to each pull by
 * the shortest way and keeps the whole solution within max_steps, so the autopilot solves every level in
 * time. The observation is the room as seen from the player (an MLP learns one rule for "a box ahead"
 * instead of one per cell): a window of side 2 * size - 5, wide enough to show every inside cell from
 * any inside cell, cut from copies of the planes padded with walls so it is a few row copies.
 * Everything lives in the struct (no allocation), so a saved state is the struct itself. */
#include "ocean.h"
#include "spec.h"

#define BB_CELLS (BB_MAX_SIZE * BB_MAX_SIZE)
#define BB_PAD_SIDE (3 * BB_MAX_SIZE - 6) /* a row plus the window's radius (size - 3) each side */
#define BB_CHUNK 16 /* bytes of a view row copied at once (bb_write_plane) */
#define BB_ATTEMPTS 256 /* levels tried before one whose boxes are not all off their targets is kept */
enum { BB_UP, BB_DOWN, BB_LEFT, BB_RIGHT, BB_ACTIONS }; /* a direction's opposite is d ^ 1 */
enum { BB_WALL = 1, BB_TARGET = 2, BB_BOX = 4 }; /* a cell's bits in `rows`, the observation's planes in order */
static const unsigned char bb_wall_row[BB_PAD_SIDE + 2 * BB_CHUNK] = {[0 ... BB_PAD_SIDE + 2 * BB_CHUNK - 1] = BB_WALL};

typedef struct Boxoban {
    OCEAN_SLOTS(unsigned char);
    BoxobanConfig cfg; /* options (spec.toml) */
    int cells;         /* size * size */
    int player, tick, on_target, plan_len;
    int radius, side, pad;     /* the window's radius and side; a padded row's length */
    int delta[BB_ACTIONS];     /* a move's change of cell index */
    int row_delta[BB_ACTIONS]; /* and of index in `rows` */
    float episode_return;
    /* The room's rows, each padded with `radius` walls either side, the three planes as bits of a byte
     * (BB_WALL, BB_TARGET, BB_BOX); the rows above and below the room are bb_wall_row. A step reads only
     * these (and the fields above): one byte map of size rows, not three planes padded all round, so a view
     * reads a third of the cache lines, and with thousands of rooms per core those reads are most of a step.
     * The planes below are the generator's and the renderers'; a push keeps them in step. */
    unsigned char rows[BB_MAX_SIZE * BB_PAD_SIDE + 2 * BB_CHUNK];
    unsigned char wall[BB_CELLS], target[BB_CELLS], box[BB_CELLS];
    unsigned char plan[BB_MAX_PLAN]; /* the generator's solution from the level's start, as actions */
} Boxoban;

static inline int bb_delta(const Boxoban *env, int d) { return env->delta[d]; }

static inline int bb_free(const Boxoban *env, int cell) { return !env->wall[cell] && !env->box[cell]; }

static int c_init(Boxoban *env) {
    env->cells = env->cfg.size * env->cfg.size;
    env->radius = env->cfg.size - 3;
    env->side = 2 * env->radius + 1;
    env->pad = env->cfg.size + 2 * env->radius;
    env->delta[BB_UP] = -env->cfg.size;
    env->delta[BB_DOWN] = env->cfg.size;
    env->delta[BB_LEFT] = -1;
    env->delta[BB_RIGHT] = 1;
    env->row_delta[BB_UP] = -env->pad;
    env->row_delta[BB_DOWN] = env->pad;
    env->row_delta[BB_LEFT] = -1;
    env->row_delta[BB_RIGHT] = 1;
    return 0;
}

/* The room: walls everywhere, then a random walk over the inside that clears a small shape at each step
 * (a cell, a bar of three either way, a 2x2 block), turning with probability 0.35, like gym-sokoban's
 * room topology. The floor is one connected region. */
static int bb_carve(Boxoban *env) {
    static const int dr[4] = {-1, 1, 0, 0}, dc[4] = {0, 0, -1, 1};
    static const int shape_n[5] = {1, 3, 3, 4, 2};
    static const int shape[5][4][2] = {{{0, 0}},
                                       {{0, -1}, {0, 0}, {0, 1}},
                                       {{-1, 0}, {0, 0}, {1, 0}},
                                       {{0, 0}, {0, 1}, {1, 0}, {1, 1}},
                                       {{0, 0}, {0, 1}}};
    const int S = env->cfg.size, inner = S - 2;
    memset(env->wall, 1, (size_t)env->cells);
    int r = 1 + ocean_randint(&env->rng, inner), c = 1 + ocean_randint(&env->rng, inner);
    int d = ocean_randint(&env->rng, 4), floor = 0;
    for (int step = 0; step < 3 * S; step++) {
        if (ocean_randf(&env->rng) < 0.35f) d = ocean_randint(&env->rng, 4);
        r += dr[d];
        c += dc[d];
        r = r < 1 ? 1 : (r > inner ? inner : r);
        c = c < 1 ? 1 : (c > inner ? inner : c);
        int s = ocean_randint(&env->rng, 5);
        for (int k = 0; k < shape_n[s]; k++) {
            int rr = r + shape[s][k][0], cc = c + shape[s][k][1];
            if (rr < 1 || rr > inner || cc < 1 || cc > inner) continue;
            floor += env->wall[rr * S + cc];
            env->wall[rr * S + cc] = 0;
        }
    }
    return floor;
}

/* An open room: the whole inside is floor (the fallback when carving keeps coming up too small). */
static int bb_open_room(Boxoban *env) {
    const int S = env->cfg.size;
    memset(env->wall, 1, (size_t)env->cells);
    for (int r = 1; r < S - 1; r++) memset(env->wall + r * S + 1, 0, (size_t)(S - 2));
    return (S - 2) * (S - 2);
}

/* Steps from `from` to every cell the player can walk to (-1 elsewhere), and the direction of the last
 * step into each, so a shortest walk can be read back. */
static void bb_walks(const Boxoban *env, int from, int *dist, unsigned char *last) {
    int queue[BB_CELLS], head = 0, tail = 0;
    /* -2 marks a cell the walk cannot enter, so the search tests one array */
    for (int i = 0; i < env->cells; i++) dist[i] = (env->wall[i] | env->box[i]) ? -2 : -1;
    dist[from] = 0;
    queue[tail++] = from;
    while (head < tail) {
        int cell = queue[head++];
        for (int d = 0; d < 4; d++) {
            int next = cell + bb_delta(env, d);
            if (dist[next] != -1) continue;
            dist[next] = dist[cell] + 1;
            last[next] = (unsigned char)d;
            queue[tail++] = next;
        }
    }
}

/* Play the level backwards from the solved state (env->box == env->target, player not placed yet): each
 * pull takes a box and a side of it that the player can walk to, and pulls it one cell, the player
 * stepping back. Boxes still on their targets are pulled first; then pulls * boxes pulls in all, or more
 * while a box sits on a target, all within `budget` steps of backward play. `rev` gets the backward
 * moves. Returns the backward steps played, negative when a box is still on a target at the end. */
static int bb_play_backwards(Boxoban *env, unsigned char *rev, int budget) {
    int dist[BB_CELLS];
    unsigned char last[BB_CELLS];
    const int total = env->cfg.pulls * env->cfg.boxes, limit = 2 * total + 8;
    int on = env->cfg.boxes, len = 0, player = -1;
    int at[BB_MAX_BOXES], n = 0; /* the boxes' cells in increasing order: the order the pulls are drawn in */
    for (int b = 0; b < env->cells; b++)
        if (env->box[b]) at[n++] = b;
    for (int pulls = 0; (pulls < total || on > 0) && pulls < limit; pulls++) {
        if (player >= 0) bb_walks(env, player, dist, last);
        int chosen = -1;
        for (int pass = on > 0 ? 0 : 1; pass < 2 && chosen < 0; pass++) {
            int count = 0;
            for (int k = 0; k < n; k++) {
                int b = at[k];
                if (pass == 0 && !env->target[b]) continue;
                for (int d = 0; d < 4; d++) {
                    int p = b + bb_delta(env, d), q = p + bb_delta(env, d);
                    if (!bb_free(env, p) || !bb_free(env, q)) continue;
                    int walk = player < 0 ? 0 : dist[p]; /* the first pull places the player */
                    if (walk < 0 || len + walk + 1 > budget) continue;
                    if (ocean_randint(&env->rng, ++count) == 0) chosen = 4 * b + d;
                }
            }
        }
        if (chosen < 0) break;
        int b = chosen / 4, d = chosen % 4, p = b + bb_delta(env, d);
        if (player >= 0) {
            int walk = dist[p], cell = p;
            for (int i = walk - 1; i >= 0; i--) {
                rev[len + i] = last[cell];
                cell -= bb_delta(env, last[cell]);
            }
            len += walk;
        }
        rev[len++] = (unsigned char)d; /* the pull: the player steps from p away from the box */
        on += env->target[p] - env->target[b];
        env->box[b] = 0;
        env->box[p] = 1;
        int k = 0;
        while (at[k] != b) k++;
        for (; k > 0 && at[k - 1] > p; k--) at[k] = at[k - 1];
        for (; k < n - 1 && at[k + 1] < p; k++) at[k] = at[k + 1];
        at[k] = p;
        player = p + bb_delta(env, d);
    }
    env->player = player;
    return on == 0 ? len : -len - 1;
}

/* A room cell's index in the padded rows. */
static inline int bb_padded(const Boxoban *env, int cell) {
    return (cell / env->cfg.size) * env->pad + cell % env->cfg.size + env->radius;
}

static void bb_pad_rows(Boxoban *env) {
    memset(env->rows, BB_WALL, (size_t)env->cfg.size * (size_t)env->pad);
    for (int i = 0; i < env->cells; i++)
        env->rows[bb_padded(env, i)] =
            (unsigned char)(env->wall[i] * BB_WALL | env->target[i] * BB_TARGET | env->box[i] * BB_BOX);
}

/* One plane of the window: row r is room row py - radius + r, from column px - radius on, which is column
 * px of the padded row. A row is unpacked BB_CHUNK bytes at a time (a fixed width compiles to a few vector
 * instructions): the last chunk spills past the row onto the next one, which is written after it. Rows
 * whose spill would pass the end of the observation are unpacked to their exact width. The reads past a
 * row stay inside `rows` (its spare bytes) or bb_wall_row. */
static inline void bb_write_plane(const Boxoban *env, unsigned char *o, const unsigned char *end, unsigned char bit) {
    const int S = env->cfg.size, w = env->side, span = (w + BB_CHUNK - 1) / BB_CHUNK * BB_CHUNK;
    const int py = env->player / S, px = env->player % S;
    for (int r = 0, y = py - env->radius; r < w; r++, y++, o += w) {
        const unsigned char *src = y >= 0 && y < S ? env->rows + y * env->pad + px : bb_wall_row;
        if (o + span > end)
            for (int k = 0; k < w; k++) o[k] = (src[k] & bit) != 0;
        else
            for (int c = 0; c < w; c += BB_CHUNK) {
                unsigned char in[BB_CHUNK], out[BB_CHUNK]; /* copies, so the compiler sees no overlap */
                memcpy(in, src + c, BB_CHUNK);
                for (int k = 0; k < BB_CHUNK; k++) out[k] = (in[k] & bit) != 0;
                memcpy(o + c, out, BB_CHUNK);
            }
    }
}

static void bb_write_obs(Boxoban *env) {
    const int area = env->side * env->side;
    unsigned char *o = env->observations, *end = o + 3 * area;
    bb_write_plane(env, o, end, BB_WALL);
    bb_write_plane(env, o + area, end, BB_TARGET);
    bb_write_plane(env, o + 2 * area, end, BB_BOX);
}

static void bb_new_episode(Boxoban *env) {
    unsigned char rev[BB_MAX_PLAN];
    const int budget = env->cfg.max_steps < BB_MAX_PLAN ? env->cfg.max_steps : BB_MAX_PLAN;
    int len = -1;
    for (int attempt = 0; len < 0; attempt++) {
        if (attempt % 4 == 0) { /* a few target draws per room before a new room */
            int floor = attempt < BB_ATTEMPTS / 2 ? bb_carve(env) : bb_open_room(env);
            if (floor < env->cfg.boxes + 4) floor = bb_open_room(env);
        }
        memset(env->target, 0, (size_t)env->cells);
        for (int placed = 0; placed < env->cfg.boxes;) {
            int cell = ocean_randint(&env->rng, env->cells);
            if (env->wall[cell] || env->target[cell]) continue;
            env->target[cell] = 1;
            placed++;
        }
        memcpy(env->box, env->target, (size_t)env->cells);
        len = bb_play_backwards(env, rev, budget);
        /* past the attempts, a level with some boxes still on targets (and at least one pull) is kept */
        if (len < -1 && attempt >= BB_ATTEMPTS) len = -len - 1;
    }
    env->plan_len = len;
    for (int i = 0; i < len; i++) env->plan[i] = rev[len - 1 - i] ^ 1;
    env->on_target = 0;
    for (int i = 0; i < env->cells; i++) env->on_target += env->box[i] & env->target[i];
    env->tick = 0;
    env->episode_return = 0.0f;
    bb_pad_rows(env);
    bb_write_obs(env);
}

static void c_reset(Boxoban *env) { bb_new_episode(env); }

static void c_step(Boxoban *env) {
    int a = env->cfg.autopilot ? (env->tick < env->plan_len ? env->plan[env->tick] : 0)
                               : ocean_clamp(env->actions[0], BB_ACTIONS);
    const int d = bb_delta(env, a), next = env->player + d;
    const int rd = env->row_delta[a], at = bb_padded(env, next);
    float reward = -0.1f;
    int moved = !(env->rows[at] & BB_WALL);
    if (moved && (env->rows[at] & BB_BOX)) {
        moved = !(env->rows[at + rd] & (BB_WALL | BB_BOX));
        if (moved) {
            int gain = (env->rows[at + rd] & BB_TARGET ? 1 : 0) - (env->rows[at] & BB_TARGET ? 1 : 0);
            env->box[next] = 0;
            env->box[next + d] = 1;
            env->on_target += gain;
            reward += (float)gain;
            env->rows[at] &= (unsigned char)~BB_BOX;
            env->rows[at + rd] |= BB_BOX;
        }
    }
    if (moved) env->player = next;
    env->tick++;
    int solved = env->on_target == env->cfg.boxes;
    int timeout = !solved && env->tick >= env->cfg.max_steps;
    if (solved) reward += 10.0f;
    env->episode_return += reward;
    env->rewards[0] = reward;
    env->terminals[0] = (unsigned char)solved;
    env->truncations[0] = (unsigned char)timeout;
    if (solved || timeout) {
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)env->on_target, (float)solved);
        bb_new_episode(env);
    } else if (moved) {
        bb_write_obs(env); /* a bump leaves the view as it was */
    }
}

#define BB_SCALE 16
static void c_frame_shape(Boxoban *env, int *h, int *w) { *h = *w = env->cfg.size * BB_SCALE; }

static void c_render_rgb(Boxoban *env, unsigned char *frame) {
    static const unsigned char wall_rgb[3] = {60, 50, 70}, floor_rgb[3] = {225, 215, 190};
    static const unsigned char target_rgb[3] = {220, 60, 60}, box_rgb[3] = {170, 110, 40};
    static const unsigned char done_rgb[3] = {60, 170, 70}, player_rgb[3] = {40, 90, 220};
    const int S = env->cfg.size, px = S * BB_SCALE, q = BB_SCALE / 4;
    for (int i = 0; i < env->cells; i++) {
        int x = (i % S) * BB_SCALE, y = (i / S) * BB_SCALE;
        ocean_fill_rect(frame, px, px, x, y, BB_SCALE, BB_SCALE, env->wall[i] ? wall_rgb : floor_rgb);
        if (env->box[i])
            ocean_fill_rect(frame, px, px, x + 1, y + 1, BB_SCALE - 2, BB_SCALE - 2,
                            env->target[i] ? done_rgb : box_rgb);
        else if (env->target[i])
            ocean_fill_rect(frame, px, px, x + q + 1, y + q + 1, BB_SCALE - 2 * q - 2, BB_SCALE - 2 * q - 2,
                            target_rgb);
        if (i == env->player)
            ocean_fill_rect(frame, px, px, x + q, y + q, BB_SCALE - 2 * q, BB_SCALE - 2 * q, player_rgb);
    }
}

/* The usual Sokoban characters: '#' wall, ' ' floor, '.' target, '$' box, '*' box on a target, '@' the
 * player, '+' the player on a target; then the step (pufferlib.ocean.boxoban reads this). */
static int c_render_text(Boxoban *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    const int S = env->cfg.size;
    for (int i = 0; i < env->cells; i++) {
        char ch = env->wall[i]       ? '#'
                  : env->box[i]      ? (env->target[i] ? '*' : '$')
                  : i == env->player ? (env->target[i] ? '+' : '@')
                                     : (env->target[i] ? '.' : ' ');
        ocean_putc(&t, ch);
        if (i % S == S - 1) ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "step ");
    ocean_puti(&t, env->tick);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Boxoban *env) { (void)env; }
