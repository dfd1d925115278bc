/* Breakout: clear a wall of bricks with a ball, bouncing it off a paddle at the bottom. Each brick
 * pays 1; losing the ball costs a life; the episode ends with no lives left or no bricks left.
 * The ball's speed per frame stays below a brick's height so it cannot tunnel through a row, and
 * the ball serves itself (no fire action). One step runs `frameskip` frames with the same action. */
#include "ocean.h"
#include "spec.h"

/* BO_ROWS, BO_COLS and BO_BRICK_W come from spec.toml (they bound paddle_width and size the obs) */
#define BO_BRICK_H 5.0f
#define BO_TOP 24.0f
#define BO_W (BO_COLS * BO_BRICK_W)
#define BO_H 160.0f
#define BO_PADDLE_Y (BO_H - 8.0f)
#define BO_PADDLE_H 3.0f
#define BO_BALL 2.0f
#define BO_MAX_V 3.0f
#define BO_BRICKS (BO_ROWS * BO_COLS)

enum { BO_STAY, BO_LEFT, BO_RIGHT, BO_ACTIONS };

typedef struct Breakout {
    OCEAN_SLOTS(float);
    BreakoutConfig cfg;  /* options (spec.toml) */
    float paddle_x, ball_x, ball_y, ball_vx, ball_vy;
    int lives, bricks_left, tick, score;
    float episode_return;
    unsigned char bricks[BO_BRICKS];
} Breakout;

static int c_init(Breakout *env) {
    (void)env;
    return 0;
}

static inline float bo_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

static void breakout_write_dynamic_obs(Breakout *env) {
    float *o = env->observations;
    o[0] = env->paddle_x / (BO_W - env->cfg.paddle_width);
    o[1] = bo_clampf(env->ball_x / (BO_W - BO_BALL), 0, 1);
    o[2] = bo_clampf(env->ball_y / (BO_H - BO_BALL), 0, 1);
    o[3] = env->ball_vx / BO_MAX_V;
    o[4] = env->ball_vy / BO_MAX_V;
    o[5] = (float)env->lives / env->cfg.lives;
}

static void breakout_serve(Breakout *env) {
    env->ball_x = 0.25f * BO_W + 0.5f * BO_W * ocean_randf(&env->rng);
    env->ball_y = BO_TOP + BO_ROWS * BO_BRICK_H + 20.0f;
    env->ball_vx = (ocean_rand(&env->rng) & 1) ? 1.5f : -1.5f;
    env->ball_vy = 2.0f;
}

static void breakout_new_episode(Breakout *env) {
    memset(env->bricks, 1, sizeof(env->bricks));
    env->bricks_left = BO_BRICKS;
    env->lives = env->cfg.lives;
    env->paddle_x = 0.5f * (BO_W - env->cfg.paddle_width);
    env->tick = env->score = 0;
    env->episode_return = 0;
    breakout_serve(env);
    /* bricks are written here and then only where one breaks: a step touches 6 floats, not 114 */
    for (int i = 0; i < BO_BRICKS; i++) env->observations[6 + i] = 1.0f;
    breakout_write_dynamic_obs(env);
}

static void c_reset(Breakout *env) { breakout_new_episode(env); }

/* Returns the reward of one frame. */
static float breakout_frame(Breakout *env, float move) {
    env->paddle_x = bo_clampf(env->paddle_x + move, 0, BO_W - env->cfg.paddle_width);
    float py = env->ball_y + 0.5f * BO_BALL;  /* centre height before the move */
    env->ball_x += env->ball_vx;
    env->ball_y += env->ball_vy;
    if (env->ball_x < 0) {
        env->ball_x = -env->ball_x;
        env->ball_vx = -env->ball_vx;
    }
    if (env->ball_x > BO_W - BO_BALL) {
        env->ball_x = 2 * (BO_W - BO_BALL) - env->ball_x;
        env->ball_vx = -env->ball_vx;
    }
    if (env->ball_y < 0) {
        env->ball_y = -env->ball_y;
        env->ball_vy = -env->ball_vy;
    }

    float reward = 0;
    float cx = env->ball_x + 0.5f * BO_BALL, cy = env->ball_y + 0.5f * BO_BALL;
    if (cy >= BO_TOP && cy < BO_TOP + BO_ROWS * BO_BRICK_H) {
        int row = (int)((cy - BO_TOP) / BO_BRICK_H), col = (int)(cx / BO_BRICK_W);
        col = col < 0 ? 0 : (col >= BO_COLS ? BO_COLS - 1 : col);
        int i = row * BO_COLS + col;
        if (env->bricks[i]) {
            env->bricks[i] = 0;
            env->observations[6 + i] = 0.0f;
            env->bricks_left--;
            env->score++;
            reward = 1.0f;
            /* entered through a horizontal face if the row changed, else through a side */
            int prev_row = py < BO_TOP ? -1 : (int)((py - BO_TOP) / BO_BRICK_H);
            if (prev_row != row) {
                env->ball_vy = -env->ball_vy;
                env->ball_y += env->ball_vy;
            } else {
                env->ball_vx = -env->ball_vx;
                env->ball_x += env->ball_vx;
            }
        }
    }
    if (env->ball_vy > 0 && env->ball_y + BO_BALL >= BO_PADDLE_Y && py + 0.5f * BO_BALL < BO_PADDLE_Y &&
        cx >= env->paddle_x - 1 && cx <= env->paddle_x + env->cfg.paddle_width + 1) {
        float offset = (cx - env->paddle_x - 0.5f * env->cfg.paddle_width) / (0.5f * env->cfg.paddle_width);
        env->ball_vx = bo_clampf(2.5f * offset, -2.5f, 2.5f);
        env->ball_vy = -env->ball_vy;
        env->ball_y = BO_PADDLE_Y - BO_BALL;
    } else if (env->ball_y > BO_H) {
        env->lives--;
        if (env->lives > 0) breakout_serve(env);
    }
    return reward;
}

