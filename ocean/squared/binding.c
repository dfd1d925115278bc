#include "squared.h"
#define Env Squared
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static void frame_shape(Squared *env, int *h, int *w) { squared_frame_shape(env, h, w); }

static int configure(Squared *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "size", 2, 255, &env->size) < 0) return -1;
    if (cfg_int_in(cfg, "num_targets", 1, 4 * (env->size - 1), &env->num_targets) < 0) return -1;
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 30, &env->max_steps) < 0) return -1;
    env->num_agents = 1;
    env->obs_size = env->size * env->size;
    env->act_size = 1;
    return 0;
}
