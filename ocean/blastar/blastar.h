/* Blastar: an Atari-style shooter. The player's ship flies in the lower part of a 160 x 192 screen;
 * a wave of `wave_size` enemy ships crosses the upper part in rows, each row wrapping around the
 * screen edge, alternate rows in opposite directions. An enemy right above the ship may drop a bomb
 * (chance `bomb_rate` per step, at most `bombs` falling). The ship has one shot in flight at a
 * time. Shooting down every enemy of a wave brings the next, 10% faster; clearing `max_waves` waves
 * wins (terminal), losing the last of `lives` ships loses (terminal), `max_steps` truncates. A bomb
 * that hits costs a ship; the ship comes back at the bottom centre and the falling bombs vanish.
 *
 * Actions: 0 nothing, 1 left, 2 right, 3 up, 4 down, 5 fire. Reward: +1 per enemy shot down,
 * -death_penalty per ship lost. Log: score = enemies shot down, perf = waves cleared / max_waves.
 * One step is one frame of the game. */
#include "ocean.h"
#include "spec.h" /* generated from spec.toml: BlastarConfig, BL_MAX_ENEMIES, BL_MAX_BOMBS */

#define BL_W 160.0f
#define BL_H 192.0f
#define BL_SHIP_HALF 4.0f   /* the ship is 8 x 8 */
#define BL_SHIP_SPEED 3.0f
#define BL_SHIP_TOP 120.0f  /* the ship's centre stays in [BL_SHIP_TOP, BL_SHIP_BOTTOM] */
#define BL_SHIP_BOTTOM 184.0f
#define BL_ENEMY_HALF_W 4.0f /* enemies are 8 x 6 */
#define BL_ENEMY_HALF_H 3.0f
#define BL_ENEMY_TOP 24.0f  /* row i of a wave flies at this height + i * BL_ROW_GAP */
#define BL_ROW_GAP 13.0f
#define BL_SHOT_SPEED 6.0f
#define BL_BOMB_SPEED 2.5f
#define BL_AIM 6.0f         /* an enemy this close to the ship's column may bomb it */
#define BL_ACTIONS 6

enum { BL_NOOP, BL_LEFT, BL_RIGHT, BL_UP, BL_DOWN, BL_FIRE };

typedef struct BlastarThing { /* an enemy, a bomb or the shot */
    float x, y, vx;
    int live;
} BlastarThing;

typedef struct Blastar {
    OCEAN_SLOTS(float);
    BlastarConfig cfg;
    float inv_lives, inv_max_waves;
    float x, y; /* the ship's centre */
    BlastarThing shot;
    BlastarThing enemy[BL_MAX_ENEMIES];
    BlastarThing bomb[BL_MAX_BOMBS];
    int lives, wave, alive, kills, tick;
    float episode_return;
} Blastar;

static int c_init(Blastar *env) {
    env->inv_lives = 1.0f / (float)env->cfg.lives;
    env->inv_max_waves = 1.0f / (float)env->cfg.max_waves;
    return 0; /* fixed-size state: nothing to allocate */
}

static inline float bl_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Where enemy `e` will be when a shot fired now reaches its row, as an x offset from the ship: the
 * scripted ship aims there, and the observation shows it. */
static inline float bl_aim_dx(const Blastar *env, const BlastarThing *e) {
    float lead = e->vx * (env->y - e->y) / BL_SHOT_SPEED;
    return e->x + lead - env->x;
}

static void bl_new_wave(Blastar *env) {
    float speed = env->cfg.enemy_speed * (1.0f + 0.1f * (float)env->wave);
    for (int i = 0; i < BL_MAX_ENEMIES; i++) {
        BlastarThing *e = &env->enemy[i];
        e->live = i < env->cfg.wave_size;
        e->x = ocean_randf(&env->rng) * BL_W;
        e->y = BL_ENEMY_TOP + BL_ROW_GAP * (float)i;
        e->vx = i % 2 ? -speed : speed;
    }
    env->alive = env->cfg.wave_size;
}

