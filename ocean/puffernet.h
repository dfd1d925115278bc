/* puffernet.h: a trained pufferlib policy in plain C99, from the native weights file `puffer export` writes.
 *
 * It runs what pufferlib.models builds for Ocean envs: the Default MLP (Linear + GELU layers over the
 * observation row cast to float), optionally the LSTMWrapper's LSTM, then the action head and the value
 * head; and an env's own policy class through its C twin (below). Loading reads weights from a memory
 * buffer (the contents of policy.bin), so a WebAssembly build can embed them; nothing here opens a file,
 * and nothing allocates: the caller hands one arena of puffernet_arena_bytes() bytes, which holds the net,
 * a copy of the weights, the LSTM state of every row and the scratch of one forward pass.
 *
 *     size_t bytes = puffernet_arena_bytes(weights, nbytes, env->num_agents);
 *     void *arena = malloc(bytes);                      // the only allocation, by the caller
 *     const char *error = NULL;
 *     PufferNet *net = puffernet_load(arena, bytes, weights, nbytes, env->num_agents, &error);
 *     if (!net) { fprintf(stderr, "%s\n", error); ... }
 *     puffernet_act(net, env->num_agents, env->observations, env->action_masks, env->actions, &env->rng);
 *     ... after c_step, for each row whose episode ended: puffernet_reset(net, row);
 *
 * puffernet_act samples from the policy with the caller's xorshift state (an Ocean env's own env->rng,
 * so a seed fixes the whole game), or takes the argmax (the mean for Box actions) when rng is NULL. A
 * mixed action (an env with `mixed = true`) comes out as one float row: the discrete choices, then the
 * Box elements, which is the env's cont_actions row.
 * puffernet_forward gives the logits and values instead, and puffernet_sample the actions from them.
 *
 * The weights file is a sequence of little-endian 32-bit words: an integer header that describes the
 * net, then every tensor as float32 in the order below. pufferlib/export.py writes it and documents the
 * JSON manifest beside it; docs/export.md shows both.
 *     magic "PUFN", version, header words, float count, row bytes,
 *     twin tag (0: none), twin encodes (0 or 1), twin width, twin params P, P x (int), twin floats F,
 *     leaves L, L x (dtype, byte offset, count), observation divisor (float32 bits),
 *     layers D, D x (kind, in, out, activation), lstm hidden size (0: none),
 *     action kind, heads K, K x (size)
 *     tensors: per layer W [out][in], b [out]; the LSTM W_ih [4H][in], W_hh [4H][H], b_ih [4H], b_hh [4H]
 *     (torch's gate order i, f, g, o); actor W [A][hidden], b [A]; value W [1][hidden], b [1];
 *     for Box actions log_std [A] (mixed: log_std [B]); then the twin's F floats. A is the sum of the head
 *     sizes (the action size for Box). A mixed net's heads are its discrete parts' sizes, then the Box size B:
 *     its logits are the discrete logits, then the Box means.
 *
 * C twins: an env's own policy class may encode the observation its own way, add terms of its own to the
 * logits, or both (puffer_mmo's crop, entity and pointer policy; tripletriad's per-move terms). Its C twin
 * lives beside the class's module as policy.h; a build names it before including this header,
 *     #define PUFFERNET_TWIN "policy.h"
 * and this header includes it where the twin can use PufferNet and the helpers above it (puffernet_dot,
 * puffernet_activate). The file carries the twin's tag (FNV-1a of its name), its integer parameters and
 * its tensors; weights with a twin are refused by a build without it, or with another one. A twin defines
 *     PUFFERNET_TWIN_NAME   the name its Python class declares (NATIVE_TWIN['name'])
 *     PUFFERNET_TWIN_CHECK  const char *f(const PufferNet *net, size_t *scratch): NULL when the twin runs
 *                           this net (its params, F, the row size, the heads), else why not; *scratch gets
 *                           the floats of scratch it needs for one row (net->twin_scratch)
 *     PUFFERNET_TWIN_ENCODE void f(const PufferNet *net, const unsigned char *row, float *hidden): the row
 *                           to the encoder's output [twin width], instead of the leaves and layers (only
 *                           for weights whose twin encodes)
 *     PUFFERNET_TWIN_TERMS  void f(const PufferNet *net, const unsigned char *row, const float *hidden,
 *                           float *logits): after the action head, adds to (or masks) the row's logits;
 *                           hidden is the heads' input (after the LSTM), and what ENCODE left in
 *                           net->twin_scratch for this row is still there
 * and reads its parameters from net->params and its tensors from net->twin_w.
 *
 * Define PUFFERNET_API before including to change the functions' linkage (empty: exported, as the
 * Python harness builds it); by default they are static like every Ocean header's.
 */
