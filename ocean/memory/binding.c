#include "memory.h"
#define Env Memory
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Memory *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "length", 1, MEM_MAX, &env->length) < 0) return -1;
    if (cfg_int_in(cfg, "delay", 0, 1 << 20, &env->delay) < 0) return -1;
    if (cfg_int_in(cfg, "num_symbols", 2, 255, &env->num_symbols) < 0) return -1;
    env->num_agents = 1;
    env->obs_size = env->num_symbols + 1;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Memory *env, int *h, int *w) { memory_frame_shape(env, h, w); }