/* The shot and the bombs are cleared whole, not just marked dead: a dead slot is observed as its
 * coordinates times 0, whose sign bit follows the stale coordinates, so leftovers from the last life
 * would make a replay after reset(seed) differ in the bytes of its -0.0 / +0.0. */
static void bl_new_ship(Blastar *env) {
    env->x = BL_W / 2;
    env->y = BL_SHIP_BOTTOM - 8.0f;
    env->shot = (BlastarThing){0};
    for (int i = 0; i < BL_MAX_BOMBS; i++) env->bomb[i] = (BlastarThing){0};
}

/* Branch-free: a slot that is not live multiplies to 0 (its coordinates stay finite). Only the wave's
 * `wave_size` enemies and `bombs` bomb slots are observed, so the row is as long as the game is big. */
static void bl_write_obs(Blastar *env) {
    float *o = env->observations;
    const float iw = 1.0f / BL_W, ih = 1.0f / BL_H, x = env->x;
    o[0] = x * iw;
    o[1] = env->y * ih;
    o[2] = (float)env->lives * env->inv_lives;
    const BlastarThing *s = &env->shot;
    float live = (float)s->live;
    o[3] = (s->x - x) * iw * live;
    o[4] = s->y * ih * live;
    o[5] = live;
    float *e = o + 6;
    const float inv_shot = 1.0f / BL_SHOT_SPEED;
    for (int i = 0; i < env->cfg.wave_size; i++, e += 5) {
        const BlastarThing *t = &env->enemy[i];
        live = (float)t->live;
        /* Positions alone hide the velocity, which grows 10% a wave: a feed-forward policy cannot lead its
         * aim without it, and learned to about two thirds of the scripted ship's kills. */
        e[0] = (t->x - x) * iw * live; /* in [-1, 1]: enemies wrap within 4 px of the edges, the ship 4 px inside */
        e[1] = t->y * ih * live;
        e[2] = bl_clampf(t->vx * inv_shot, -1.0f, 1.0f) * live;
        e[3] = bl_clampf(bl_aim_dx(env, t) * iw, -1.0f, 1.0f) * live;
        e[4] = live;
    }
    for (int i = 0; i < env->cfg.bombs; i++, e += 3) {
        const BlastarThing *t = &env->bomb[i];
        live = (float)t->live;
        e[0] = (t->x - x) * iw * live;
        e[1] = (env->y - t->y) * ih * live;
        e[2] = live;
    }
}

static void bl_new_game(Blastar *env) {
    env->lives = env->cfg.lives;
    env->wave = 0;
    env->kills = 0;
    env->tick = 0;
    env->episode_return = 0.0f;
    bl_new_ship(env);
    bl_new_wave(env);
    bl_write_obs(env);
}

static void c_reset(Blastar *env) { bl_new_game(env); }

/* The scripted ship: fire when a shot would meet an enemy (it leads its aim), else fly to where one
 * would. It never dodges a bomb: that is what a learner can do better. */
static int bl_scripted_action(const Blastar *env) {
    float best = 1e9f, dx_best = 0.0f;
    for (int i = 0; i < BL_MAX_ENEMIES; i++) {
        if (!env->enemy[i].live) continue;
        const BlastarThing *e = &env->enemy[i];
        float dx = bl_aim_dx(env, e), d = dx < 0 ? -dx : dx;
        if (d < best) best = d, dx_best = dx;
    }
    if (best < BL_ENEMY_HALF_W && !env->shot.live) return BL_FIRE;
    if (best < BL_SHIP_SPEED) return BL_NOOP;
    return dx_best < 0 ? BL_LEFT : BL_RIGHT;
}

