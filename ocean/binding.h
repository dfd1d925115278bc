/* binding.h: the one CPython binding every Ocean env reuses.
 *
 * setup.py compiles it once per env, in a generated three-line source:
 *   #include "spec.h"     generated from ocean/<env>/spec.toml: OCEAN_ENV, OCEAN_CONFIG, OCEAN_OBS_T,
 *                         OCEAN_OBS_FORMAT, OCEAN_ACTION_MASK, the Box bounds, ocean_spec_check, the
 *                         row sizes and the env's extra log fields (first, so ocean.h's Log has them)
 *   #include "<env>.h"    the env (see ocean.h for the contract)
 *   #include "binding.h"  this file
 * so no env declares its options, sizes or types anywhere but in its spec.
 *
 * The module it produces holds N env instances behind one capsule. Python hands it the vector's
 * arrays once (any object with the buffer protocol: numpy arrays, shared memory views) and the options
 * packed as the bytes of OCEAN_CONFIG; each env's slots point at its rows, so `vec_step` is a plain C
 * loop over envs with the GIL released and no Python objects touched. The plain C API keeps the build
 * free of Cython and numpy headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdlib.h>

#include "ocean.h"

#define CAPSULE_NAME "ocean.VecEnv"
typedef OCEAN_ENV Env;

enum { BUF_OBS, BUF_ACT, BUF_REW, BUF_TERM, BUF_TRUNC, BUF_LIVE, BUF_MASK, BUF_COUNT };

typedef struct VecEnv {
    Env *envs;
    int num_envs;
    int num_agents;  /* rows over all envs */
    int initialized; /* envs whose c_init ran (c_close is called on exactly these) */
    Py_buffer bufs[BUF_COUNT];
    int held;        /* how many of bufs are acquired: released on close */
} VecEnv;

/* ---- lifetime ---- */

static void vec_free(VecEnv *vec) {
    if (vec->envs) {
        for (int i = 0; i < vec->initialized; i++) c_close(&vec->envs[i]);
        free(vec->envs);
        vec->envs = NULL;
    }
    for (int i = 0; i < vec->held; i++) PyBuffer_Release(&vec->bufs[i]);
    vec->held = 0;
}

static void capsule_destructor(PyObject *capsule) {
    VecEnv *vec = (VecEnv *)PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (vec == NULL) return;
    vec_free(vec);
    free(vec);
}

static VecEnv *get_vec(PyObject *capsule) {
    VecEnv *vec = (VecEnv *)PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (vec == NULL) return NULL;
    if (vec->envs == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "this Ocean env is closed");
        return NULL;
    }
    return vec;
}

/* Acquire a writable C-contiguous buffer and check its element format and total size, so the env can
 * never write past the arrays it was given. */
