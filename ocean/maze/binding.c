#include "maze.h"
#define Env Maze
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Maze *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "width", 5, 4095, &env->width) < 0) return -1;
    if (cfg_int_in(cfg, "height", 3, 4095, &env->height) < 0) return -1;
    if (env->width % 2 == 0 || env->height % 2 == 0) {
        PyErr_Format(PyExc_ValueError, "config width=%d and height=%d must be odd (rooms sit on odd cells, walls "
                     "on even ones)", env->width, env->height);
        return -1;
    }
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 30, &env->max_steps) < 0) return -1;
    env->num_agents = 1;
    env->obs_size = MZ_SIDE * MZ_SIDE;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Maze *env, int *h, int *w) { maze_frame_shape(env, h, w); }