#ifndef PUFFERNET_H
#define PUFFERNET_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "ocean.h"

#ifndef PUFFERNET_API
#define PUFFERNET_API static
#endif

#define PUFFERNET_MAGIC 0x4E465550u /* "PUFN" read as a little-endian word */
#define PUFFERNET_VERSION 2
#define PUFFERNET_MAX_PARAMS 32
#define PUFFERNET_MAX_LEAVES 32
#define PUFFERNET_MAX_LAYERS 8
#define PUFFERNET_MAX_HEADS 64
/* Widths above this are refused as corrupt: it keeps every size product far from overflow. */
#define PUFFERNET_MAX_WIDTH (1 << 20)

/* Observation element types, as stored in a leaf. */
enum { PUFFERNET_F32 = 0, PUFFERNET_U8 = 1, PUFFERNET_I8 = 2, PUFFERNET_I16 = 3, PUFFERNET_I32 = 4, PUFFERNET_F64 = 5 };
enum { PUFFERNET_LINEAR = 1 };
enum { PUFFERNET_IDENTITY = 0, PUFFERNET_GELU = 1, PUFFERNET_RELU = 2 };
enum { PUFFERNET_DISCRETE = 0, PUFFERNET_MULTIDISCRETE = 1, PUFFERNET_CONTINUOUS = 2, PUFFERNET_MIXED = 3 };

typedef struct PufferNetLeaf {
    int dtype, offset, count;
} PufferNetLeaf;

typedef struct PufferNetLayer {
    int kind, in, out, activation;
    const float *weight, *bias;
} PufferNetLayer;

typedef struct PufferNet {
    int row_bytes;    /* bytes of one observation row */
    int input_size;   /* floats the encoder reads: the sum of the leaves' counts */
    float divisor;    /* every input is divided by it (1: the Default MLP does not scale) */
    int num_leaves, num_layers, lstm_hidden, action_kind, num_heads;
    int hidden_size;  /* the decoder's input width */
    int logit_size;   /* A: the sum of the head sizes, or the Box action size */
    int box_size;     /* B: the Box elements of an action row (the Box size, a mixed net's last head), else 0 */
    int mask_width;   /* bytes of one row of action masks: A, less the Box means of a mixed net */
    int action_size;  /* elements of one action row: heads (int32), A (Box), the choices then B (mixed) */
    int max_rows;     /* rows the LSTM state was sized for */
    uint32_t twin;    /* the C twin's tag (0: none) */
    int twin_encodes; /* 1: the twin encodes the row, the file has no leaves or layers */
    int twin_width;   /* the twin encoder's output width */
    int num_params;
    int params[PUFFERNET_MAX_PARAMS]; /* the twin's integer parameters, as its Python class declares them */
    size_t twin_floats;               /* F: the twin's tensors, after the standard ones */
    size_t twin_scratch_floats;
    PufferNetLeaf leaves[PUFFERNET_MAX_LEAVES];
    PufferNetLayer layers[PUFFERNET_MAX_LAYERS];
    int heads[PUFFERNET_MAX_HEADS];
    const float *w_ih, *w_hh, *b_ih, *b_hh;
    const float *actor_w, *actor_b, *value_w, *value_b, *log_std;
    const float *twin_w; /* [F] */
    float *h, *c;        /* [max_rows][lstm_hidden] */
    float *a, *b;        /* two activation buffers of the widest layer, swapped between layers */
    float *gates;        /* [4 * lstm_hidden] */
    float *logits;       /* [logit_size] of the row being acted for */
    float *twin_scratch; /* [twin_scratch_floats]: the twin's, for one row */
} PufferNet;

