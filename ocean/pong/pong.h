/* Pong: the agent's paddle on the right against a scripted paddle on the left. The opponent tracks
 * the ball at a capped speed, so angled returns (the ball leaves the paddle at an angle set by where
 * it hit) beat it. +1 when the opponent misses, -1 when the agent misses; the game ends at max_score.
 * One step runs `frameskip` physics frames with the same action, like Atari frame skipping.
 *
 * two_player=1: two rows, both live on every step (the two paddles move at once): row 0 is the right
 * paddle, row 1 the left one, both at paddle_speed. Row 1 sees the court mirrored left to right, so
 * every row sees itself on the right (its own paddle first, the ball's x and vx mirrored, its own
 * score first) and one policy plays either side. Each point pays +1 / -1 to the two rows, and the
 * step that ends the game sets terminals on both (the zero-sum convention of ocean/seats.h). */
#include "ocean.h"
#include "spec.h"

#define PONG_W 160.0f
/* PONG_H (128.0f) comes from spec.toml: it bounds paddle_height */
#define PONG_PADDLE_W 3.0f
#define PONG_BALL 2.0f
#define PONG_MAX_VX 4.0f
#define PONG_MAX_VY 3.0f

enum { PONG_STAY, PONG_UP, PONG_DOWN, PONG_ACTIONS };

typedef struct Pong {
    OCEAN_SLOTS(float);
    PongConfig cfg;  /* options (spec.toml) */
    float agent_y, opp_y;                            /* paddle tops */
    float ball_x, ball_y, ball_vx, ball_vy;          /* ball top-left, per-frame velocity */
    int agent_score, opp_score, tick;
    float episode_return;
} Pong;

static int c_init(Pong *env) {
    (void)env;
    return 0;
}

static inline float pong_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Every value normalised to [0, 1] or [-1, 1] (see the Python Box). Row 1 (two_player) is the mirror
 * image: the left paddle sees itself on the right. */
static void pong_write_obs(Pong *env) {
    float *o = env->observations;
    float top = PONG_H - env->cfg.paddle_height;
    o[0] = env->agent_y / top;
    o[1] = env->opp_y / top;
    o[2] = env->ball_x / (PONG_W - PONG_BALL);
    o[3] = env->ball_y / (PONG_H - PONG_BALL);
    o[4] = env->ball_vx / PONG_MAX_VX;
    o[5] = env->ball_vy / PONG_MAX_VY;
    o[6] = (float)env->agent_score / env->cfg.max_score;
    o[7] = (float)env->opp_score / env->cfg.max_score;
    if (env->num_agents == 2) {
        float *m = o + env->obs_size;
        m[0] = o[1];
        m[1] = o[0];
        m[2] = 1.0f - o[2];
        m[3] = o[3];
        m[4] = -o[4];
        m[5] = o[5];
        m[6] = o[7];
        m[7] = o[6];
    }
}

static void pong_serve(Pong *env) {
    env->ball_x = 0.5f * (PONG_W - PONG_BALL);
    env->ball_y = 0.25f * PONG_H + 0.5f * PONG_H * ocean_randf(&env->rng);
    env->ball_vx = (ocean_rand(&env->rng) & 1) ? 2.0f : -2.0f;
    env->ball_vy = 2.0f * ocean_randf(&env->rng) - 1.0f;
}

static void pong_new_episode(Pong *env) {
    env->agent_y = env->opp_y = 0.5f * (PONG_H - env->cfg.paddle_height);
    env->agent_score = env->opp_score = 0;
    env->tick = 0;
    env->episode_return = 0;
    pong_serve(env);
    pong_write_obs(env);
}

static void c_reset(Pong *env) { pong_new_episode(env); }

/* Bounce off a paddle whose top is at y: the return angle grows with the distance from its centre. */
static void pong_bounce(Pong *env, float paddle_y, float direction) {
    float offset =
        (env->ball_y + 0.5f * PONG_BALL - paddle_y - 0.5f * env->cfg.paddle_height) / (0.5f * env->cfg.paddle_height);
    float speed = env->ball_vx < 0 ? -env->ball_vx : env->ball_vx;
    speed = speed * 1.05f > PONG_MAX_VX ? PONG_MAX_VX : speed * 1.05f;
    env->ball_vx = direction * speed;
    env->ball_vy = pong_clampf(offset * PONG_MAX_VY, -PONG_MAX_VY, PONG_MAX_VY);
}

static inline float pong_move(const Pong *env, int32_t action) {
    int a = ocean_clamp(action, PONG_ACTIONS);
    return a == PONG_UP ? -env->cfg.paddle_speed : (a == PONG_DOWN ? env->cfg.paddle_speed : 0.0f);
}

