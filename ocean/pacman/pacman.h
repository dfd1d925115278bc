/* Pac-Man: the arcade's first maze (28 x 31 tiles, 240 pellets and 4 power pellets) and its four
 * ghosts. Pac-Man moves one tile per step; ghosts make `ghost_speed` moves per step (frightened ones
 * half as many, eyes two). Ghosts alternate scatter and chase phases on the arcade's first-level
 * schedule (7, 20, 7, 20, 5, 20, 5 s, then chase for good, at 8 steps a second) and reverse at each
 * change. In scatter each heads for its own corner; in chase Blinky targets Pac-Man's tile, Pinky the
 * tile 4 ahead of him, Inky the tile twice as far from Blinky as the tile 2 ahead of Pac-Man (both
 * with the arcade's overflow: "ahead" while facing up is also as many tiles left), and Clyde Pac-Man
 * while more than 8 tiles away, else his corner. At a junction a ghost takes the open direction (not
 * back, not up at the four red-zone tiles) whose next tile is nearest its target, ties in the order
 * up, left, down, right. A power pellet frightens the ghosts for `frightened_steps` (they reverse,
 * wander at random and can be eaten: they go home as eyes and come out again). Pinky leaves the house
 * at once, Inky after 30 pellets of the round and Clyde after 60, or any of them after 32 steps
 * without a pellet. A hunting ghost on Pac-Man's tile (or passing through him) costs a life; the round
 * restarts with the pellets left. Eating every pellet clears the maze (terminal, perf 1); losing
 * every life ends the game (terminal, perf 0); `max_steps` truncates.
 *
 * Reward: 0.1 per pellet, 0.5 per power pellet, ghost_reward per ghost, -death_penalty per life.
 * Log: score = arcade points (10, 50, 200-400-800-1600 per ghost of one power pellet), perf = maze
 * cleared. */
#include "ocean.h"
#include "spec.h" /* generated from spec.toml: PacmanConfig, PM_PELLETS, PM_GHOSTS */

#define PM_W 28
#define PM_H 31
#define PM_CELLS (PM_W * PM_H)
#define PM_ACTIONS 4
#define PM_GHOST_OBS 9
#define PM_PELLET_OBS (11 + PM_GHOST_OBS * PM_GHOSTS)
#define PM_NEAREST_OBS (PM_PELLET_OBS + PM_PELLETS)
#define PM_START_X 13
#define PM_START_Y 23
#define PM_EXIT_X 13 /* the tile above the house's door: ghosts leave the house and eyes revive here */
#define PM_EXIT_Y 11
#define PM_IDLE_RELEASE 32
#define PM_CLYDE_RADIUS2 64

enum { PM_UP, PM_LEFT, PM_DOWN, PM_RIGHT };
enum { PM_BLINKY, PM_PINKY, PM_INKY, PM_CLYDE };
enum { PM_HOUSE, PM_HUNT, PM_FRIGHT, PM_EYES };
/* cell bits; the breadth-first search borrows the top three */
enum { PM_WALL = 1, PM_DOOR = 2, PM_DOT = 4, PM_POWER = 8, PM_NOUP = 16, PM_SEEN = 32, PM_FIRST_SHIFT = 6 };

static const int PM_DX[4] = {0, -1, 0, 1}, PM_DY[4] = {-1, 0, 1, 0};
/* scatter corners (outside the maze, as in the arcade), then house spots and release pellet counts */
static const int PM_CORNER[PM_GHOSTS][2] = {{25, -3}, {2, -3}, {27, 31}, {0, 31}};
static const int PM_HOME[PM_GHOSTS][2] = {{13, 11}, {13, 14}, {11, 14}, {15, 14}};
static const int PM_RELEASE[PM_GHOSTS] = {0, 0, 30, 60};
/* the arcade's red zones: hunting ghosts may not turn up on these tiles */
static const int PM_NO_UP[4][2] = {{12, 11}, {15, 11}, {12, 23}, {15, 23}};
/* steps of scatter, chase, scatter, ...; the last chase lasts for good */
#define PM_PHASES 8
static const int PM_SCHEDULE[PM_PHASES] = {56, 160, 56, 160, 40, 160, 40, 0};

