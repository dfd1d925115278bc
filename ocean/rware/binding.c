#include "rware.h"
#define Env Rware
#define OBS_T signed char
#define OBS_FORMAT "b"
#include "binding.h"

static int configure(Rware *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "shelf_cols", 1, 16, &env->shelf_cols) < 0) return -1;
    if (cfg_int_in(cfg, "shelf_rows", 1, 8, &env->shelf_rows) < 0) return -1;
    if (cfg_int_in(cfg, "column_height", 1, 16, &env->column_height) < 0) return -1;
    if (cfg_int_in(cfg, "num_agents", 1, RW_MAX_AGENTS, &env->num_agents) < 0) return -1;
    if (cfg_int_in(cfg, "requests", 1, RW_MAX_AGENTS, &env->requests) < 0) return -1;
    if (cfg_int_in(cfg, "sight", 1, 3, &env->sight) < 0) return -1;
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 30, &env->max_steps) < 0) return -1;
    if (cfg_int_in(cfg, "autopilot", 0, 1, &env->autopilot) < 0) return -1;
    int width = 3 * env->shelf_cols + 1, height = (env->column_height + 1) * env->shelf_rows + 2;
    int shelves = 2 * env->shelf_cols * env->column_height * env->shelf_rows;
    int highway = width * height - shelves - 2;
    if (env->num_agents > highway) {
        PyErr_Format(PyExc_ValueError, "config num_agents=%d does not fit the %d highway cells of a %dx%d warehouse",
                     env->num_agents, highway, width, height);
        return -1;
    }
    if (env->requests + env->num_agents >= shelves) {
        PyErr_Format(PyExc_ValueError, "config requests + num_agents = %d must be below the %d shelves so a new "
                     "request always finds a shelf", env->requests + env->num_agents, shelves);
        return -1;
    }
    int side = 2 * env->sight + 1;
    env->obs_size = side * side * RW_FLAGS + RW_SELF;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Rware *env, int *h, int *w) { rware_frame_shape(env, h, w); }
