/* Memory: a random sequence of `length` symbols is shown one per step, the screen stays blank for
 * `delay` steps, then a recall flag asks for the sequence back, one symbol per step; each correct
 * symbol pays 1/length. A feed-forward policy cannot beat chance (1/num_symbols) in the recall
 * phase; a working recurrent policy earns 1. */
#include "ocean.h"
#include "spec.h"

typedef struct Memory {
    OCEAN_SLOTS(unsigned char);
    MemoryConfig cfg;  /* options (spec.toml) */
    int tick, correct;
    float episode_return;
    unsigned char sequence[MEM_MAX];
} Memory;

static int c_init(Memory *env) {
    (void)env;
    return 0;
}

/* obs: one-hot of the shown symbol (num_symbols values), then the recall flag */
static void memory_write_obs(Memory *env) {
    int t = env->tick, k = env->cfg.num_symbols;
    memset(env->observations, 0, (size_t)k + 1);
    if (t < env->cfg.length) env->observations[env->sequence[t]] = 1;
    else if (t >= env->cfg.length + env->cfg.delay) env->observations[k] = 1;
}

static void memory_new_episode(Memory *env) {
    for (int i = 0; i < env->cfg.length; i++)
        env->sequence[i] = (unsigned char)ocean_randint(&env->rng, env->cfg.num_symbols);
    env->tick = 0;
    env->correct = 0;
    env->episode_return = 0;
    memory_write_obs(env);
}

static void c_reset(Memory *env) { memory_new_episode(env); }

static void c_step(Memory *env) {
    int t = env->tick, recall = t - env->cfg.length - env->cfg.delay;
    float reward = 0;
    if (recall >= 0) {  /* actions before the recall phase are ignored */
        int a = ocean_clamp(env->actions[0], env->cfg.num_symbols);
        if (a == env->sequence[recall]) {
            reward = 1.0f / env->cfg.length;
            env->correct++;
        }
    }
    env->rewards[0] = reward;
    env->episode_return += reward;
    env->tick = t + 1;
    env->truncations[0] = 0;
    if (env->tick == 2 * env->cfg.length + env->cfg.delay) {
        env->terminals[0] = 1;
        ocean_log_episode(&env->log, env->episode_return, (float)env->tick, (float)env->correct,
                          (float)env->correct / env->cfg.length);
        memory_new_episode(env);
    } else {
        env->terminals[0] = 0;
        memory_write_obs(env);
    }
}

static void c_frame_shape(Memory *env, int *h, int *w) {
    *h = 32;
    *w = 16 * env->cfg.length;
}

static void c_render_rgb(Memory *env, unsigned char *frame) {
    int w = 16 * env->cfg.length;
    for (int i = 0; i < env->cfg.length; i++) {  /* the sequence, brighter for larger symbols */
        unsigned char v =
            (unsigned char)(60 + 195 * env->sequence[i] / (env->cfg.num_symbols > 1 ? env->cfg.num_symbols - 1 : 1));
        unsigned char rgb[3] = {v, v, 0};
        ocean_fill_rect(frame, 32, w, 16 * i + 1, 1, 14, 14, rgb);
    }
    static const unsigned char cursor[3] = {0, 160, 255};
    int t = env->tick, pos = t < env->cfg.length ? t : t - env->cfg.length - env->cfg.delay;
    if (pos >= 0) ocean_fill_rect(frame, 32, w, 16 * pos + 1, 18, 14, 12, cursor);
}

static int c_render_text(Memory *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    int phase_show = env->tick < env->cfg.length,
        phase_delay = !phase_show && env->tick < env->cfg.length + env->cfg.delay;
    ocean_puts(&t, phase_show ? "show   " : phase_delay ? "wait   " : "recall ");
    for (int i = 0; i < env->cfg.length; i++) ocean_puti(&t, env->sequence[i]);
    ocean_puts(&t, "  step ");
    ocean_puti(&t, env->tick);
    ocean_puts(&t, "  correct ");
    ocean_puti(&t, env->correct);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Memory *env) {}
