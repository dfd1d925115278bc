#include "trash_pickup.h"
#define Env TrashPickup
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(TrashPickup *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "size", 3, 64, &env->size) < 0) return -1;
    if (cfg_int_in(cfg, "agents", 1, 64, &env->agents) < 0) return -1;
    if (cfg_int_in(cfg, "trash", 1, 4096, &env->trash) < 0) return -1;
    if (cfg_int_in(cfg, "bins", 1, 64, &env->bins) < 0) return -1;
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 20, &env->max_steps) < 0) return -1;
    if (cfg_int_in(cfg, "sight", 1, 16, &env->sight) < 0) return -1;
    env->pickup_reward = (float)cfg_float(cfg, "pickup_reward");
    env->deposit_reward = (float)cfg_float(cfg, "deposit_reward");
    env->step_reward = (float)cfg_float(cfg, "step_reward");
    if (PyErr_Occurred()) return -1;
    if (env->agents + env->trash + env->bins > env->size * env->size) {
        PyErr_Format(PyExc_ValueError, "config agents + trash + bins = %d do not fit on a %dx%d grid",
                     env->agents + env->trash + env->bins, env->size, env->size);
        return -1;
    }
    int view = 2 * env->sight + 1;
    env->num_agents = env->agents;
    env->obs_size = 4 * view * view + 1;
    env->act_size = 1;
    return 0;
}

static void frame_shape(TrashPickup *env, int *h, int *w) { tp_frame_shape(env, h, w); }
