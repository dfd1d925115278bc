#include "kuhn.h"
#define Env Kuhn
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(Kuhn *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "two_player", 0, 1, &env->two_player) < 0) return -1;
    if (cfg_int_in(cfg, "seat", -1, 1, &env->seat) < 0) return -1;
    env->num_agents = env->two_player ? 2 : 1;
    env->obs_size = KUHN_OBS;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Kuhn *env, int *h, int *w) { kuhn_frame_shape(env, h, w); }
