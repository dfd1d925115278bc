/* Slime Volleyball. Two slimes (half discs) on either side of a net bounce a ball; a point is lost by
 * the side on whose ground the ball lands, and the game ends when a side reaches max_score. The
 * physics is simple on purpose: gravity, a slime's fixed run speed and jump, the ball reflected off a
 * slime's disc (relative to the slime's velocity), off the net, the walls and the ceiling, its speed
 * capped. One step runs `frameskip` frames of 1/30 s with the same action.
 *
 * Sides: side 0 plays on the right (x > 0), side 1 on the left. two_player=1 gives two rows, row r
 * playing side r, both live on every step; two_player=0 one row against the scripted slime, on side
 * `seat` (-1: alternating every game, as ocean/seats.h counts games). Every row sees the court from
 * the right: the left slime's view is mirrored, so one policy plays either side. A row's action
 * SEATS_BUILTIN (-1) lets the scripted slime play it for that step (the league's arena).
 *
 * Rewards: +1 / -1 per point, plus return_reward (default 0) each time the row sends the ball over the
 * net: shaping for a learner that has yet to find the ball (paid only for crossing, so juggling on the
 * own side earns nothing).
 *
 * Actions reach the physics through one function, sv_decode, which turns a row's action into a run
 * direction in [-1, 1] and a jump flag in its own view: six buttons, or with `continuous` a Box of two
 * floats (run, taken as it is, and jump when above 0). The built-in player (SEATS_BUILTIN) takes over a
 * row in the button mode only: a Box has no value to spare for it.
 *
 * The scripted slime predicts where the ball will come down on its side (a parabola, ignoring the
 * walls), stands at an offset behind that point drawn each time the ball comes over (mostly behind,
 * so the ball bounces toward the net; sometimes in front, its errors), jumps when the ball falls
 * close above it, and waits at the middle of its half while the ball is on the other side. */
#include <math.h>
#include "ocean.h"
#include "seats.h"
#include "spec.h"

#define SV_DT (1.0f / 30.0f)
#define SV_GRAVITY 29.4f
#define SV_RUN 17.5f        /* a slime's run speed */
#define SV_JUMP 13.5f       /* a slime's take-off speed */
#define SV_SLIME_R 1.5f
#define SV_BALL_R 0.5f
#define SV_NET_HALF 0.25f   /* half the net's width */
#define SV_NET_H 3.5f
#define SV_CEILING 24.0f
#define SV_SERVE_Y 12.0f
#define SV_SCRIPTED_RUN 0.6f /* the scripted slime runs slower than an agent can */

enum { SV_NONE, SV_IN, SV_OUT, SV_JUMP_ONLY, SV_JUMP_IN, SV_JUMP_OUT, SV_ACTIONS };

typedef struct SvBody {
    float x, y, vx, vy; /* absolute: the court spans [-SV_SIDE, SV_SIDE], the net at 0, the ground at 0 */
} SvBody;

typedef struct Slimevolley {
    OCEAN_SLOTS(float);
    SlimevolleyConfig cfg;
    OceanSeats seats;   /* one-row mode: the agent's side this game */
    SvBody slime[2];    /* side 0 right, side 1 left */
    SvBody ball;
    int score[2], tick, server;
    float ret[2];
    float aim[2];       /* the scripted slime's offset behind the ball, drawn each time the ball comes over */
    int ball_side;      /* the side whose half the ball is over */
} Slimevolley;

static inline float sv_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* +1 for side 0 (right), -1 for side 1: multiplying an absolute x by it gives the side's own view. */
static inline float sv_mirror(int side) { return side == 0 ? 1.0f : -1.0f; }

/* A row's action as a run direction (+1: away from the net, in its own view) and a jump. */
static inline void sv_decode(const Slimevolley *env, int row, float *run, int *jump) {
    if (env->cont_actions) {
        *run = ocean_cont_action(env, row * env->act_size);
        *jump = ocean_cont_action(env, row * env->act_size + 1) > 0.0f;
        return;
    }
    int a = ocean_clamp(env->actions[row * env->act_size], SV_ACTIONS);
    static const signed char runs[SV_ACTIONS] = {0, -1, 1, 0, -1, 1};
    *run = (float)runs[a];
    *jump = a >= SV_JUMP_ONLY;
}