static int puffernet_dtype_size(int dtype) {
    switch (dtype) {
    case PUFFERNET_U8:
    case PUFFERNET_I8:
        return 1;
    case PUFFERNET_I16:
        return 2;
    case PUFFERNET_F32:
    case PUFFERNET_I32:
        return 4;
    case PUFFERNET_F64:
        return 8;
    default:
        return 0;
    }
}

/* Words through memcpy: the caller's buffer may sit at any address (a file read into a char array). */
static uint32_t puffernet_word(const unsigned char *bytes, size_t index) {
    uint32_t w;
    memcpy(&w, bytes + 4 * index, 4);
    return w;
}

/* Eight running sums, added pairwise at the end: the compiler keeps them in vector registers (no
 * -ffast-math needed, the order is written out), and the rounding stays at the level of torch's own
 * blocked float sums, well inside the 1e-5 the tests allow. */
static float puffernet_dot(const float *w, const float *x, int n, float bias) {
    float lane[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) lane[k] += w[i + k] * x[i + k];
    float tail = 0.0f;
    for (; i < n; i++) tail += w[i] * x[i];
    float sum = ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
    return (sum + tail) + bias;
}

static float puffernet_activate(float x, int activation) {
    switch (activation) {
    case PUFFERNET_GELU:
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); /* torch's exact (erf) GELU */
    case PUFFERNET_RELU:
        return x > 0.0f ? x : 0.0f;
    default:
        return x;
    }
}

/* y = activation(W x + b) for a torch Linear's W [out][in] and b [out]: what a twin's layers call. */
static void puffernet_linear(const float *w, const float *b, const float *x, int in, int out, float *y,
                             int activation) {
    for (int o = 0; o < out; o++) y[o] = puffernet_activate(puffernet_dot(w + (size_t)o * in, x, in, b[o]), activation);
}

#ifdef PUFFERNET_TWIN
/* A twin's tag: 32-bit FNV-1a of its name (pufferlib/export.py computes the same), never 0. */
static uint32_t puffernet_tag(const char *name) {
    uint32_t h = 2166136261u;
    for (; *name; name++) h = (h ^ (uint32_t)(unsigned char)*name) * 16777619u;
    return h != 0 ? h : 1;
}

#include PUFFERNET_TWIN
#if !defined(PUFFERNET_TWIN_NAME) || !defined(PUFFERNET_TWIN_CHECK)
#error "a C twin (PUFFERNET_TWIN) must define PUFFERNET_TWIN_NAME and PUFFERNET_TWIN_CHECK"
#endif
#endif

/* Walks the header and fills `net`'s sizes (pointers stay unset); returns NULL when the header is sound,
 * else why not. `floats` receives the tensor float count it promises. */