/* clang-format off */
static const char PM_MAZE[PM_H][PM_W + 1] = {
    "############################",
    "#............##............#",
    "#.####.#####.##.#####.####.#",
    "#o####.#####.##.#####.####o#",
    "#.####.#####.##.#####.####.#",
    "#..........................#",
    "#.####.##.########.##.####.#",
    "#.####.##.########.##.####.#",
    "#......##....##....##......#",
    "######.##### ## #####.######",
    "######.##### ## #####.######",
    "######.##          ##.######",
    "######.## ###--### ##.######",
    "######.## #      # ##.######",
    "      .   #      #   .      ",
    "######.## #      # ##.######",
    "######.## ######## ##.######",
    "######.##          ##.######",
    "######.## ######## ##.######",
    "######.## ######## ##.######",
    "#............##............#",
    "#.####.#####.##.#####.####.#",
    "#.####.#####.##.#####.####.#",
    "#o..##.......  .......##..o#",
    "###.##.##.########.##.##.###",
    "###.##.##.########.##.##.###",
    "#......##....##....##......#",
    "#.##########.##.##########.#",
    "#.##########.##.##########.#",
    "#..........................#",
    "############################",
};
/* clang-format on */

typedef struct PacmanGhost {
    int x, y, dir, state, reverse;
    float moves; /* moves owed: ghost_speed is added every step */
} PacmanGhost;

typedef struct Pacman {
    OCEAN_SLOTS(float);
    PacmanConfig cfg;
    unsigned char cell[PM_CELLS];
    unsigned short queue[PM_CELLS];
    short pellets_before_row[PM_H]; /* pellets above row y, in reading order: the observation index */
    PacmanGhost ghost[PM_GHOSTS];
    int x, y, dir, nearest;
    int lives, pellets_left, round_pellets, idle, phase, phase_left, fright_left, combo;
    int tick, score, died;
    float ret, reward;
} Pacman;

static int c_init(Pacman *env) {
    int n = 0;
    for (int y = 0; y < PM_H; y++) {
        env->pellets_before_row[y] = (short)n;
        for (int x = 0; x < PM_W; x++) n += PM_MAZE[y][x] == '.' || PM_MAZE[y][x] == 'o';
    }
    if (n != PM_PELLETS) return ocean_fail(env, "the maze does not hold PM_PELLETS pellets");
    return 0;
}

static inline int pm_at(int x, int y) { return y * PM_W + x; }
static inline int pm_wrap_x(int x) { return x < 0 ? x + PM_W : (x >= PM_W ? x - PM_W : x); }

/* The tile one step from (x, y) towards d, or -1 for a wall or the door (the tunnel wraps). */
static inline int pm_next(const Pacman *env, int x, int y, int d) {
    int nx = pm_wrap_x(x + PM_DX[d]), ny = y + PM_DY[d];
    if (ny < 0 || ny >= PM_H) return -1;
    int c = pm_at(nx, ny);
    return env->cell[c] & (PM_WALL | PM_DOOR) ? -1 : c;
}

/* Breadth-first search from Pac-Man to the nearest pellet; the direction of its first step (-1: none
 * left). It stops at the first pellet, so it visits a few tiles while pellets are near. */
static int pm_nearest_pellet(Pacman *env) {
    int head = 0, tail = 0, found = -1;
    int start = pm_at(env->x, env->y);
    env->cell[start] |= PM_SEEN;
    env->queue[tail++] = (unsigned short)start;
    while (head < tail && found < 0) {
        int c = env->queue[head++], x = c % PM_W, y = c / PM_W;
        for (int d = 0; d < 4; d++) {
            int n = pm_next(env, x, y, d);
            if (n < 0 || env->cell[n] & PM_SEEN) continue;
            int first = c == start ? d : env->cell[c] >> PM_FIRST_SHIFT;
            env->cell[n] = (unsigned char)((env->cell[n] & 63) | PM_SEEN | first << PM_FIRST_SHIFT);
            env->queue[tail++] = (unsigned short)n;
            if (env->cell[n] & (PM_DOT | PM_POWER)) {
                found = first;
                break;
            }
        }
    }
    for (int i = 0; i < tail; i++) env->cell[env->queue[i]] &= PM_SEEN - 1;
    return found;
}