static void c_step(Breakout *env) {
    int a = ocean_clamp(env->actions[0], BO_ACTIONS);
    float move = a == BO_LEFT ? -env->cfg.paddle_speed : (a == BO_RIGHT ? env->cfg.paddle_speed : 0.0f);
    float reward = 0;
    for (int f = 0; f < env->cfg.frameskip && env->lives > 0 && env->bricks_left > 0; f++)
        reward += breakout_frame(env, move);
    env->tick++;
    env->episode_return += reward;
    env->rewards[0] = reward;
    int done = env->lives <= 0 || env->bricks_left == 0;
    int timeout = !done && env->tick >= env->cfg.max_steps;
    env->terminals[0] = (unsigned char)done;
    env->truncations[0] = (unsigned char)timeout;
    if (done || timeout) {
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)env->score,
                          (float)env->score / BO_BRICKS);
        breakout_new_episode(env);
    } else {
        breakout_write_dynamic_obs(env);
    }
}

static void c_frame_shape(Breakout *env, int *h, int *w) {
    *h = (int)BO_H;
    *w = (int)BO_W;
}

static void c_render_rgb(Breakout *env, unsigned char *frame) {
    static const unsigned char rows[BO_ROWS][3] = {{200, 72, 72},  {198, 108, 58}, {180, 122, 48},
                                                   {162, 162, 42}, {72, 160, 72},  {66, 72, 200}};
    static const unsigned char paddle[3] = {200, 72, 72}, ball[3] = {236, 236, 236};
    int h = (int)BO_H, w = (int)BO_W;
    for (int r = 0; r < BO_ROWS; r++)
        for (int c = 0; c < BO_COLS; c++)
            if (env->bricks[r * BO_COLS + c])
                ocean_fill_rect(frame, h, w, (int)(c * BO_BRICK_W), (int)(BO_TOP + r * BO_BRICK_H), (int)BO_BRICK_W - 1,
                                (int)BO_BRICK_H - 1, rows[r]);
    ocean_fill_rect(frame, h, w, (int)env->paddle_x, (int)BO_PADDLE_Y, (int)env->cfg.paddle_width, (int)BO_PADDLE_H,
                    paddle);
    ocean_fill_rect(frame, h, w, (int)env->ball_x, (int)env->ball_y, (int)BO_BALL, (int)BO_BALL, ball);
}

static int c_render_text(Breakout *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { COLS = BO_COLS * 2, ROWS = 32 };
    float sx = COLS / BO_W, sy = ROWS / BO_H;
    ocean_puts(&t, "score ");
    ocean_puti(&t, env->score);
    ocean_puts(&t, "  lives ");
    ocean_puti(&t, env->lives);
    ocean_putc(&t, '\n');
    int bx = (int)(env->ball_x * sx), by = (int)(env->ball_y * sy), pr = (int)(BO_PADDLE_Y * sy);
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++) {
            float x = (c + 0.5f) / sx, y = (r + 0.5f) / sy;
            char ch = ' ';
            if (r == by && c == bx) ch = 'o';
            else if (r == pr && x >= env->paddle_x && x <= env->paddle_x + env->cfg.paddle_width) ch = '=';
            else if (y >= BO_TOP && y < BO_TOP + BO_ROWS * BO_BRICK_H) {
                int i = (int)((y - BO_TOP) / BO_BRICK_H) * BO_COLS + (int)(x / BO_BRICK_W);
                if (env->bricks[i]) ch = '#';
            }
            ocean_putc(&t, ch);
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Breakout *env) {}
