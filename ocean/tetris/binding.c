#include "tetris.h"
#define Env Tetris
#define OBS_T unsigned char
#define OBS_FORMAT "B"
#include "binding.h"

static int configure(Tetris *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "n_rows", 8, TT_MAX_ROWS, &env->n_rows) < 0) return -1;
    if (cfg_int_in(cfg, "n_cols", 4, TT_MAX_COLS, &env->n_cols) < 0) return -1;
    if (cfg_int_in(cfg, "preview", 0, TT_MAX_PREVIEW, &env->preview) < 0) return -1;
    if (cfg_int_in(cfg, "placement", 0, 1, &env->placement) < 0) return -1;
    if (cfg_int_in(cfg, "ticks_per_fall", 1, 1000, &env->ticks_per_fall) < 0) return -1;
    if (cfg_int_in(cfg, "max_ticks", 1, 1 << 30, &env->max_ticks) < 0) return -1;
    if (cfg_int_in(cfg, "garbage_interval", 0, 1 << 30, &env->garbage_interval) < 0) return -1;
    if (cfg_int_in(cfg, "autopilot", 0, 1, &env->autopilot) < 0) return -1;
    double hole_penalty = cfg_float(cfg, "hole_penalty");
    if (PyErr_Occurred()) return -1;
    if (!(hole_penalty >= 0 && hole_penalty <= 10)) {  /* PyErr_Format has no %g: format the number first */
        char text[32];
        PyOS_snprintf(text, sizeof(text), "%g", hole_penalty);
        PyErr_Format(PyExc_ValueError, "config hole_penalty=%s is outside [0, 10]", text);
        return -1;
    }
    env->hole_penalty = (float)hole_penalty;
    env->num_agents = 1;
    env->obs_size = env->n_rows * env->n_cols + TT_PIECES * (env->preview + 2) + 2;
    env->act_size = 1;
    return 0;
}

static void frame_shape(Tetris *env, int *h, int *w) { tetris_frame_shape(env, h, w); }