static void pm_write_obs(Pacman *env) {
    float *o = env->observations;
    o[0] = (float)env->x * (1.0f / (PM_W - 1));
    o[1] = (float)env->y * (1.0f / (PM_H - 1));
    for (int d = 0; d < 4; d++) {
        o[2 + d] = (float)(env->dir == d);
        o[6 + d] = (float)(pm_next(env, env->x, env->y, d) >= 0);
    }
    o[10] = env->cfg.frightened_steps ? (float)env->fright_left / (float)env->cfg.frightened_steps : 0.0f;
    for (int i = 0; i < PM_GHOSTS; i++) {
        const PacmanGhost *g = &env->ghost[i];
        float *q = o + 11 + PM_GHOST_OBS * i;
        q[0] = (float)(g->x - env->x) * (1.0f / (PM_W - 1));
        q[1] = (float)(g->y - env->y) * (1.0f / (PM_H - 1));
        for (int d = 0; d < 4; d++) q[2 + d] = (float)(g->dir == d);
        q[6] = (float)(g->state == PM_HUNT);
        q[7] = (float)(g->state == PM_FRIGHT);
        q[8] = (float)(g->state == PM_EYES);
    }
    env->nearest = pm_nearest_pellet(env);
    for (int d = 0; d < 4; d++) o[PM_NEAREST_OBS + d] = (float)(env->nearest == d);
}

static void pm_new_round(Pacman *env) {
    env->x = PM_START_X;
    env->y = PM_START_Y;
    env->dir = PM_LEFT;
    for (int i = 0; i < PM_GHOSTS; i++)
        env->ghost[i] =
            (PacmanGhost){PM_HOME[i][0], PM_HOME[i][1], PM_LEFT, i == PM_BLINKY ? PM_HUNT : PM_HOUSE, 0, 0.0f};
    env->round_pellets = 0;
    env->idle = 0;
    env->phase = 0;
    env->phase_left = PM_SCHEDULE[0];
    env->fright_left = 0;
    env->combo = 0;
}

static void pm_new_game(Pacman *env) {
    for (int y = 0; y < PM_H; y++)
        for (int x = 0; x < PM_W; x++) {
            char t = PM_MAZE[y][x];
            env->cell[pm_at(x, y)] = t == '#'   ? PM_WALL
                                     : t == '-' ? PM_DOOR
                                     : t == '.' ? PM_DOT
                                     : t == 'o' ? PM_POWER
                                                : 0;
        }
    for (int i = 0; i < 4; i++) env->cell[pm_at(PM_NO_UP[i][0], PM_NO_UP[i][1])] |= PM_NOUP;
    for (int i = 0; i < PM_PELLETS; i++) env->observations[PM_PELLET_OBS + i] = 1.0f;
    env->pellets_left = PM_PELLETS;
    env->lives = env->cfg.lives;
    env->tick = 0;
    env->score = 0;
    env->ret = 0.0f;
    pm_new_round(env);
    pm_write_obs(env);
}

static void c_reset(Pacman *env) { pm_new_game(env); }