/* The scripted slime's choice for `side`, in that side's own view. */
static void sv_scripted(const Slimevolley *env, int side, float *run, int *jump) {
    float m = sv_mirror(side);
    float me = env->slime[side].x * m;
    float bx = env->ball.x * m, by = env->ball.y, bvx = env->ball.vx * m, bvy = env->ball.vy;
    /* when the ball falls to the height of a slime's top: y(t) = by + bvy t - g t^2 / 2 */
    float h = by - SV_SLIME_R;
    float disc = bvy * bvy + 2.0f * SV_GRAVITY * (h > 0.0f ? h : 0.0f);
    float t = (bvy + sqrtf(disc)) / SV_GRAVITY;
    float land = bx + bvx * t;
    float target;
    if (land > 0.0f || bx > 0.0f) {
        target = land + env->aim[side]; /* mostly behind the ball, so it bounces toward the net */
    } else {
        target = 0.5f * SV_SIDE;
    }
    target = sv_clampf(target, SV_NET_HALF + SV_SLIME_R, SV_SIDE - SV_SLIME_R);
    float gap = target - me;
    *run = gap > 0.2f ? SV_SCRIPTED_RUN : (gap < -0.2f ? -SV_SCRIPTED_RUN : 0.0f);
    float dx = bx - me, dy = by - env->slime[side].y;
    *jump = bx > 0.0f && bvy < 0.0f && dx * dx + dy * dy < 16.0f && dy > 0.5f;
}

/* A new aim for `side`: uniform in [SV_AIM_LO, SV_AIM_HI] slime radii. An aim in front of the ball sends
 * it back over the own half: the errors that end rallies between two scripted slimes. */
#define SV_AIM_LO (-0.8f)
#define SV_AIM_HI 1.0f
static void sv_new_aim(Slimevolley *env, int side) {
    env->aim[side] = SV_SLIME_R * (SV_AIM_LO + (SV_AIM_HI - SV_AIM_LO) * ocean_randf(&env->rng));
}

static void sv_serve(Slimevolley *env) {
    float toward = sv_mirror(env->server); /* the ball starts toward the side that lost the last point */
    env->ball.x = 0.0f;
    env->ball.y = SV_SERVE_Y;
    env->ball.vx = toward * (4.0f + 8.0f * ocean_randf(&env->rng));
    env->ball.vy = 10.0f * ocean_randf(&env->rng);
    env->ball_side = env->server;
    sv_new_aim(env, env->server);
}

static void sv_write_obs(Slimevolley *env) {
    for (int row = 0; row < env->num_agents; row++) {
        int side = seats_player(&env->seats, row);
        float m = sv_mirror(side), *o = env->observations + row * env->obs_size;
        const SvBody *bodies[3] = {&env->slime[side], &env->ball, &env->slime[1 - side]};
        for (int k = 0; k < 3; k++) {
            const SvBody *b = bodies[k];
            o[4 * k + 0] = b->x * m * (1.0f / SV_SIDE);
            o[4 * k + 1] = b->y * (1.0f / SV_SIDE);
            o[4 * k + 2] = b->vx * m * (1.0f / SV_SPEED);
            o[4 * k + 3] = b->vy * (1.0f / SV_SPEED);
        }
    }
}

static void sv_new_game(Slimevolley *env) {
    seats_new_game(&env->seats);
    for (int side = 0; side < 2; side++) {
        env->slime[side] = (SvBody){sv_mirror(side) * 0.5f * SV_SIDE, 0.0f, 0.0f, 0.0f};
        env->score[side] = 0;
        env->ret[side] = 0.0f;
        sv_new_aim(env, side);
    }
    env->tick = 0;
    env->server = (int)(ocean_rand(&env->rng) & 1);
    sv_serve(env);
    sv_write_obs(env);
}

static int c_init(Slimevolley *env) {
    (void)env;
    return 0;
}

static void c_reset(Slimevolley *env) {
    seats_reset(&env->seats, env->cfg.two_player, env->cfg.seat);
    sv_new_game(env);
}

static void sv_move_slime(SvBody *s, int side, float run, int jump) {
    float m = sv_mirror(side);
    s->vx = run * SV_RUN * m;
    if (jump && s->y <= 0.0f) s->vy = SV_JUMP;
    s->vy -= SV_GRAVITY * SV_DT;
    s->x += s->vx * SV_DT;
    s->y += s->vy * SV_DT;
    if (s->y <= 0.0f) s->y = s->vy = 0.0f;
    float inner = SV_NET_HALF + SV_SLIME_R, outer = SV_SIDE - SV_SLIME_R; /* own half, in own view */
    float x = sv_clampf(s->x * m, inner, outer);
    if (x != s->x * m) s->vx = 0.0f;
    s->x = x * m;
}

/* The ball against a slime's disc: pushed out along the normal, its velocity relative to the slime
 * reflected. */
