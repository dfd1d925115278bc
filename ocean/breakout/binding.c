#include "breakout.h"
#define Env Breakout
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(Breakout *env, PyObject *cfg) {
    env->lives_max = (int)cfg_int(cfg, "lives");
    if (cfg_check(env->lives_max, 1, 1000, "lives") < 0) return -1;
    env->frameskip = (int)cfg_int(cfg, "frameskip");
    if (cfg_check(env->frameskip, 1, 64, "frameskip") < 0) return -1;
    env->max_steps = (int)cfg_int(cfg, "max_steps");
    if (cfg_check(env->max_steps, 1, 1 << 30, "max_steps") < 0) return -1;
    double width = cfg_float(cfg, "paddle_width"), speed = cfg_float(cfg, "paddle_speed");
    if (PyErr_Occurred()) return -1;
    if (!(width >= 4 && width <= BO_W / 2 && speed > 0 && speed <= 16)) {
        PyErr_Format(PyExc_ValueError, "config paddle_width must be in [4, %g] and paddle_speed in (0, 16]", BO_W / 2);
        return -1;
    }
    env->paddle_w = (float)width;
    env->paddle_speed = (float)speed;
    env->num_agents = 1;
    env->obs_size = BO_OBS;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Breakout *env, int *h, int *w) { breakout_frame_shape(env, h, w); }