static void pm_target(const Pacman *env, int i, int *tx, int *ty) {
    const PacmanGhost *g = &env->ghost[i];
    if (g->state == PM_EYES) {
        *tx = PM_EXIT_X, *ty = PM_EXIT_Y;
        return;
    }
    if (env->phase % 2 == 0) { /* scatter */
        *tx = PM_CORNER[i][0], *ty = PM_CORNER[i][1];
        return;
    }
    int ahead = i == PM_PINKY ? 4 : 2;
    int ax = env->x + PM_DX[env->dir] * ahead - (env->dir == PM_UP ? ahead : 0), ay = env->y + PM_DY[env->dir] * ahead;
    switch (i) {
    case PM_BLINKY:
        *tx = env->x, *ty = env->y;
        break;
    case PM_PINKY:
        *tx = ax, *ty = ay;
        break;
    case PM_INKY:
        *tx = 2 * ax - env->ghost[PM_BLINKY].x, *ty = 2 * ay - env->ghost[PM_BLINKY].y;
        break;
    default: {
        int dx = g->x - env->x, dy = g->y - env->y;
        if (dx * dx + dy * dy > PM_CLYDE_RADIUS2) *tx = env->x, *ty = env->y;
        else *tx = PM_CORNER[i][0], *ty = PM_CORNER[i][1];
    }
    }
}

static void pm_ghost_move(Pacman *env, int i) {
    PacmanGhost *g = &env->ghost[i];
    int back = (g->dir + 2) % 4, choice = -1;
    if (g->reverse) {
        g->reverse = 0;
        if (pm_next(env, g->x, g->y, back) >= 0) choice = back;
    }
    if (choice < 0) {
        int options[4], n = 0;
        int no_up = g->state == PM_HUNT && env->cell[pm_at(g->x, g->y)] & PM_NOUP;
        for (int d = 0; d < 4; d++)
            if (d != back && !(d == PM_UP && no_up) && pm_next(env, g->x, g->y, d) >= 0) options[n++] = d;
        if (n == 0) choice = back;
        else if (g->state == PM_FRIGHT) choice = options[ocean_randint(&env->rng, n)];
        else {
            int tx, ty, best = 1 << 30;
            pm_target(env, i, &tx, &ty);
            for (int k = 0; k < n; k++) {
                int dx = pm_wrap_x(g->x + PM_DX[options[k]]) - tx, dy = g->y + PM_DY[options[k]] - ty;
                if (dx * dx + dy * dy < best) best = dx * dx + dy * dy, choice = options[k];
            }
        }
    }
    g->dir = choice;
    g->x = pm_wrap_x(g->x + PM_DX[choice]);
    g->y += PM_DY[choice];
    if (g->state == PM_EYES && g->x == PM_EXIT_X && g->y == PM_EXIT_Y) g->state = PM_HUNT;
}

/* A ghost meets Pac-Man: eaten when frightened, else a life lost. Returns 1 when Pac-Man died. */
static int pm_meet(Pacman *env, PacmanGhost *g) {
    if (g->state == PM_FRIGHT) {
        g->state = PM_EYES;
        g->moves = 0.0f;
        env->reward += env->cfg.ghost_reward;
        env->score += 200 << (env->combo < 3 ? env->combo : 3);
        env->combo++;
        return 0;
    }
    if (g->state != PM_HUNT) return 0;
    env->reward -= env->cfg.death_penalty;
    env->lives--;
    return 1;
}

/* The scripted Pac-Man: head for the nearest pellet unless a hunting ghost is within 3 tiles of the
 * tile that leads there; then take the open direction whose next tile is farthest from every such
 * ghost. It plans nothing and ignores the power pellets' chance to hunt. */
static int pm_scripted_action(const Pacman *env) {
    int best_d = env->nearest < 0 ? env->dir : env->nearest, best_score = -1;
    for (int k = 0; k < 5; k++) {
        int d = k == 0 ? best_d : k - 1;
        int n = pm_next(env, env->x, env->y, d);
        if (n < 0) continue;
        int nx = n % PM_W, ny = n / PM_W, closest = 1 << 30;
        for (int i = 0; i < PM_GHOSTS; i++) {
            const PacmanGhost *g = &env->ghost[i];
            if (g->state != PM_HUNT) continue;
            int dist = (g->x > nx ? g->x - nx : nx - g->x) + (g->y > ny ? g->y - ny : ny - g->y);
            if (dist < closest) closest = dist;
        }
        if (k == 0 && closest > 3) return d;
        if (closest > best_score) best_score = closest, best_d = d;
    }
    return best_d;
}

