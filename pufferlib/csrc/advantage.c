/* advantage.c: the puffer advantage (GAE and V-trace as one recursion) on the CPU.
 *
 * Built by setup.py as `pufferlib._advantage`; called only through pufferlib.advantage, which
 * validates shapes, dtypes and devices and passes contiguous float32 buffers (numpy views of torch
 * tensors, so nothing is copied). The recursion per segment s, backwards in t, with V_H = last[s]:
 *     rho_t = min(w_t, rho_clip), c_t = min(w_t, c_clip), nd_t = 1 - d_t
 *     delta_t = rho_t * (r_t + gamma * V_{t+1} * nd_t - V_t)
 *     A_t = delta_t + gamma * lam * c_t * nd_t * A_{t+1}
 * The plain CPython buffer protocol keeps the build free of numpy and torch headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* One segment; `w` may be NULL, meaning every importance ratio is 1 (still clipped: a clip below 1
 * scales even on-policy steps). */
static void advantage_row(const float *values, const float *rewards, const float *dones, const float *w,
                          float last_value, float *out, Py_ssize_t horizon, float gamma, float lam, float rho_clip,
                          float c_clip) {
    float next_value = last_value;
    float next_adv = 0.0f;
    float rho_one = 1.0f < rho_clip ? 1.0f : rho_clip, c_one = 1.0f < c_clip ? 1.0f : c_clip;
    for (Py_ssize_t t = horizon - 1; t >= 0; t--) {
        float not_done = 1.0f - dones[t];
        float rho = rho_one, c = c_one;
        if (w != NULL) {
            rho = w[t] < rho_clip ? w[t] : rho_clip;
            c = w[t] < c_clip ? w[t] : c_clip;
        }
        float delta = rho * (rewards[t] + gamma * next_value * not_done - values[t]);
        next_adv = delta + gamma * lam * c * not_done * next_adv;
        out[t] = next_adv;
        next_value = values[t];
    }
}

/* Acquire a C-contiguous float32 buffer of exactly `count` elements, or set an error naming it. */
static int get_floats(PyObject *obj, Py_buffer *view, const char *name, Py_ssize_t count, int writable) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a C-contiguous%s float32 buffer", name, writable ? ", writable" : "");
        return -1;
    }
    const char *fmt = view->format ? view->format : "B";
    if (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@') fmt++;
    if (fmt[0] != 'f' || fmt[1] != '\0' || view->itemsize != 4) {
        PyErr_Format(PyExc_TypeError, "%s must hold float32 values (buffer format 'f'), got format '%s'", name,
                     view->format ? view->format : "B");
        PyBuffer_Release(view);
        return -1;
    }
    if (view->len != count * 4) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd float32 values, expected %zd", name, view->len / 4, count);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

enum { B_VALUES, B_REWARDS, B_DONES, B_LAST, B_OUT, B_IMPORTANCE, B_COUNT };

static PyObject *compute(PyObject *self, PyObject *args) {
    PyObject *objs[B_COUNT];
    Py_ssize_t segments, horizon;
    float gamma, lam, rho_clip, c_clip;
    if (!PyArg_ParseTuple(args, "OOOOOOnnffff:compute", &objs[B_VALUES], &objs[B_REWARDS], &objs[B_DONES],
                          &objs[B_LAST], &objs[B_OUT], &objs[B_IMPORTANCE], &segments, &horizon, &gamma, &lam,
                          &rho_clip, &c_clip))
        return NULL;
    if (segments < 0 || horizon < 0) {
        PyErr_SetString(PyExc_ValueError, "segments and horizon must be non-negative");
        return NULL;
    }
    static const char *names[B_COUNT] = {"values", "rewards", "dones", "last_values", "out", "importance"};
    int have_importance = objs[B_IMPORTANCE] != Py_None;
    int n_bufs = have_importance ? B_COUNT : B_IMPORTANCE;
    Py_buffer views[B_COUNT];
    int held = 0;
    for (; held < n_bufs; held++) {
        Py_ssize_t count = held == B_LAST ? segments : segments * horizon;
        if (get_floats(objs[held], &views[held], names[held], count, held == B_OUT) != 0) break;
    }
    if (held == n_bufs) {
        const float *values = views[B_VALUES].buf, *rewards = views[B_REWARDS].buf;
        const float *dones = views[B_DONES].buf, *last = views[B_LAST].buf;
        const float *w = have_importance ? views[B_IMPORTANCE].buf : NULL;
        float *out = views[B_OUT].buf;
        /* Pure arithmetic on buffers we hold: let other Python threads (env workers) run. */
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t s = 0; s < segments; s++) {
            Py_ssize_t row = s * horizon;
            advantage_row(values + row, rewards + row, dones + row, w ? w + row : NULL, last[s], out + row, horizon,
                          gamma, lam, rho_clip, c_clip);
        }
        Py_END_ALLOW_THREADS
    }
    int ok = held == n_bufs;
    while (held-- > 0) PyBuffer_Release(&views[held]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"compute", compute, METH_VARARGS,
     "compute(values, rewards, dones, last_values, out, importance_or_None, segments, horizon, gamma, "
     "lam, rho_clip, c_clip): write the puffer advantage into out. Use pufferlib.advantage instead."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_advantage", "CPU kernel of pufferlib.advantage.compute_advantage.", -1, methods,
};

PyMODINIT_FUNC PyInit__advantage(void) { return PyModule_Create(&module); }