static const char *puffernet_parse(PufferNet *net, const void *weights, size_t nbytes, size_t *floats) {
    const unsigned char *bytes = (const unsigned char *)weights;
    size_t words = nbytes / 4, at = 0;
    if (weights == NULL || nbytes < 20 || nbytes % 4) return "the weights buffer is too short or not whole words";
    if (puffernet_word(bytes, 0) != PUFFERNET_MAGIC) return "not a pufferlib native weights file (bad magic)";
    if (puffernet_word(bytes, 1) != PUFFERNET_VERSION)
        return "the weights file has another format version than this puffernet.h reads; export it again";
    size_t header = puffernet_word(bytes, 2), count = puffernet_word(bytes, 3);
    if (header < 16 || header > words || count != words - header)
        return "the weights file is truncated or corrupt (its sizes do not add up)";
    at = 4;
#define PN_NEXT() (at < header ? (int)puffernet_word(bytes, at++) : -1)
#define PN_BAD(x) ((x) < 0 || (x) > PUFFERNET_MAX_WIDTH)
    memset(net, 0, sizeof(*net));
    net->row_bytes = PN_NEXT();
    if (PN_BAD(net->row_bytes)) return "the weights file's observation layout is corrupt";
    net->twin = puffernet_word(bytes, at++);
    net->twin_encodes = PN_NEXT();
    net->twin_width = PN_NEXT();
    net->num_params = PN_NEXT();
    if (net->num_params < 0 || net->num_params > PUFFERNET_MAX_PARAMS) return "the weights file's twin is corrupt";
    for (int i = 0; i < net->num_params; i++) net->params[i] = PN_NEXT();
    int twin_floats = PN_NEXT();
    if (twin_floats < 0 || (net->twin_encodes != 0 && net->twin_encodes != 1) || PN_BAD(net->twin_width) ||
        (net->twin == 0 && (net->twin_encodes || net->twin_width || net->num_params || twin_floats)) ||
        (net->twin_encodes != (net->twin_width > 0)))
        return "the weights file's twin is corrupt";
    net->twin_floats = (size_t)twin_floats;
#ifndef PUFFERNET_TWIN
    if (net->twin != 0)
        return "the weights are of a policy class with a C twin (policy.h beside its Python module): "
               "#define PUFFERNET_TWIN \"path/to/policy.h\" before including puffernet.h";
#else
    if (net->twin != 0 && net->twin != puffernet_tag(PUFFERNET_TWIN_NAME))
        return "the weights are of a policy class with another C twin than this build's PUFFERNET_TWIN (" PUFFERNET_TWIN
               "): build with the twin beside that policy's module";
#ifndef PUFFERNET_TWIN_ENCODE
    if (net->twin_encodes) return "the weights say the C twin encodes the row, and " PUFFERNET_TWIN " has no encoder";
#endif
#endif
    net->num_leaves = PN_NEXT();
    if (net->num_leaves < 0 || net->num_leaves > PUFFERNET_MAX_LEAVES || (net->num_leaves == 0) != net->twin_encodes)
        return "the weights file's observation layout is corrupt";
    for (int i = 0; i < net->num_leaves; i++) {
        PufferNetLeaf *leaf = &net->leaves[i];
        leaf->dtype = PN_NEXT();
        leaf->offset = PN_NEXT();
        leaf->count = PN_NEXT();
        int size = puffernet_dtype_size(leaf->dtype);
        if (size == 0 || PN_BAD(leaf->offset) || leaf->count < 1 || leaf->count > PUFFERNET_MAX_WIDTH ||
            (long)leaf->offset + (long)leaf->count * size > net->row_bytes)
            return "the weights file's observation layout is corrupt";
        net->input_size += leaf->count;
        if (net->input_size > PUFFERNET_MAX_WIDTH) return "the weights file's observation layout is corrupt";
    }
    uint32_t divisor_bits = (uint32_t)PN_NEXT();
    memcpy(&net->divisor, &divisor_bits, 4);
    if (!(net->divisor > 0.0f) || !isfinite(net->divisor)) return "the weights file's observation divisor is corrupt";
    net->num_layers = PN_NEXT();
    if (net->num_layers < 0 || net->num_layers > PUFFERNET_MAX_LAYERS || (net->num_layers == 0) != net->twin_encodes)
        return "the weights file's layers are corrupt";
    size_t need = 0;
    int width = net->twin_encodes ? net->twin_width : net->input_size;
    for (int i = 0; i < net->num_layers; i++) {
        PufferNetLayer *layer = &net->layers[i];
        layer->kind = PN_NEXT();
        layer->in = PN_NEXT();
        layer->out = PN_NEXT();
        layer->activation = PN_NEXT();
        if (layer->kind != PUFFERNET_LINEAR || layer->in != width || layer->out < 1 || PN_BAD(layer->out) ||
            layer->activation < PUFFERNET_IDENTITY || layer->activation > PUFFERNET_RELU)
            return "the weights file's layers are corrupt (or of a kind this puffernet.h does not know)";
        need += (size_t)layer->out * (size_t)layer->in + (size_t)layer->out;
        width = layer->out;
    }
    net->lstm_hidden = PN_NEXT();
    if (net->lstm_hidden < 0 || PN_BAD(net->lstm_hidden)) return "the weights file's LSTM size is corrupt";
    if (net->lstm_hidden > 0) {
        size_t h4 = 4 * (size_t)net->lstm_hidden;
        need += h4 * (size_t)width + h4 * (size_t)net->lstm_hidden + 2 * h4;
        width = net->lstm_hidden;
    }
    net->hidden_size = width;
    net->action_kind = PN_NEXT();
    net->num_heads = PN_NEXT();
    if (net->action_kind < PUFFERNET_DISCRETE || net->action_kind > PUFFERNET_MIXED || net->num_heads < 1 ||
        net->num_heads > PUFFERNET_MAX_HEADS ||
        (net->action_kind == PUFFERNET_MIXED ? net->num_heads < 2
                                             : net->action_kind != PUFFERNET_MULTIDISCRETE && net->num_heads != 1))
        return "the weights file's action heads are corrupt (or of a kind this puffernet.h does not know)";
    for (int i = 0; i < net->num_heads; i++) {
        net->heads[i] = PN_NEXT();
        if (net->heads[i] < 1 || PN_BAD(net->heads[i])) return "the weights file's action heads are corrupt";
        net->logit_size += net->heads[i];
        if (net->logit_size > PUFFERNET_MAX_WIDTH) return "the weights file's action heads are corrupt";
    }
#undef PN_NEXT
#undef PN_BAD
    if (at != header) return "the weights file is corrupt (its header has another length than it says)";
    net->box_size = net->action_kind == PUFFERNET_CONTINUOUS ? net->logit_size
                    : net->action_kind == PUFFERNET_MIXED    ? net->heads[net->num_heads - 1]
                                                             : 0;
    net->mask_width = net->action_kind == PUFFERNET_MIXED ? net->logit_size - net->box_size : net->logit_size;
    net->action_size = net->action_kind == PUFFERNET_CONTINUOUS ? net->logit_size
                       : net->action_kind == PUFFERNET_MIXED    ? net->num_heads - 1 + net->box_size
                                                                : net->num_heads;
    need += (size_t)net->logit_size * (size_t)width + (size_t)net->logit_size + (size_t)width + 1;
    need += (size_t)net->box_size; /* log_std */
    need += net->twin_floats;
    if (need != count) return "the weights file is truncated or corrupt (its tensors do not fit its layers)";
#ifdef PUFFERNET_TWIN
    if (net->twin != 0) {
        const char *why = PUFFERNET_TWIN_CHECK(net, &net->twin_scratch_floats);
        if (why != NULL) return why;
    }
#endif
    *floats = count;
    return NULL;
}

