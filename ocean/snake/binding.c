#include "snake.h"
#define Env Snake
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Snake *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "width", 4, 4096, &env->width) < 0) return -1;
    if (cfg_int_in(cfg, "height", 4, 4096, &env->height) < 0) return -1;
    if (cfg_int_in(cfg, "num_snakes", 1, 1 << 16, &env->num_snakes) < 0) return -1;
    if (cfg_int_in(cfg, "num_food", 0, 1 << 20, &env->num_food) < 0) return -1;
    if (cfg_int_in(cfg, "vision", 1, 32, &env->vision) < 0) return -1;
    if (cfg_int_in(cfg, "max_length", 1, 1 << 16, &env->max_length) < 0) return -1;
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 30, &env->max_steps) < 0) return -1;
    long occupied = (long)env->num_snakes * env->max_length + env->num_food;
    if (2 * occupied > (long)env->width * env->height) {
        PyErr_Format(PyExc_ValueError, "num_snakes * max_length + num_food = %ld must be at most half the arena "
                     "(%d x %d) so every respawn finds room", occupied, env->width, env->height);
        return -1;
    }
    int side = 2 * env->vision + 1;
    env->num_agents = env->num_snakes;
    env->obs_size = side * side;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Snake *env, int *h, int *w) { snake_frame_shape(env, h, w); }
