#include "breakout.h"
#define Env Breakout
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(Breakout *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "lives", 1, 1000, &env->lives_max) < 0) return -1;
    if (cfg_int_in(cfg, "frameskip", 1, 64, &env->frameskip) < 0) return -1;
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 30, &env->max_steps) < 0) return -1;
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
