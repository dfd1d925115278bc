#include "tripletriad.h"
#define Env TripleTriad
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(TripleTriad *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "two_player", 0, 1, &env->two_player) < 0) return -1;
    if (cfg_int_in(cfg, "seat", -1, 1, &env->seat) < 0) return -1;
    if (cfg_int_in(cfg, "max_rank", 1, 10, &env->max_rank) < 0) return -1;
    env->illegal_reward = (float)cfg_float(cfg, "illegal_reward");
    if (PyErr_Occurred()) return -1;
    env->num_agents = env->two_player ? 2 : 1;
    env->obs_size = TT_OBS;
    env->act_size = 1;
    return 0;
}

static void frame_shape(TripleTriad *env, int *h, int *w) { tt_frame_shape(env, h, w); }
