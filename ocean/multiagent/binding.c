#include "multiagent.h"
#define Env Multiagent
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Multiagent *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "horizon", 1, 1 << 20, &env->horizon) < 0) return -1;
    env->num_agents = 2;
    env->obs_size = 2;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Multiagent *env, int *h, int *w) { multiagent_frame_shape(env, h, w); }
