#include "maze.h"
#define Env Maze
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Maze *env, PyObject *cfg) {
    env->width = (int)cfg_int(cfg, "width");
    if (cfg_check(env->width, 5, 4095, "width") < 0) return -1;
    env->height = (int)cfg_int(cfg, "height");
    if (cfg_check(env->height, 3, 4095, "height") < 0) return -1;
    if (env->width % 2 == 0 || env->height % 2 == 0) {
        PyErr_Format(PyExc_ValueError, "config width=%d and height=%d must be odd (rooms sit on odd cells, walls "
                     "on even ones)", env->width, env->height);
        return -1;
    }
    env->max_steps = (int)cfg_int(cfg, "max_steps");
    if (cfg_check(env->max_steps, 1, 1 << 30, "max_steps") < 0) return -1;
    env->num_agents = 1;
    env->obs_size = MZ_SIDE * MZ_SIDE;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Maze *env, int *h, int *w) { maze_frame_shape(env, h, w); }