/* The widest vector a forward pass holds: the input, a layer's output, the twin encoder's or the LSTM state. */
static size_t puffernet_widest(const PufferNet *net) {
    size_t widest = (size_t)net->input_size;
    for (int i = 0; i < net->num_layers; i++)
        if ((size_t)net->layers[i].out > widest) widest = (size_t)net->layers[i].out;
    if ((size_t)net->twin_width > widest) widest = (size_t)net->twin_width;
    return (size_t)net->lstm_hidden > widest ? (size_t)net->lstm_hidden : widest;
}

/* Floats of scratch and state after the weights: activations, gates, logits, the twin's scratch, the rows'
 * LSTM state. */
static size_t puffernet_scratch_floats(const PufferNet *net, int max_rows) {
    size_t h = (size_t)net->lstm_hidden;
    return 2 * puffernet_widest(net) + 4 * h + (size_t)net->logit_size + net->twin_scratch_floats +
           2 * h * (size_t)max_rows;
}

/* The struct rounded up so the floats after it stay aligned for any type. */
#define PUFFERNET_STRUCT_BYTES ((sizeof(PufferNet) + 15) / 16 * 16)

/* Bytes of the arena puffernet_load needs for these weights and `max_rows` rows (the env's agents);
 * 0 when the weights are not a valid file (puffernet_load then says why). */
PUFFERNET_API size_t puffernet_arena_bytes(const void *weights, size_t nbytes, int max_rows) {
    PufferNet probe;
    size_t floats = 0;
    if (max_rows < 1 || puffernet_parse(&probe, weights, nbytes, &floats) != NULL) return 0;
    return PUFFERNET_STRUCT_BYTES + 4 * (floats + puffernet_scratch_floats(&probe, max_rows));
}

/* The net in `arena` (at least puffernet_arena_bytes() bytes, aligned like malloc's), with a copy of the
 * weights, so `weights` may be freed afterwards; every row's LSTM state starts at zero. NULL on failure,
 * with *error (if error is not NULL) set to a message that says why. */