static void c_step(Pacman *env) {
    int a = env->cfg.autopilot ? pm_scripted_action(env) : ocean_clamp(env->actions[0], PM_ACTIONS);
    env->reward = 0.0f;
    env->tick++;
    int old_x = env->x, old_y = env->y, died = 0;

    int n = pm_next(env, env->x, env->y, a);
    if (n >= 0) env->dir = a;
    else n = pm_next(env, env->x, env->y, env->dir);
    if (n >= 0) {
        env->x = n % PM_W;
        env->y = n / PM_W;
        unsigned char *c = &env->cell[n];
        if (*c & (PM_DOT | PM_POWER)) {
            int power = *c & PM_POWER;
            *c &= (unsigned char)~(PM_DOT | PM_POWER);
            int index = env->pellets_before_row[env->y];
            for (int x = 0; x < env->x; x++) index += PM_MAZE[env->y][x] == '.' || PM_MAZE[env->y][x] == 'o';
            env->observations[PM_PELLET_OBS + index] = 0.0f;
            env->pellets_left--;
            env->round_pellets++;
            env->idle = 0;
            env->reward += power ? 0.5f : 0.1f;
            env->score += power ? 50 : 10;
            if (power && env->cfg.frightened_steps > 0) {
                env->fright_left = env->cfg.frightened_steps;
                env->combo = 0;
                for (int i = 0; i < PM_GHOSTS; i++)
                    if (env->ghost[i].state == PM_HUNT || env->ghost[i].state == PM_FRIGHT) {
                        env->ghost[i].state = PM_FRIGHT;
                        env->ghost[i].reverse = 1;
                    }
            }
        } else env->idle++;
    }
    for (int i = 0; i < PM_GHOSTS && !died; i++)
        if (env->ghost[i].x == env->x && env->ghost[i].y == env->y) died = pm_meet(env, &env->ghost[i]);

    /* the phase clock stands still while the ghosts are frightened, as in the arcade */
    if (env->fright_left > 0) {
        if (--env->fright_left == 0)
            for (int i = 0; i < PM_GHOSTS; i++)
                if (env->ghost[i].state == PM_FRIGHT) env->ghost[i].state = PM_HUNT;
    } else if (env->phase_left > 0 && --env->phase_left == 0) {
        env->phase++;
        env->phase_left = PM_SCHEDULE[env->phase];
        for (int i = 0; i < PM_GHOSTS; i++)
            if (env->ghost[i].state == PM_HUNT) env->ghost[i].reverse = 1;
    }
    int released = 0;
    for (int i = 0; i < PM_GHOSTS; i++) {
        PacmanGhost *g = &env->ghost[i];
        if (g->state != PM_HOUSE || released) continue;
        if (env->round_pellets >= PM_RELEASE[i] || env->idle >= PM_IDLE_RELEASE) {
            *g = (PacmanGhost){PM_EXIT_X, PM_EXIT_Y, PM_LEFT, PM_HUNT, 0, 0.0f};
            env->idle = 0;
            released = 1; /* one a step */
        }
    }
    for (int i = 0; i < PM_GHOSTS && !died; i++) {
        PacmanGhost *g = &env->ghost[i];
        if (g->state == PM_HOUSE) continue;
        g->moves += g->state == PM_EYES     ? 2.0f
                    : g->state == PM_FRIGHT ? 0.5f * env->cfg.ghost_speed
                                            : env->cfg.ghost_speed;
        while (g->moves >= 1.0f && !died) {
            g->moves -= 1.0f;
            int gx = g->x, gy = g->y;
            pm_ghost_move(env, i);
            int crossed = gx == env->x && gy == env->y && g->x == old_x && g->y == old_y;
            if ((g->x == env->x && g->y == env->y) || crossed) died = pm_meet(env, g);
        }
    }

    int cleared = env->pellets_left == 0, over = cleared || env->lives <= 0;
    int timeout = !over && env->tick >= env->cfg.max_steps;
    env->rewards[0] = env->reward;
    env->ret += env->reward;
    env->terminals[0] = (unsigned char)over;
    env->truncations[0] = (unsigned char)timeout;
    if (over || timeout) {
        ocean_log_episode(&env->log, env->ret, (float)env->tick, (float)env->score, (float)cleared);
        pm_new_game(env);
        return;
    }
    if (died) pm_new_round(env);
    pm_write_obs(env);
}