static void c_step(Pong *env) {
    float move = pong_move(env, env->actions[0]);
    float opp_move = env->cfg.two_player ? pong_move(env, env->actions[1]) : 0.0f;
    float top = PONG_H - env->cfg.paddle_height;
    float reward = 0;
    for (int f = 0; f < env->cfg.frameskip && reward == 0; f++) {
        env->agent_y = pong_clampf(env->agent_y + move, 0, top);
        if (env->cfg.two_player) {
            env->opp_y = pong_clampf(env->opp_y + opp_move, 0, top);
        } else {
            /* the opponent chases the ball only while it approaches, else drifts back to the middle */
            float target =
                env->ball_vx < 0 ? env->ball_y + 0.5f * PONG_BALL - 0.5f * env->cfg.paddle_height : 0.5f * top;
            float d = pong_clampf(target - env->opp_y, -env->cfg.opponent_speed, env->cfg.opponent_speed);
            env->opp_y = pong_clampf(env->opp_y + d, 0, top);
        }

        env->ball_x += env->ball_vx;
        env->ball_y += env->ball_vy;
        if (env->ball_y < 0) {
            env->ball_y = -env->ball_y;
            env->ball_vy = -env->ball_vy;
        }
        if (env->ball_y > PONG_H - PONG_BALL) {
            env->ball_y = 2 * (PONG_H - PONG_BALL) - env->ball_y;
            env->ball_vy = -env->ball_vy;
        }
        float agent_face = PONG_W - PONG_PADDLE_W - PONG_BALL, opp_face = PONG_PADDLE_W;
        int overlaps_agent =
            env->ball_y + PONG_BALL >= env->agent_y && env->ball_y <= env->agent_y + env->cfg.paddle_height;
        int overlaps_opp = env->ball_y + PONG_BALL >= env->opp_y && env->ball_y <= env->opp_y + env->cfg.paddle_height;
        if (env->ball_vx > 0 && env->ball_x >= agent_face && env->ball_x - env->ball_vx < agent_face &&
            overlaps_agent) {
            env->ball_x = agent_face;
            pong_bounce(env, env->agent_y, -1.0f);
        } else if (env->ball_vx < 0 && env->ball_x <= opp_face && env->ball_x - env->ball_vx > opp_face &&
                   overlaps_opp) {
            env->ball_x = opp_face;
            pong_bounce(env, env->opp_y, 1.0f);
        } else if (env->ball_x > PONG_W - PONG_BALL) {
            env->opp_score++;
            reward = -1.0f;
        } else if (env->ball_x < 0) {
            env->agent_score++;
            reward = 1.0f;
        }
    }
    if (reward != 0) pong_serve(env);
    env->tick++;
    env->episode_return += reward;
    int done = env->agent_score >= env->cfg.max_score || env->opp_score >= env->cfg.max_score;
    int timeout = !done && env->tick >= env->cfg.max_steps;
    for (int r = 0; r < env->num_agents; r++) {  /* row 1 (two_player) is the left paddle: the mirror image */
        env->rewards[r] = r == 0 ? reward : -reward;
        env->terminals[r] = (unsigned char)done;
        env->truncations[r] = (unsigned char)timeout;
    }
    if (done || timeout) {
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)env->agent_score,
                          env->agent_score > env->opp_score ? 1.0f : 0.0f);
        if (env->cfg.two_player)
            ocean_log_episode(&env->log, -env->episode_return, (float)env->tick, (float)env->opp_score,
                              env->opp_score > env->agent_score ? 1.0f : 0.0f);
        pong_new_episode(env);
    } else {
        pong_write_obs(env);
    }
}

static void c_frame_shape(Pong *env, int *h, int *w) {
    *h = (int)PONG_H;
    *w = (int)PONG_W;
}

static void c_render_rgb(Pong *env, unsigned char *frame) {
    static const unsigned char agent[3] = {90, 200, 90}, opp[3] = {200, 90, 90}, ball[3] = {235, 235, 235},
                               net[3] = {70, 70, 70};
    int h = (int)PONG_H, w = (int)PONG_W;
    for (int y = 0; y < h; y += 8) ocean_fill_rect(frame, h, w, w / 2, y, 1, 4, net);
    ocean_fill_rect(frame, h, w, 0, (int)env->opp_y, (int)PONG_PADDLE_W, (int)env->cfg.paddle_height, opp);
    ocean_fill_rect(frame, h, w, w - (int)PONG_PADDLE_W, (int)env->agent_y, (int)PONG_PADDLE_W,
                    (int)env->cfg.paddle_height, agent);
    ocean_fill_rect(frame, h, w, (int)env->ball_x, (int)env->ball_y, (int)PONG_BALL, (int)PONG_BALL, ball);
}

static int c_render_text(Pong *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { COLS = 40, ROWS = 16 };
    float sx = COLS / PONG_W, sy = ROWS / PONG_H;
    ocean_puts(&t, "opponent ");
    ocean_puti(&t, env->opp_score);
    ocean_puts(&t, " : ");
    ocean_puti(&t, env->agent_score);
    ocean_puts(&t, " agent\n");
    int bx = (int)(env->ball_x * sx), by = (int)(env->ball_y * sy);
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++) {
            float y = (r + 0.5f) / sy;
            char ch = ' ';
            if (c == 0 && y >= env->opp_y && y <= env->opp_y + env->cfg.paddle_height) ch = '|';
            else if (c == COLS - 1 && y >= env->agent_y && y <= env->agent_y + env->cfg.paddle_height) ch = '|';
            else if (c == bx && r == by) ch = 'o';
            else if (c == COLS / 2) ch = ':';
            ocean_putc(&t, ch);
        }
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Pong *env) {}