PUFFERNET_API PufferNet *puffernet_load(void *arena, size_t arena_bytes, const void *weights, size_t nbytes,
                                        int max_rows, const char **error) {
    PufferNet parsed;
    size_t floats = 0;
    const char *why = max_rows < 1 ? "max_rows must be at least 1" : puffernet_parse(&parsed, weights, nbytes, &floats);
    if (why == NULL && arena == NULL) why = "the arena is NULL";
    if (why == NULL &&
        arena_bytes < PUFFERNET_STRUCT_BYTES + 4 * (floats + puffernet_scratch_floats(&parsed, max_rows)))
        why = "the arena is smaller than puffernet_arena_bytes() asks for";
    if (why == NULL && ((uintptr_t)arena % 16) != 0) why = "the arena must be 16-byte aligned (as malloc returns it)";
    if (why != NULL) {
        if (error != NULL) *error = why;
        return NULL;
    }
    PufferNet *net = (PufferNet *)arena;
    *net = parsed;
    net->max_rows = max_rows;
    float *w = (float *)((unsigned char *)arena + PUFFERNET_STRUCT_BYTES);
    size_t header = puffernet_word((const unsigned char *)weights, 2);
    memcpy(w, (const unsigned char *)weights + 4 * header, 4 * floats);
    const float *p = w;
    for (int i = 0; i < net->num_layers; i++) {
        PufferNetLayer *layer = &net->layers[i];
        layer->weight = p;
        p += (size_t)layer->out * (size_t)layer->in;
        layer->bias = p;
        p += layer->out;
    }
    if (net->lstm_hidden > 0) {
        size_t h4 = 4 * (size_t)net->lstm_hidden;
        net->w_ih = p;
        p += h4 * (size_t)(net->twin_encodes ? net->twin_width : net->layers[net->num_layers - 1].out);
        net->w_hh = p;
        p += h4 * (size_t)net->lstm_hidden;
        net->b_ih = p;
        p += h4;
        net->b_hh = p;
        p += h4;
    }
    net->actor_w = p;
    p += (size_t)net->logit_size * (size_t)net->hidden_size;
    net->actor_b = p;
    p += net->logit_size;
    net->value_w = p;
    p += net->hidden_size;
    net->value_b = p;
    p += 1;
    net->log_std = net->box_size > 0 ? p : NULL;
    p += net->box_size;
    net->twin_w = p;
    float *s = w + floats;
    size_t widest = puffernet_widest(net);
    net->a = s;
    net->b = s + widest;
    net->gates = s + 2 * widest;
    net->logits = net->gates + 4 * (size_t)net->lstm_hidden;
    net->twin_scratch = net->logits + net->logit_size;
    net->h = net->twin_scratch + net->twin_scratch_floats;
    net->c = net->h + (size_t)net->lstm_hidden * (size_t)max_rows;
    memset(net->h, 0, 2 * sizeof(float) * (size_t)net->lstm_hidden * (size_t)max_rows);
    return net;
}

/* Zero the LSTM state of `row` (an episode starts there), or of every row when row < 0. */
PUFFERNET_API void puffernet_reset(PufferNet *net, int row) {
    size_t h = (size_t)net->lstm_hidden;
    if (h == 0) return;
    if (row < 0) {
        memset(net->h, 0, 2 * sizeof(float) * h * (size_t)net->max_rows);
    } else if (row < net->max_rows) {
        memset(net->h + h * (size_t)row, 0, sizeof(float) * h);
        memset(net->c + h * (size_t)row, 0, sizeof(float) * h);
    }
}

static float puffernet_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

static float puffernet_element(const unsigned char *at, int dtype) {
    switch (dtype) {
    case PUFFERNET_U8:
        return (float)*at;
    case PUFFERNET_I8:
        return (float)(int8_t)*at;
    case PUFFERNET_I16: {
        int16_t v;
        memcpy(&v, at, 2);
        return (float)v;
    }
    case PUFFERNET_I32: {
        int32_t v;
        memcpy(&v, at, 4);
        return (float)v;
    }
    case PUFFERNET_F64: {
        double v;
        memcpy(&v, at, 8);
        return (float)v;
    }
    default: {
        float v;
        memcpy(&v, at, 4);
        return v;
    }
    }
}

