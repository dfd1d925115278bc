#include "stochastic.h"
#define Env Stochastic
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Stochastic *env, PyObject *cfg) {
    double p = cfg_float(cfg, "p");
    if (!PyErr_Occurred() && !(p >= 0.0 && p <= 1.0)) {
        PyErr_Format(PyExc_ValueError, "config p=%g must be in [0, 1]", p);
        return -1;
    }
    env->p = (float)p;
    if (cfg_int_in(cfg, "horizon", 1, 1 << 20, &env->horizon) < 0) return -1;
    env->num_agents = 1;
    env->obs_size = 1;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Stochastic *env, int *h, int *w) { stochastic_frame_shape(env, h, w); }