/* The step is written for the branch predictor: with random or learned actions, which enemy is alive,
 * where the shot is and which bombs fall change every step, and a mispredicted branch costs more than
 * the arithmetic it skips. So every slot of the wave and every bomb slot is moved (a dead one stays
 * where the wrap keeps it finite, and the observation multiplies it by 0), the tests are combined with
 * `&` into one flag, and the only branches left are the rare events: a hit, a bomb dropped, a ship lost. */
static void c_step(Blastar *env) {
    static const float move_x[BL_ACTIONS] = {0, -BL_SHIP_SPEED, BL_SHIP_SPEED, 0, 0, 0};
    static const float move_y[BL_ACTIONS] = {0, 0, 0, -BL_SHIP_SPEED, BL_SHIP_SPEED, 0};
    int a = env->cfg.autopilot ? bl_scripted_action(env) : ocean_clamp(env->actions[0], BL_ACTIONS);
    float reward = 0.0f;
    int over = 0;
    env->tick++;

    env->x = bl_clampf(env->x + move_x[a], BL_SHIP_HALF, BL_W - BL_SHIP_HALF);
    env->y = bl_clampf(env->y + move_y[a], BL_SHIP_TOP, BL_SHIP_BOTTOM);
    BlastarThing *s = &env->shot;
    int fire = (a == BL_FIRE) & !s->live, flying = s->live | fire;
    s->x = fire ? env->x : s->x;
    s->y = (fire ? env->y - BL_SHIP_HALF : s->y) - BL_SHOT_SPEED * (float)flying;
    s->live = flying & (s->y > 0.0f);

    const float span = BL_W + 2 * BL_ENEMY_HALF_W;
    for (int i = 0; i < env->cfg.wave_size; i++) {
        BlastarThing *e = &env->enemy[i];
        float ex = e->x + e->vx;
        ex -= span * (float)(ex >= BL_W + BL_ENEMY_HALF_W);
        ex += span * (float)(ex < -BL_ENEMY_HALF_W);
        e->x = ex;
        /* the shot moves 6 px a step, so it is tested over the whole stretch it covered */
        int hit = e->live & s->live & (s->x - ex < BL_ENEMY_HALF_W + 0.5f) & (ex - s->x < BL_ENEMY_HALF_W + 0.5f) &
                  (s->y < e->y + BL_ENEMY_HALF_H) & (s->y + BL_SHOT_SPEED > e->y - BL_ENEMY_HALF_H);
        if (hit) {
            s->live = 0;
            e->live = 0;
            env->alive--;
            env->kills++;
            reward += 1.0f;
        }
        float dx = ex - env->x;
        if (e->live & (dx < BL_AIM) & (dx > -BL_AIM) && ocean_randf(&env->rng) < env->cfg.bomb_rate)
            for (int b = 0; b < env->cfg.bombs; b++)
                if (!env->bomb[b].live) {
                    env->bomb[b] = (BlastarThing){ex, e->y + BL_ENEMY_HALF_H, 0.0f, 1};
                    break;
                }
    }
    for (int b = 0; b < env->cfg.bombs; b++) {
        BlastarThing *m = &env->bomb[b];
        m->y += BL_BOMB_SPEED * (float)m->live;
        m->live &= m->y <= BL_H;
        int hit = m->live & (m->x - env->x < BL_SHIP_HALF + 1.0f) & (env->x - m->x < BL_SHIP_HALF + 1.0f) &
                  (m->y - env->y < BL_SHIP_HALF + 2.0f) & (env->y - m->y < BL_SHIP_HALF + 2.0f);
        if (hit) {
            reward -= env->cfg.death_penalty;
            env->lives--;
            bl_new_ship(env);
            over = env->lives <= 0;
            break;
        }
    }
    if (!over && env->alive == 0) {
        env->wave++;
        if (env->wave >= env->cfg.max_waves) over = 1;
        else bl_new_wave(env);
    }
    env->rewards[0] = reward;
    env->episode_return += reward;
    int timeout = !over && env->tick >= env->cfg.max_steps;
    env->terminals[0] = (unsigned char)over;
    env->truncations[0] = (unsigned char)timeout;
    if (over || timeout) {
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)env->kills,
                          (float)env->wave * env->inv_max_waves);
        bl_new_game(env);
        return;
    }
    bl_write_obs(env);
}