/* The encoder's output for one row: the Default MLP over the leaves, or the twin's encoder. */
static const float *puffernet_encode(PufferNet *net, const unsigned char *obs) {
    float *x = net->a, *y = net->b;
#ifdef PUFFERNET_TWIN_ENCODE
    if (net->twin_encodes) {
        PUFFERNET_TWIN_ENCODE(net, obs, x);
        return x;
    }
#endif
    int n = 0;
    for (int l = 0; l < net->num_leaves; l++) {
        const PufferNetLeaf *leaf = &net->leaves[l];
        int size = puffernet_dtype_size(leaf->dtype);
        for (int i = 0; i < leaf->count; i++) x[n++] = puffernet_element(obs + leaf->offset + i * size, leaf->dtype);
    }
    if (net->divisor != 1.0f)
        for (int i = 0; i < n; i++) x[i] /= net->divisor;
    for (int l = 0; l < net->num_layers; l++) {
        const PufferNetLayer *layer = &net->layers[l];
        puffernet_linear(layer->weight, layer->bias, x, layer->in, layer->out, y, layer->activation);
        float *t = x;
        x = y;
        y = t;
    }
    return x;
}

/* One row through the net: the logits land in net->logits; returns the value. */
static float puffernet_row(PufferNet *net, int row, const unsigned char *obs) {
    const float *x = puffernet_encode(net, obs);
    if (net->lstm_hidden > 0) {
        int hs = net->lstm_hidden, in = net->twin_encodes ? net->twin_width : net->layers[net->num_layers - 1].out;
        float *h = net->h + (size_t)hs * row, *c = net->c + (size_t)hs * row;
        for (int g = 0; g < 4 * hs; g++) {
            float from_x = puffernet_dot(net->w_ih + (size_t)g * in, x, in, net->b_ih[g]);
            net->gates[g] = from_x + puffernet_dot(net->w_hh + (size_t)g * hs, h, hs, net->b_hh[g]);
        }
        for (int k = 0; k < hs; k++) {
            float i = puffernet_sigmoid(net->gates[k]), f = puffernet_sigmoid(net->gates[hs + k]);
            float g = tanhf(net->gates[2 * hs + k]), o = puffernet_sigmoid(net->gates[3 * hs + k]);
            c[k] = f * c[k] + i * g;
            h[k] = o * tanhf(c[k]);
        }
        x = h;
    }
    puffernet_linear(net->actor_w, net->actor_b, x, net->hidden_size, net->logit_size, net->logits, PUFFERNET_IDENTITY);
#ifdef PUFFERNET_TWIN_TERMS
    if (net->twin != 0) PUFFERNET_TWIN_TERMS(net, obs, x, net->logits);
#endif
    return puffernet_dot(net->value_w, x, net->hidden_size, net->value_b[0]);
}

/* The policy's outputs for `rows` observation rows (row r uses and advances LSTM state r): logits
 * [rows][A] (for Box actions, the mean; log_std is net->log_std) and values [rows]; either may be NULL.
 * Returns 0, or -1 when rows is more than the net was loaded for. */
PUFFERNET_API int puffernet_forward(PufferNet *net, int rows, const void *observations, float *logits, float *values) {
    if (rows < 0 || rows > net->max_rows) return -1;
    const unsigned char *obs = (const unsigned char *)observations;
    for (int r = 0; r < rows; r++) {
        float value = puffernet_row(net, r, obs + (size_t)r * net->row_bytes);
        if (logits != NULL) memcpy(logits + (size_t)r * net->logit_size, net->logits, sizeof(float) * net->logit_size);
        if (values != NULL) values[r] = value;
    }
    return 0;
}

/* One discrete choice from `n` logits: the most likely legal one (rng NULL; the first on ties, like
 * torch.argmax), or a draw from the softmax over the legal ones. `legal` may be NULL (all legal); when
 * none is legal the choice is 0, as torch's argmax over all-masked logits gives. */
