#include "enduro.h"
#define Env Enduro
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(Enduro *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "day_length", 100, 1 << 20, &env->day_length) < 0) return -1;
    if (cfg_int_in(cfg, "cars_per_day", 1, 1 << 20, &env->cars_per_day) < 0) return -1;
    if (cfg_int_in(cfg, "max_days", 1, 1000, &env->max_days) < 0) return -1;
    if (cfg_int_in(cfg, "max_cars", 1, EN_MAX_CARS, &env->max_cars) < 0) return -1;
    if (cfg_int_in(cfg, "crash_steps", 1, 1000, &env->crash_steps) < 0) return -1;
    if (cfg_int_in(cfg, "weather", 0, 1, &env->weather) < 0) return -1;
    if (cfg_int_in(cfg, "autopilot", 0, 1, &env->autopilot) < 0) return -1;
    double traffic = cfg_float(cfg, "traffic");
    if (PyErr_Occurred()) return -1;
    if (!(traffic >= 0.1 && traffic <= 10)) {  /* PyErr_Format has no %g: format the number first */
        char text[32];
        PyOS_snprintf(text, sizeof(text), "%g", traffic);
        PyErr_Format(PyExc_ValueError, "config traffic=%s is outside [0.1, 10]", text);
        return -1;
    }
    env->traffic = (float)traffic;
    env->num_agents = 1;
    env->obs_size = EN_OBS;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Enduro *env, int *h, int *w) { enduro_frame_shape(env, h, w); }