/* ---- rendering: the 160 x 192 screen, one pixel per unit ---- */
#define BL_FRAME_H 192
#define BL_FRAME_W 160

static void c_frame_shape(Blastar *env, int *h, int *w) {
    (void)env;
    *h = BL_FRAME_H;
    *w = BL_FRAME_W;
}

static void bl_box(unsigned char *frame, float x, float y, float hw, float hh, const unsigned char rgb[3]) {
    ocean_fill_rect(frame, BL_FRAME_H, BL_FRAME_W, (int)(x - hw), (int)(y - hh), (int)(2 * hw), (int)(2 * hh), rgb);
}

static void c_render_rgb(Blastar *env, unsigned char *frame) {
    static const unsigned char space[3] = {6, 24, 24}, ship[3] = {0, 190, 190}, enemy[3] = {200, 40, 40};
    static const unsigned char shot[3] = {240, 240, 240}, bomb[3] = {250, 160, 40}, life[3] = {0, 120, 120};
    ocean_fill_rect(frame, BL_FRAME_H, BL_FRAME_W, 0, 0, BL_FRAME_W, BL_FRAME_H, space);
    for (int i = 0; i < env->lives; i++) ocean_fill_rect(frame, BL_FRAME_H, BL_FRAME_W, 4 + 6 * i, 4, 4, 4, life);
    for (int i = 0; i < BL_MAX_ENEMIES; i++)
        if (env->enemy[i].live)
            bl_box(frame, env->enemy[i].x, env->enemy[i].y, BL_ENEMY_HALF_W, BL_ENEMY_HALF_H, enemy);
    for (int i = 0; i < BL_MAX_BOMBS; i++)
        if (env->bomb[i].live) bl_box(frame, env->bomb[i].x, env->bomb[i].y, 1.0f, 2.0f, bomb);
    if (env->shot.live) bl_box(frame, env->shot.x, env->shot.y, 0.5f, 2.0f, shot);
    bl_box(frame, env->x, env->y, BL_SHIP_HALF, BL_SHIP_HALF, ship);
}

/* 24 text rows of 8 px, 40 columns of 4 px: E enemy, A the ship, | its shot, * a bomb. */
static int c_render_text(Blastar *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { ROWS = 24, COLS = 40 };
    char grid[ROWS][COLS];
    memset(grid, ' ', sizeof(grid));
#define BL_PUT(px, py, ch)                                                     \
    do {                                                                       \
        int c_ = (int)((px) / 4.0f), r_ = (int)((py) / 8.0f);                  \
        if (c_ >= 0 && c_ < COLS && r_ >= 0 && r_ < ROWS) grid[r_][c_] = (ch); \
    } while (0)
    for (int i = 0; i < BL_MAX_ENEMIES; i++)
        if (env->enemy[i].live) BL_PUT(env->enemy[i].x, env->enemy[i].y, 'E');
    for (int i = 0; i < BL_MAX_BOMBS; i++)
        if (env->bomb[i].live) BL_PUT(env->bomb[i].x, env->bomb[i].y, '*');
    if (env->shot.live) BL_PUT(env->shot.x, env->shot.y, '|');
    BL_PUT(env->x, env->y, 'A');
#undef BL_PUT
    ocean_puts(&t, "wave ");
    ocean_puti(&t, env->wave + 1);
    ocean_puts(&t, "  score ");
    ocean_puti(&t, env->kills);
    ocean_puts(&t, "  lives ");
    ocean_puti(&t, env->lives);
    ocean_putc(&t, '\n');
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++) ocean_putc(&t, grid[r][c]);
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Blastar *env) { (void)env; }
