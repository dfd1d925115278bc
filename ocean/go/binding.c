#include "go.h"
#define Env Go
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(Go *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "size", GO_MIN_SIZE, GO_MAX_SIZE, &env->size) < 0) return -1;
    if (cfg_int_in(cfg, "two_player", 0, 1, &env->two_player) < 0) return -1;
    if (cfg_int_in(cfg, "seat", -1, 1, &env->seat) < 0) return -1;
    if (cfg_int_in(cfg, "max_moves", 0, 10000, &env->max_moves) < 0) return -1;
    env->komi = (float)cfg_float(cfg, "komi");
    env->illegal_reward = (float)cfg_float(cfg, "illegal_reward");
    if (PyErr_Occurred()) return -1;
    env->num_agents = env->two_player ? 2 : 1;
    env->obs_size = GO_PLANES * env->size * env->size + GO_SCALARS;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Go *env, int *h, int *w) { go_frame_shape(env, h, w); }
