/* The whole binding of an env: name its struct and observation type, include the shared binding,
 * then copy the config into the struct and say how big its rows are. */
#include "template.h"
#define Env Template
#define OBS_T unsigned char
#define OBS_FORMAT "B"  /* buffer-protocol format of OBS_T: "B" uint8, "b" int8, "f" float32 */
#include "binding.h"

static int configure(Template *env, PyObject *cfg) {
    if (cfg_int_in(cfg, "length", 2, 1 << 16, &env->length) < 0) return -1;
    if (cfg_int_in(cfg, "max_steps", 1, 1 << 30, &env->max_steps) < 0) return -1;
    env->num_agents = 1;           /* agents (rows) per env instance */
    env->obs_size = env->length;   /* OBS_T elements per row: must match the Python Box */
    env->act_size = 1;             /* int32 elements per action row */
    return 0;
}

static void frame_shape(Template *env, int *h, int *w) { template_frame_shape(env, h, w); }