static int take_buffer(VecEnv *vec, int slot, PyObject *obj, const char *name, const char *format, Py_ssize_t itemsize,
                       Py_ssize_t count) {
    Py_buffer *b = &vec->bufs[slot];
    if (PyObject_GetBuffer(obj, b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s must be a writable C-contiguous array", name);
        return -1;
    }
    vec->held++;
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    /* numpy spells int32 as 'i' or, where long is 32 bits, 'l'; accept either when the size is right */
    int format_ok = strcmp(f, format) == 0 || (format[0] == 'i' && f[0] == 'l' && f[1] == '\0');
    if (!format_ok || b->itemsize != itemsize || b->len != count * itemsize) {
        PyErr_Format(PyExc_ValueError,
                     "%s must hold %zd elements of format '%s' (itemsize %zd), got %zd bytes "
                     "of format '%s'",
                     name, count, format, itemsize, b->len, f);
        return -1;
    }
    return 0;
}

/* vec_init(observations, actions, rewards, terminals, truncations, masks, action_masks or None, num_envs,
 *          config bytes) -> capsule */
static PyObject *vec_init(PyObject *self, PyObject *args) {
    PyObject *obs, *act, *rew, *term, *trunc, *live, *masks;
    int num_envs;
    Py_buffer cfg_bytes;
    if (!PyArg_ParseTuple(args, "OOOOOOOiy*", &obs, &act, &rew, &term, &trunc, &live, &masks, &num_envs, &cfg_bytes))
        return NULL;
    OCEAN_CONFIG cfg;
    Py_ssize_t cfg_len = cfg_bytes.len;
    if (cfg_len == (Py_ssize_t)sizeof cfg) memcpy(&cfg, cfg_bytes.buf, sizeof cfg);
    PyBuffer_Release(&cfg_bytes);
    if (cfg_len != (Py_ssize_t)sizeof cfg) {
        PyErr_Format(PyExc_ValueError, "config must be %zd bytes (the packed options of %s), got %zd",
                     (Py_ssize_t)sizeof cfg, OCEAN_ENV_NAME, cfg_len);
        return NULL;
    }
    char msg[512];
    if (ocean_spec_check(&cfg, msg, sizeof msg) != 0) {
        PyErr_SetString(PyExc_ValueError, msg);
        return NULL;
    }
    if (num_envs < 1) {
        PyErr_Format(PyExc_ValueError, "num_envs must be >= 1, got %d", num_envs);
        return NULL;
    }
    if ((masks != Py_None) != OCEAN_ACTION_MASK) {
        PyErr_SetString(PyExc_ValueError, OCEAN_ACTION_MASK ? "this env declares an action mask: pass its array"
                                                            : "this env declares no action mask: pass None");
        return NULL;
    }
    long long agents = ocean_spec_num_agents(&cfg), obs_size = ocean_spec_obs_size(&cfg);
    long long act_size = ocean_spec_act_size(&cfg), num_actions = ocean_spec_num_actions(&cfg);
    int box = ocean_spec_box_size(&cfg) > 0; /* float32 actions in cont_actions, else int32 in actions */
    long long rows = agents * num_envs;
    if (agents < 1 || obs_size < 1 || rows > INT32_MAX || rows * obs_size > PY_SSIZE_T_MAX / 4) {
        PyErr_Format(PyExc_ValueError,
                     "%s: %lld agents per env with %lld observation elements each is not a "
                     "usable layout",
                     OCEAN_ENV_NAME, agents, obs_size);
        return NULL;
    }
    VecEnv *vec = (VecEnv *)calloc(1, sizeof(VecEnv));
    if (vec == NULL) return PyErr_NoMemory();
    vec->num_envs = num_envs;
    vec->num_agents = (int)rows;
    vec->envs = (Env *)calloc((size_t)num_envs, sizeof(Env));
    if (vec->envs == NULL) {
        free(vec);
        return PyErr_NoMemory();
    }
    if (take_buffer(vec, BUF_OBS, obs, "observations", OCEAN_OBS_FORMAT, sizeof(OCEAN_OBS_T), rows * obs_size) < 0 ||
        take_buffer(vec, BUF_ACT, act, "actions", box ? "f" : "i", 4, rows * act_size) < 0 ||
        take_buffer(vec, BUF_REW, rew, "rewards", "f", 4, rows) < 0 ||
        take_buffer(vec, BUF_TERM, term, "terminals", "?", 1, rows) < 0 ||
        take_buffer(vec, BUF_TRUNC, trunc, "truncations", "?", 1, rows) < 0 ||
        take_buffer(vec, BUF_LIVE, live, "masks", "?", 1, rows) < 0 ||
        (OCEAN_ACTION_MASK && take_buffer(vec, BUF_MASK, masks, "action_masks", "?", 1, rows * num_actions) < 0))
        goto fail;

    for (int i = 0; i < num_envs; i++) {
        Env *env = &vec->envs[i];
        long long row = (long long)i * agents;
        env->cfg = cfg;
        env->num_agents = (int)agents;
        env->obs_size = (int)obs_size;
        env->act_size = (int)act_size;
        env->observations = (OCEAN_OBS_T *)vec->bufs[BUF_OBS].buf + row * obs_size;
        env->actions = box ? NULL : (int32_t *)vec->bufs[BUF_ACT].buf + row * act_size;
        env->cont_actions = box ? (float *)vec->bufs[BUF_ACT].buf + row * act_size : NULL;
        env->rewards = (float *)vec->bufs[BUF_REW].buf + row;
        env->terminals = (unsigned char *)vec->bufs[BUF_TERM].buf + row;
        env->truncations = (unsigned char *)vec->bufs[BUF_TRUNC].buf + row;
        env->masks = (unsigned char *)vec->bufs[BUF_LIVE].buf + row;
        env->action_masks = OCEAN_ACTION_MASK ? (unsigned char *)vec->bufs[BUF_MASK].buf + row * num_actions : NULL;
        env->rng = ocean_seed_mix(0, (uint64_t)i);
    }
    for (int i = 0; i < num_envs; i++) {
        Env *env = &vec->envs[i];
        vec->initialized = i + 1;  /* c_close runs on this env even if its c_init fails half-way */
        if (c_init(env) != 0) {
            PyErr_Format(PyExc_RuntimeError, "%s", env->error ? env->error : "c_init failed without a message");
            goto fail;
        }
    }
    PyObject *capsule = PyCapsule_New(vec, CAPSULE_NAME, capsule_destructor);
    if (capsule == NULL) goto fail;
    return capsule;

fail:
    vec_free(vec);
    free(vec);
    return NULL;
}

/* vec_reset(capsule, seed): reseed every env from (seed, index) and start new episodes */
static PyObject *vec_reset(PyObject *self, PyObject *args) {
    PyObject *capsule;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OK", &capsule, &seed)) return NULL;
    VecEnv *vec = get_vec(capsule);
    if (vec == NULL) return NULL;
    for (int i = 0; i < vec->num_envs; i++) {
        Env *env = &vec->envs[i];
        env->rng = ocean_seed_mix((uint64_t)seed, (uint64_t)i);
        memset(env->rewards, 0, sizeof(float) * env->num_agents);
        memset(env->terminals, 0, env->num_agents);
        memset(env->truncations, 0, env->num_agents);
        memset(env->masks, 1, env->num_agents);  /* every row live unless a turn-based env says otherwise */
        c_reset(env);
    }
    Py_RETURN_NONE;
}

static PyObject *vec_step(PyObject *self, PyObject *capsule) {
    VecEnv *vec = get_vec(capsule);
    if (vec == NULL) return NULL;
    Env *envs = vec->envs;
    int n = vec->num_envs;
    /* Releasing the GIL lets a thread-based caller overlap envs with inference. */
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < n; i++) c_step(&envs[i]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* vec_log(capsule) -> dict of means over episodes finished since the last call, or None: the standard
 * fields, the env's [[log]] fields (spec.toml) and n, each under its own name */
static PyObject *vec_log(PyObject *self, PyObject *capsule) {
    VecEnv *vec = get_vec(capsule);
    if (vec == NULL) return NULL;
    double sum[OCEAN_LOG_COUNT] = {0};
    for (int i = 0; i < vec->num_envs; i++) {
        float *f = (float *)&vec->envs[i].log;
        for (int k = 0; k < OCEAN_LOG_COUNT; k++) sum[k] += f[k];
        memset(&vec->envs[i].log, 0, sizeof(Log));
    }
    double n = sum[OCEAN_LOG_COUNT - 1];
    if (n <= 0) Py_RETURN_NONE;
    static const char *names[] = OCEAN_LOG_FIELDS;
    _Static_assert(sizeof names / sizeof names[0] == OCEAN_LOG_COUNT, "a name for every float of Log");
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    for (int k = 0; k < OCEAN_LOG_COUNT; k++) {
        PyObject *v = PyFloat_FromDouble(k == OCEAN_LOG_COUNT - 1 ? n : sum[k] / n);
        if (v == NULL || PyDict_SetItemString(out, names[k], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
    }
    return out;
}

/* vec_progress(capsule, out): the env's [[progress]] counters of every game now, into a float64 array
 * [num_envs * OCEAN_PROGRESS_COUNT] (c_progress); vec_cells(capsule, out): every game's Go-Explore cell
 * into an int64 array [num_envs] (c_cell). Read between steps by the trainer's [swarm] (pufferlib/explore.py). */
static int take_out(PyObject *obj, Py_buffer *b, const char *format, Py_ssize_t count, const char *what) {
    if (PyObject_GetBuffer(obj, b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    int ok = b->itemsize == 8 && b->len == count * 8 && (strcmp(f, format) == 0 || (format[0] == 'q' && f[0] == 'l'));
    if (!ok) {
        PyBuffer_Release(b);
        PyErr_Format(PyExc_ValueError, "%s must be a writable array of %zd elements of format '%s'", what, count,
                     format);
        return -1;
    }
    return 0;
}

static PyObject *vec_progress(PyObject *self, PyObject *args) {
    PyObject *capsule, *obj;
    if (!PyArg_ParseTuple(args, "OO", &capsule, &obj)) return NULL;
    VecEnv *vec = get_vec(capsule);
    if (vec == NULL) return NULL;
    Py_buffer b;
    if (take_out(obj, &b, "d", (Py_ssize_t)vec->num_envs * OCEAN_PROGRESS_COUNT, "progress") < 0) return NULL;
#if OCEAN_PROGRESS_COUNT > 0
    for (int i = 0; i < vec->num_envs; i++)
        c_progress(&vec->envs[i], (double *)b.buf + (size_t)i * OCEAN_PROGRESS_COUNT);
#endif
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

static PyObject *vec_cells(PyObject *self, PyObject *args) {
    PyObject *capsule, *obj;
    if (!PyArg_ParseTuple(args, "OO", &capsule, &obj)) return NULL;
    VecEnv *vec = get_vec(capsule);
    if (vec == NULL) return NULL;
    Py_buffer b;
    if (take_out(obj, &b, "q", (Py_ssize_t)vec->num_envs, "cells") < 0) return NULL;
#if OCEAN_CELL
    for (int i = 0; i < vec->num_envs; i++) ((int64_t *)b.buf)[i] = (int64_t)c_cell(&vec->envs[i]);
#else
    memset(b.buf, 0, (size_t)b.len);
#endif
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

static Env *get_env(PyObject *capsule, int index) {
    VecEnv *vec = get_vec(capsule);
    if (vec == NULL) return NULL;
    if (index < 0 || index >= vec->num_envs) {
        PyErr_Format(PyExc_IndexError, "env index %d is outside [0, %d)", index, vec->num_envs);
        return NULL;
    }
    return &vec->envs[index];
}

/* vec_frame_shape(capsule) -> (height, width) of one RGB frame */
static PyObject *vec_frame_shape(PyObject *self, PyObject *capsule) {
    Env *env = get_env(capsule, 0);
    if (env == NULL) return NULL;
    int h = 0, w = 0;
    c_frame_shape(env, &h, &w);
    return Py_BuildValue("(ii)", h, w);
}

/* vec_render(capsule, index, frame): paint env `index` into a uint8 [h, w, 3] array */
static PyObject *vec_render(PyObject *self, PyObject *args) {
    PyObject *capsule, *frame;
    int index;
    if (!PyArg_ParseTuple(args, "OiO", &capsule, &index, &frame)) return NULL;
    Env *env = get_env(capsule, index);
    if (env == NULL) return NULL;
    int h = 0, w = 0;
    c_frame_shape(env, &h, &w);
    Py_buffer b;
    if (PyObject_GetBuffer(frame, &b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (b.len != (Py_ssize_t)h * w * 3) {
        PyBuffer_Release(&b);
        PyErr_Format(PyExc_ValueError, "frame must be uint8 [%d, %d, 3]", h, w);
        return NULL;
    }
    memset(b.buf, 0, (size_t)b.len);
    c_render_rgb(env, (unsigned char *)b.buf);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* vec_text(capsule, index) -> str: the text view of env `index` */
static PyObject *vec_text(PyObject *self, PyObject *args) {
    PyObject *capsule;
    int index;
    if (!PyArg_ParseTuple(args, "Oi", &capsule, &index)) return NULL;
    Env *env = get_env(capsule, index);
    if (env == NULL) return NULL;
    int cap = 1 << 18;
    char *out = (char *)PyMem_Malloc((size_t)cap);
    if (out == NULL) return PyErr_NoMemory();
    out[0] = '\0';
    int len = c_render_text(env, out, cap);
    if (len < 0) len = 0;
    if (len >= cap) len = cap - 1;
    PyObject *s = PyUnicode_DecodeASCII(out, len, "replace");
    PyMem_Free(out);
    return s;
}

/* vec_layout(capsule) -> (agents per env, obs elements per agent, action elements per agent,
 * bytes per obs element): the sizes the generated C computed from the spec, which tests compare
 * with the sizes Python computed from the same spec */
static PyObject *vec_layout(PyObject *self, PyObject *capsule) {
    Env *env = get_env(capsule, 0);
    if (env == NULL) return NULL;
    return Py_BuildValue("(iiii)", env->num_agents, env->obs_size, env->act_size, (int)sizeof(OCEAN_OBS_T));
}

/* ---- saved states ----
 *
 * One game's state is its env struct by value, followed by the contents of the memory c_init allocated
 * (the blocks the env lists in OCEAN_STATE_BLOCKS, see ocean.h) and the game's rows of observations,
 * liveness and action masks (envs patch observations in place, so the rows are state too). Pointers are
 * never carried: in the saved struct the slots, the error and every listed block pointer are zeroed, and
 * loading keeps the loading game's own. The Log is not carried either: the finished episodes a game has
 * not reported yet stay its own. Python (ocean/env.py) adds the header that names the env, the version
 * and the options. */
#ifndef OCEAN_STATE_VERSION
#define OCEAN_STATE_VERSION 1
#endif

typedef struct StateBlock {
    size_t offset; /* of the pointer member in Env */
    size_t bytes;  /* saved from where it points; 0 keeps the pointer only (it points into another block) */
} StateBlock;

#define STATE_COUNT_BLOCK(field, size) +1
#ifdef OCEAN_STATE_BLOCKS
enum { STATE_MAX_BLOCKS = 1 OCEAN_STATE_BLOCKS(STATE_COUNT_BLOCK, env) };
#else
enum { STATE_MAX_BLOCKS = 1 };
#endif

static int state_blocks(Env *env, StateBlock *out) {
    int n = 0;
    (void)env;
    (void)out;
#ifdef OCEAN_STATE_BLOCKS
#define STATE_LIST_BLOCK(field, size)                 \
    out[n].offset = offsetof(Env, field);             \
    out[n].bytes = (env)->field ? (size_t)(size) : 0; \
    n++;
    OCEAN_STATE_BLOCKS(STATE_LIST_BLOCK, env)
#undef STATE_LIST_BLOCK
#endif
    return n;
}

static char *block_at(Env *env, size_t offset) {
    char *p;
    memcpy(&p, (char *)env + offset, sizeof p);
    return p;
}

static size_t state_rows_bytes(Env *env) {
    size_t agents = (size_t)env->num_agents;
    size_t bytes = agents * (size_t)env->obs_size * sizeof(OCEAN_OBS_T) + agents;
    if (OCEAN_ACTION_MASK) bytes += agents * (size_t)ocean_spec_num_actions(&env->cfg);
    return bytes;
}

static size_t state_bytes(Env *env) {
    StateBlock blocks[STATE_MAX_BLOCKS] = {{0, 0}};
    int n = state_blocks(env, blocks);
    size_t total = sizeof(Env) + state_rows_bytes(env);
    for (int k = 0; k < n; k++) total += blocks[k].bytes;
    return total;
}

/* vec_state_info(capsule) -> (payload bytes of one game, OCEAN_STATE_VERSION, sizeof(Env), blocks) */
static PyObject *vec_state_info(PyObject *self, PyObject *capsule) {
    Env *env = get_env(capsule, 0);
    if (env == NULL) return NULL;
    StateBlock blocks[STATE_MAX_BLOCKS] = {{0, 0}};
    int n = state_blocks(env, blocks);
    return Py_BuildValue("(niin)", (Py_ssize_t)state_bytes(env), OCEAN_STATE_VERSION, (int)sizeof(Env), (Py_ssize_t)n);
}

/* vec_get_state(capsule, index) -> bytes: the payload of game `index` */
static PyObject *vec_get_state(PyObject *self, PyObject *args) {
    PyObject *capsule;
    int index;
    if (!PyArg_ParseTuple(args, "Oi", &capsule, &index)) return NULL;
    Env *env = get_env(capsule, index);
    if (env == NULL) return NULL;
    StateBlock blocks[STATE_MAX_BLOCKS] = {{0, 0}};
    int n = state_blocks(env, blocks);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)state_bytes(env));
    if (out == NULL) return NULL;
    char *p = PyBytes_AS_STRING(out);
    Env *copy = (Env *)p; /* PyBytes data is aligned for any type */
    memcpy(copy, env, sizeof(Env));
    copy->observations = NULL;
    copy->actions = NULL;
    copy->cont_actions = NULL;
    copy->rewards = NULL;
    copy->terminals = copy->truncations = copy->masks = copy->action_masks = NULL;
    copy->error = NULL;
    memset(&copy->log, 0, sizeof(Log));
    for (int k = 0; k < n; k++) memset(p + blocks[k].offset, 0, sizeof(void *));
    p += sizeof(Env);
    for (int k = 0; k < n; k++) {
        memcpy(p, block_at(env, blocks[k].offset), blocks[k].bytes);
        p += blocks[k].bytes;
    }
    size_t agents = (size_t)env->num_agents, obs = agents * (size_t)env->obs_size * sizeof(OCEAN_OBS_T);
    memcpy(p, env->observations, obs);
    p += obs;
    memcpy(p, env->masks, agents);
    p += agents;
    if (OCEAN_ACTION_MASK) memcpy(p, env->action_masks, agents * (size_t)ocean_spec_num_actions(&env->cfg));
    return out;
}

/* vec_set_state(capsule, index, payload): load a payload of vec_get_state into game `index`. Python has
 * checked the header (env, version, options, checksum); the length is checked here too. */
static PyObject *vec_set_state(PyObject *self, PyObject *args) {
    PyObject *capsule;
    int index;
    Py_buffer in;
    if (!PyArg_ParseTuple(args, "Oiy*", &capsule, &index, &in)) return NULL;
    Env *env = get_env(capsule, index);
    if (env == NULL) {
        PyBuffer_Release(&in);
        return NULL;
    }
    size_t need = state_bytes(env);
    if ((size_t)in.len != need) {
        PyBuffer_Release(&in);
        PyErr_Format(PyExc_ValueError, "a state of %s is %zd bytes, got %zd", OCEAN_ENV_NAME, (Py_ssize_t)need, in.len);
        return NULL;
    }
    StateBlock blocks[STATE_MAX_BLOCKS] = {{0, 0}};
    int n = state_blocks(env, blocks);
    Env keep = *env; /* this game's own pointers and log */
    const char *p = (const char *)in.buf;
    memcpy(env, p, sizeof(Env));
    env->observations = keep.observations;
    env->actions = keep.actions;
    env->cont_actions = keep.cont_actions;
    env->rewards = keep.rewards;
    env->terminals = keep.terminals;
    env->truncations = keep.truncations;
    env->masks = keep.masks;
    env->action_masks = keep.action_masks;
    env->error = keep.error;
    env->log = keep.log;
    for (int k = 0; k < n; k++)
        memcpy((char *)env + blocks[k].offset, (char *)&keep + blocks[k].offset, sizeof(void *));
    p += sizeof(Env);
    for (int k = 0; k < n; k++) {
        memcpy(block_at(env, blocks[k].offset), p, blocks[k].bytes);
        p += blocks[k].bytes;
    }
    size_t agents = (size_t)env->num_agents, obs = agents * (size_t)env->obs_size * sizeof(OCEAN_OBS_T);
    memcpy(env->observations, p, obs);
    p += obs;
    memcpy(env->masks, p, agents);
    p += agents;
    if (OCEAN_ACTION_MASK) memcpy(env->action_masks, p, agents * (size_t)ocean_spec_num_actions(&env->cfg));
    /* loading is not a transition */
    memset(env->rewards, 0, sizeof(float) * agents);
    memset(env->terminals, 0, agents);
    memset(env->truncations, 0, agents);
    PyBuffer_Release(&in);
    Py_RETURN_NONE;
}

static PyObject *vec_close(PyObject *self, PyObject *capsule) {
    VecEnv *vec = (VecEnv *)PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (vec == NULL) return NULL;
    vec_free(vec);  /* idempotent; the capsule destructor frees the struct itself */
    Py_RETURN_NONE;
}

static PyMethodDef ocean_methods[] = {
    {"vec_init", vec_init, METH_VARARGS,
     "vec_init(obs, actions, rewards, terminals, truncations, masks, action_masks, num_envs, config_bytes)"},
    {"vec_reset", vec_reset, METH_VARARGS, "vec_reset(handle, seed)"},
    {"vec_step", vec_step, METH_O, "vec_step(handle)"},
    {"vec_log", vec_log, METH_O, "vec_log(handle) -> dict of episode means or None"},
    {"vec_frame_shape", vec_frame_shape, METH_O, "vec_frame_shape(handle) -> (h, w)"},
    {"vec_render", vec_render, METH_VARARGS, "vec_render(handle, index, frame)"},
    {"vec_text", vec_text, METH_VARARGS, "vec_text(handle, index) -> str"},
    {"vec_layout", vec_layout, METH_O, "vec_layout(handle) -> (agents, obs_size, act_size, obs_itemsize)"},
    {"vec_state_info", vec_state_info, METH_O, "vec_state_info(handle) -> (payload_bytes, version, env_bytes, blocks)"},
    {"vec_get_state", vec_get_state, METH_VARARGS, "vec_get_state(handle, index) -> bytes"},
    {"vec_set_state", vec_set_state, METH_VARARGS, "vec_set_state(handle, index, payload)"},
    {"vec_progress", vec_progress, METH_VARARGS, "vec_progress(handle, float64 out[num_envs * progress])"},
    {"vec_cells", vec_cells, METH_VARARGS, "vec_cells(handle, int64 out[num_envs])"},
    {"vec_close", vec_close, METH_O, "vec_close(handle)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ocean_module = {
    PyModuleDef_HEAD_INIT, "binding", "Vectorized Ocean environment (generated from ocean/binding.h)", -1,
    ocean_methods,
};

PyMODINIT_FUNC PyInit_binding(void) { return PyModule_Create(&ocean_module); }
