#include "bandit.h"
#define Env Bandit
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Bandit *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "num_arms", 1, 1 << 16, &env->num_arms) < 0) return -1;
    if (cfg_int_in(cfg, "best_arm", 0, env->num_arms - 1, &env->best_arm) < 0) return -1;
    double best = cfg_float(cfg, "best_prob"), other = cfg_float(cfg, "other_prob");
    if (PyErr_Occurred()) return -1;
    if (!(best >= 0 && best <= 1 && other >= 0 && other <= 1)) {
        PyErr_Format(PyExc_ValueError, "config best_prob=%g and other_prob=%g must be in [0, 1]", best, other);
        return -1;
    }
    env->best_prob = (float)best;
    env->other_prob = (float)other;
    env->num_agents = 1;
    env->obs_size = 1;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Bandit *env, int *h, int *w) { bandit_frame_shape(env, h, w); }
