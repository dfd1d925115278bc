#include "cartpole.h"
#define Env Cartpole
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(Cartpole *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 30, &env->max_steps) < 0) return -1;
    env->num_agents = 1;
    env->obs_size = 4;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Cartpole *env, int *h, int *w) { cartpole_frame_shape(env, h, w); }