static void sv_hit_slime(SvBody *ball, const SvBody *s) {
    float dx = ball->x - s->x, dy = ball->y - s->y, r = SV_SLIME_R + SV_BALL_R;
    float d2 = dx * dx + dy * dy;
    if (d2 >= r * r || dy < 0.0f || d2 <= 1e-8f) return;
    float d = sqrtf(d2), nx = dx / d, ny = dy / d;
    ball->x = s->x + nx * r;
    ball->y = s->y + ny * r;
    float rvx = ball->vx - s->vx, rvy = ball->vy - s->vy, along = rvx * nx + rvy * ny;
    if (along < 0.0f) {
        ball->vx = s->vx + rvx - 2.0f * along * nx;
        ball->vy = s->vy + rvy - 2.0f * along * ny;
    }
}

/* One frame; returns the side that lost a point (the ball touched its ground), or -1. *sent is set to the
 * side that sent the ball over the net in this frame. */
static int sv_frame(Slimevolley *env, const float run[2], const int jump[2], int *sent) {
    for (int side = 0; side < 2; side++) sv_move_slime(&env->slime[side], side, run[side], jump[side]);
    SvBody *b = &env->ball;
    b->vy -= SV_GRAVITY * SV_DT;
    b->x += b->vx * SV_DT;
    b->y += b->vy * SV_DT;
    for (int side = 0; side < 2; side++) sv_hit_slime(b, &env->slime[side]);
    int over = b->x >= 0.0f ? 0 : 1;
    if (over != env->ball_side) {
        *sent = env->ball_side;
        env->ball_side = over;
        sv_new_aim(env, over);
    }
    /* the net: from above, the ball bounces up; from a side, back to that side */
    if (b->y - SV_BALL_R < SV_NET_H && fabsf(b->x) < SV_NET_HALF + SV_BALL_R) {
        if (b->y > SV_NET_H && b->vy < 0.0f) {
            b->y = SV_NET_H + SV_BALL_R;
            b->vy = -b->vy;
        } else {
            float m = b->x >= 0.0f ? 1.0f : -1.0f;
            b->x = m * (SV_NET_HALF + SV_BALL_R);
            if (b->vx * m < 0.0f) b->vx = -b->vx;
        }
    }
    if (b->x < -SV_SIDE + SV_BALL_R || b->x > SV_SIDE - SV_BALL_R) {
        b->x = sv_clampf(b->x, -SV_SIDE + SV_BALL_R, SV_SIDE - SV_BALL_R);
        b->vx = -b->vx;
    }
    if (b->y > SV_CEILING - SV_BALL_R) {
        b->y = SV_CEILING - SV_BALL_R;
        b->vy = -fabsf(b->vy);
    }
    float speed2 = b->vx * b->vx + b->vy * b->vy;
    if (speed2 > SV_SPEED * SV_SPEED) {
        float k = SV_SPEED / sqrtf(speed2);
        b->vx *= k;
        b->vy *= k;
    }
    if (b->y <= SV_BALL_R) return b->x >= 0.0f ? 0 : 1;
    return -1;
}

static void c_step(Slimevolley *env) {
    float run[2];
    int jump[2];
    for (int side = 0; side < 2; side++) {
        int row = seats_row(&env->seats, side);
        if (row < 0 || (env->actions && env->actions[row * env->act_size] == SEATS_BUILTIN))
            sv_scripted(env, side, &run[side], &jump[side]);
        else sv_decode(env, row, &run[side], &jump[side]);
    }
    int loser = -1, sent = -1;
    for (int f = 0; f < env->cfg.frameskip && loser < 0; f++) loser = sv_frame(env, run, jump, &sent);
    env->tick++;
    if (loser >= 0) {
        env->score[1 - loser]++;
        env->server = loser;
        sv_serve(env);
    }
    int done = env->score[0] >= env->cfg.max_score || env->score[1] >= env->cfg.max_score;
    int timeout = !done && env->tick >= env->cfg.max_steps;
    for (int row = 0; row < env->num_agents; row++) {
        int side = seats_player(&env->seats, row);
        float reward = loser < 0 ? 0.0f : (loser == side ? -1.0f : 1.0f);
        if (sent == side) reward += env->cfg.return_reward;
        env->rewards[row] = reward;
        env->ret[side] += reward;
        env->terminals[row] = (unsigned char)done;
        env->truncations[row] = (unsigned char)timeout;
    }
    if (done || timeout) {
        for (int row = 0; row < env->num_agents; row++) {
            int side = seats_player(&env->seats, row), won = env->score[side], played = won + env->score[1 - side];
            ocean_log_episode(&env->log, env->ret[side], (float)env->tick, (float)won,
                              played ? (float)won / (float)played : 0.0f);
        }
        sv_new_game(env);
    } else {
        sv_write_obs(env);
    }
}

