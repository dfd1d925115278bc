#include "snake.h"
#define Env Snake
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Snake *env, PyObject *cfg) {
    env->width = (int)cfg_int(cfg, "width");
    if (cfg_check(env->width, 4, 4096, "width") < 0) return -1;
    env->height = (int)cfg_int(cfg, "height");
    if (cfg_check(env->height, 4, 4096, "height") < 0) return -1;
    env->num_snakes = (int)cfg_int(cfg, "num_snakes");
    if (cfg_check(env->num_snakes, 1, 1 << 16, "num_snakes") < 0) return -1;
    env->num_food = (int)cfg_int(cfg, "num_food");
    if (cfg_check(env->num_food, 0, 1 << 20, "num_food") < 0) return -1;
    env->vision = (int)cfg_int(cfg, "vision");
    if (cfg_check(env->vision, 1, 32, "vision") < 0) return -1;
    env->max_length = (int)cfg_int(cfg, "max_length");
    if (cfg_check(env->max_length, 1, 1 << 16, "max_length") < 0) return -1;
    env->max_steps = (int)cfg_int(cfg, "max_steps");
    if (cfg_check(env->max_steps, 1, 1 << 30, "max_steps") < 0) return -1;
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
