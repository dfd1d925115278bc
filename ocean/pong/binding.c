#include "pong.h"
#define Env Pong
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(Pong *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "max_score", 1, 1000, &env->max_score) < 0) return -1;
    if (cfg_int_in(cfg, "frameskip", 1, 64, &env->frameskip) < 0) return -1;
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 30, &env->max_steps) < 0) return -1;
    double paddle_h = cfg_float(cfg, "paddle_height"), speed = cfg_float(cfg, "paddle_speed"),
           opp = cfg_float(cfg, "opponent_speed");
    if (PyErr_Occurred()) return -1;
    if (!(paddle_h >= 4 && paddle_h <= PONG_H / 2 && speed > 0 && speed <= 16 && opp >= 0 && opp <= 16)) {
        PyErr_Format(PyExc_ValueError, "config paddle_height must be in [4, %g], paddle_speed in (0, 16], "
                     "opponent_speed in [0, 16]", PONG_H / 2);
        return -1;
    }
    env->paddle_h = (float)paddle_h;
    env->paddle_speed = (float)speed;
    env->opponent_speed = (float)opp;
    env->num_agents = 1;
    env->obs_size = 8;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Pong *env, int *h, int *w) { pong_frame_shape(env, h, w); }
