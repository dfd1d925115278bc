#include "spaces.h"
#define Env Spaces
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Spaces *env, PyObject *cfg) {
    env->num_agents = 1;
    env->obs_size = SP_ROW;
    env->act_size = 2;
    return 0;
}

static void frame_shape(Spaces *env, int *h, int *w) { spaces_frame_shape(env, h, w); }