static int puffernet_choose(const float *logits, const unsigned char *legal, int n, uint64_t *rng) {
    int best = -1;
    for (int a = 0; a < n; a++)
        if ((legal == NULL || legal[a]) && (best < 0 || logits[a] > logits[best])) best = a;
    if (best < 0) return 0;
    if (rng == NULL) return best;
    double total = 0.0;
    for (int a = 0; a < n; a++)
        if (legal == NULL || legal[a]) total += exp((double)logits[a] - (double)logits[best]);
    double u = (double)ocean_randf(rng) * total, cumulative = 0.0;
    int last = best;
    for (int a = 0; a < n; a++) {
        if (legal != NULL && !legal[a]) continue;
        cumulative += exp((double)logits[a] - (double)logits[best]);
        last = a;
        if (u < cumulative) return a;
    }
    return last; /* u rounded up to the total */
}

/* `n` Box elements from their means and log-stds: a Gaussian draw each, or the means when rng is NULL. */
static void puffernet_gaussian(const float *mean, const float *log_std, int n, float *out, uint64_t *rng) {
    for (int a = 0; a < n; a++) {
        float noise = 0.0f;
        if (rng != NULL) { /* Box-Muller; 1 - u keeps the log's argument in (0, 1] */
            float u1 = 1.0f - ocean_randf(rng), u2 = ocean_randf(rng);
            noise = sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958648f * u2);
        }
        out[a] = mean[a] + expf(log_std[a]) * noise;
    }
}

/* The actions of one row from its logits (see puffernet_sample). */
static void puffernet_pick(const PufferNet *net, const float *logits, const unsigned char *legal, void *actions,
                           int row, uint64_t *rng) {
    if (net->action_kind == PUFFERNET_CONTINUOUS) {
        puffernet_gaussian(logits, net->log_std, net->logit_size, (float *)actions + (size_t)row * net->logit_size,
                           rng);
        return;
    }
    if (net->action_kind == PUFFERNET_MIXED) { /* the choices as floats, then the Box elements */
        float *out = (float *)actions + (size_t)row * net->action_size;
        int choices = net->num_heads - 1, at = 0;
        for (int k = 0; k < choices; k++) {
            out[k] = (float)puffernet_choose(logits + at, legal != NULL ? legal + at : NULL, net->heads[k], rng);
            at += net->heads[k];
        }
        puffernet_gaussian(logits + at, net->log_std, net->box_size, out + choices, rng);
        return;
    }
    int32_t *out = (int32_t *)actions + (size_t)row * net->num_heads;
    int at = 0;
    for (int k = 0; k < net->num_heads; k++) {
        out[k] = puffernet_choose(logits + at, legal != NULL ? legal + at : NULL, net->heads[k], rng);
        at += net->heads[k];
    }
}

/* Actions from logits that puffernet_forward gave for `rows` rows: int32 per sub-action ([rows][heads])
 * for Discrete and MultiDiscrete nets, float32 per dimension ([rows][A]) for Box nets, float32 rows of the
 * choices then the Box elements ([rows][action_size]) for mixed nets. `masks` ([rows][mask_width] bytes,
 * 1 = legal, as an Ocean env's action_masks; a mixed net's cover its discrete heads) may be NULL. rng: the
 * caller's xorshift64* state (an Ocean env's env->rng) to sample, or NULL for the argmax (the mean for Box). */
PUFFERNET_API void puffernet_sample(const PufferNet *net, int rows, const float *logits, const unsigned char *masks,
                                    void *actions, uint64_t *rng) {
    for (int r = 0; r < rows; r++) {
        const unsigned char *legal = masks != NULL ? masks + (size_t)r * net->mask_width : NULL;
        puffernet_pick(net, logits + (size_t)r * net->logit_size, legal, actions, r, rng);
    }
}

/* puffernet_forward and puffernet_sample in one pass, without a logits buffer: what an env calls each
 * step. Returns 0, or -1 when rows is more than the net was loaded for. */
PUFFERNET_API int puffernet_act(PufferNet *net, int rows, const void *observations, const unsigned char *masks,
                                void *actions, uint64_t *rng) {
    if (rows < 0 || rows > net->max_rows) return -1;
    const unsigned char *obs = (const unsigned char *)observations;
    for (int r = 0; r < rows; r++) {
        puffernet_row(net, r, obs + (size_t)r * net->row_bytes);
        const unsigned char *legal = masks != NULL ? masks + (size_t)r * net->mask_width : NULL;
        puffernet_pick(net, net->logits, legal, actions, r, rng);
    }
    return 0;
}

#endif /* PUFFERNET_H */