/* ---- rendering: 8 px per tile ---- */
#define PM_TILE 8

static void c_frame_shape(Pacman *env, int *h, int *w) {
    (void)env;
    *h = PM_H * PM_TILE;
    *w = PM_W * PM_TILE;
}

static void c_render_rgb(Pacman *env, unsigned char *frame) {
    static const unsigned char black[3] = {0, 0, 0}, wall[3] = {33, 33, 222}, door[3] = {255, 184, 222};
    static const unsigned char dot[3] = {255, 184, 151}, pac[3] = {255, 255, 0}, blue[3] = {33, 33, 255};
    static const unsigned char eyes[3] = {255, 255, 255};
    static const unsigned char ghost[PM_GHOSTS][3] = {{255, 0, 0}, {255, 184, 255}, {0, 255, 255}, {255, 184, 82}};
    const int fh = PM_H * PM_TILE, fw = PM_W * PM_TILE;
    ocean_fill_rect(frame, fh, fw, 0, 0, fw, fh, black);
    for (int y = 0; y < PM_H; y++)
        for (int x = 0; x < PM_W; x++) {
            int c = env->cell[pm_at(x, y)], px = x * PM_TILE, py = y * PM_TILE;
            if (c & PM_WALL) ocean_fill_rect(frame, fh, fw, px, py, PM_TILE, PM_TILE, wall);
            if (c & PM_DOOR) ocean_fill_rect(frame, fh, fw, px, py + 3, PM_TILE, 2, door);
            if (c & PM_DOT) ocean_fill_rect(frame, fh, fw, px + 3, py + 3, 2, 2, dot);
            if (c & PM_POWER) ocean_fill_rect(frame, fh, fw, px + 1, py + 1, 6, 6, dot);
        }
    for (int i = 0; i < PM_GHOSTS; i++) {
        const PacmanGhost *g = &env->ghost[i];
        const unsigned char *rgb = g->state == PM_FRIGHT ? blue : g->state == PM_EYES ? eyes : ghost[i];
        int size = g->state == PM_EYES ? 4 : 8;
        ocean_fill_rect(frame, fh, fw, g->x * PM_TILE + (8 - size) / 2, g->y * PM_TILE + (8 - size) / 2, size, size,
                        rgb);
    }
    ocean_fill_rect(frame, fh, fw, env->x * PM_TILE + 1, env->y * PM_TILE + 1, 6, 6, pac);
}

static int c_render_text(Pacman *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    ocean_puts(&t, "score ");
    ocean_puti(&t, env->score);
    ocean_puts(&t, "  lives ");
    ocean_puti(&t, env->lives);
    ocean_puts(&t, "  pellets ");
    ocean_puti(&t, env->pellets_left);
    ocean_puts(&t, env->fright_left ? "  FRIGHTENED\n" : "\n");
    for (int y = 0; y < PM_H; y++) {
        char line[PM_W + 1];
        for (int x = 0; x < PM_W; x++) {
            int c = env->cell[pm_at(x, y)];
            line[x] = c & PM_WALL ? '#' : c & PM_DOOR ? '-' : c & PM_POWER ? 'o' : c & PM_DOT ? '.' : ' ';
        }
        for (int i = 0; i < PM_GHOSTS; i++) {
            const PacmanGhost *g = &env->ghost[i];
            line[g->x] = g->y == y ? (g->state == PM_FRIGHT ? 'f' : g->state == PM_EYES ? '"' : "BPIC"[i]) : line[g->x];
        }
        if (env->y == y) line[env->x] = 'C';
        line[PM_W] = 0;
        ocean_puts(&t, line);
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Pacman *env) { (void)env; }