#define SV_PX 8 /* pixels per court unit */
#define SV_FRAME_W ((int)(2 * SV_SIDE) * SV_PX)
#define SV_FRAME_H ((int)(SV_SIDE / 2) * SV_PX)
static void c_frame_shape(Slimevolley *env, int *h, int *w) {
    (void)env;
    *h = SV_FRAME_H;
    *w = SV_FRAME_W;
}

static inline int sv_px(float x) { return (int)((x + SV_SIDE) * SV_PX); }
static inline int sv_py(float y) { return SV_FRAME_H - 1 - (int)(y * SV_PX); }

/* A disc (or its upper half) as one-pixel rows. */
static void sv_disc(unsigned char *frame, float cx, float cy, float r, int upper, const unsigned char rgb[3]) {
    int rows = (int)(r * SV_PX);
    for (int k = upper ? 0 : -rows; k <= rows; k++) {
        float dy = (float)k / SV_PX, half = sqrtf(sv_clampf(r * r - dy * dy, 0.0f, r * r));
        int x0 = sv_px(cx - half), x1 = sv_px(cx + half);
        ocean_fill_rect(frame, SV_FRAME_H, SV_FRAME_W, x0, sv_py(cy + dy), x1 - x0 + 1, 1, rgb);
    }
}

static void c_render_rgb(Slimevolley *env, unsigned char *frame) {
    static const unsigned char sky[3] = {30, 40, 70}, ground[3] = {90, 70, 50}, net[3] = {220, 220, 220},
                               right[3] = {240, 160, 40}, left[3] = {60, 170, 230}, ball[3] = {250, 250, 250};
    ocean_fill_rect(frame, SV_FRAME_H, SV_FRAME_W, 0, 0, SV_FRAME_W, SV_FRAME_H, sky);
    ocean_fill_rect(frame, SV_FRAME_H, SV_FRAME_W, 0, SV_FRAME_H - 4, SV_FRAME_W, 4, ground);
    ocean_fill_rect(frame, SV_FRAME_H, SV_FRAME_W, sv_px(-SV_NET_HALF), sv_py(SV_NET_H), (int)(2 * SV_NET_HALF * SV_PX),
                    (int)(SV_NET_H * SV_PX), net);
    sv_disc(frame, env->slime[0].x, env->slime[0].y, SV_SLIME_R, 1, right);
    sv_disc(frame, env->slime[1].x, env->slime[1].y, SV_SLIME_R, 1, left);
    sv_disc(frame, env->ball.x, sv_clampf(env->ball.y, 0.0f, SV_SIDE / 2 - SV_BALL_R), SV_BALL_R, 0, ball);
}

static int c_render_text(Slimevolley *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    enum { COLS = 48, ROWS = 12 };
    ocean_puts(&t, "left ");
    ocean_puti(&t, env->score[1]);
    ocean_puts(&t, " : ");
    ocean_puti(&t, env->score[0]);
    ocean_puts(&t, " right");
    if (!env->cfg.two_player) ocean_puts(&t, env->seats.agent_seat == 0 ? "  (agent: right)" : "  (agent: left)");
    ocean_putc(&t, '\n');
    int bx = (int)((env->ball.x + SV_SIDE) / (2 * SV_SIDE) * COLS), by = (int)(env->ball.y / SV_SIDE * 2 * ROWS);
    for (int r = ROWS - 1; r >= 0; r--) {
        for (int c = 0; c < COLS; c++) {
            char ch = ' ';
            float x = (c + 0.5f) / COLS * 2 * SV_SIDE - SV_SIDE, y = (r + 0.5f) / (2 * ROWS) * SV_SIDE;
            for (int side = 0; side < 2; side++) {
                float dx = x - env->slime[side].x, dy = y - env->slime[side].y;
                if (dy >= 0.0f && dx * dx + dy * dy <= SV_SLIME_R * SV_SLIME_R * 1.3f) ch = side == 0 ? 'R' : 'L';
            }
            if (c == COLS / 2 && y < SV_NET_H) ch = '|';
            if (c == bx && r == by) ch = 'o';
            ocean_putc(&t, ch);
        }
        ocean_putc(&t, '\n');
    }
    for (int c = 0; c < COLS; c++) ocean_putc(&t, '=');
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Slimevolley *env) { (void)env; }
