/* Multiagent: two agents share an env; agent 0 is paid for action 0, agent 1 for action 1. Each sees
 * only its own id. A trainer that mixes up agent rows (stitching one agent's observations to another's
 * rewards) cannot solve it. */
#include "ocean.h"
#include "spec.h"

typedef struct Multiagent {
    OCEAN_SLOTS(unsigned char);
    MultiagentConfig cfg;  /* options (spec.toml) */
    int tick;
    float returns[2];
} Multiagent;

static int c_init(Multiagent *env) {
    (void)env;
    return 0;
}

static void multiagent_new_episode(Multiagent *env) {
    env->tick = 0;
    env->returns[0] = env->returns[1] = 0;
    /* one-hot agent id; it never changes, but a reset must still (re)write it */
    env->observations[0] = 1;
    env->observations[1] = 0;
    env->observations[2] = 0;
    env->observations[3] = 1;
}

static void c_reset(Multiagent *env) { multiagent_new_episode(env); }

static void c_step(Multiagent *env) {
    float unit = 1.0f / env->cfg.horizon;
    for (int agent = 0; agent < 2; agent++) {
        float reward = ocean_clamp(env->actions[agent], 2) == agent ? unit : 0.0f;
        env->rewards[agent] = reward;
        env->returns[agent] += reward;
        env->truncations[agent] = 0;
    }
    env->tick++;
    int done = env->tick == env->cfg.horizon;
    env->terminals[0] = env->terminals[1] = (unsigned char)done;
    if (done) {
        for (int agent = 0; agent < 2; agent++)
            ocean_log_episode(&env->log, env->returns[agent], (float)env->tick, env->returns[agent],
                              env->returns[agent]);
        multiagent_new_episode(env);
    }
}

static void c_frame_shape(Multiagent *env, int *h, int *w) {
    *h = 32;
    *w = 64;
}

static void c_render_rgb(Multiagent *env, unsigned char *frame) {
    static const unsigned char colors[2][3] = {{220, 60, 60}, {60, 60, 220}};
    for (int agent = 0; agent < 2; agent++) {
        int bar = env->tick ? (int)(30.0f * env->returns[agent] * env->cfg.horizon / env->tick) : 0;
        ocean_fill_rect(frame, 32, 64, 32 * agent + 4, 31 - bar, 24, bar, colors[agent]);
    }
}

static int c_render_text(Multiagent *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int agent = 0; agent < 2; agent++) {
        ocean_puts(&t, "agent ");
        ocean_puti(&t, agent);
        ocean_puts(&t, " wants action ");
        ocean_puti(&t, agent);
        ocean_puts(&t, "  return x100 ");
        ocean_puti(&t, (long)(100 * env->returns[agent]));
        ocean_putc(&t, '\n');
    }
    return t.len;
}

static void c_close(Multiagent *env) {}
