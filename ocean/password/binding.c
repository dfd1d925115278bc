#include "password.h"
#define Env Password
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Password *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "length", 1, PW_MAX, &env->length) < 0) return -1;
    env->password_seed = (unsigned long long)cfg_int(cfg, "password_seed");
    env->num_agents = 1;
    env->obs_size = env->length;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Password *env, int *h, int *w) { password_frame_shape(env, h, w); }
