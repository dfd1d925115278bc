#include "connect4.h"
#define Env Connect4
#define OBS_T float
#define OBS_FORMAT "f"
#include "binding.h"

static int configure(Connect4 *env, PyObject *cfg) {
    env->num_agents = 1;
    env->obs_size = C4_CELLS;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Connect4 *env, int *h, int *w) { connect4_frame_shape(env, h, w); }
