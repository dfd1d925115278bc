/* ocean/mmo/policy.h: the C twin of policy.py, puffer_mmo's own policy, for ocean/puffernet.h (which says
 * how a twin reaches it: a build defines PUFFERNET_TWIN as this file's path before including puffernet.h;
 * a page built by `puffer web` and `puffer eval --native` do). It encodes the row itself (the embedded
 * crops, the entity rows pooled, the own state, the mixing layer) and, after puffernet.h's heads, adds
 * the pointer term to the target head: both configs, the linear crop (channels 0) and the convolutions.
 * tests/test_export.py holds it to policy.py's logits within 1e-5.
 *
 * Its parameters, in policy.py's NATIVE_TWIN order: hidden, embed, channels, entity size, then the
 * observation layout (crop side, entity rows, features per row, own-state bytes) and the category counts
 * (terrains, things, kinds, stances). Its tensors, in the same order: the terrain and things embeddings;
 * the crop encoder (linear: W, b; convolutions: conv1 W, b, conv2 W, b, linear W, b); the kind and stance
 * embeddings; the entity MLP (W, b, W, b); own (W, b); mix (W, b); query (W, b).
 */
#ifndef MMO_POLICY_H
#define MMO_POLICY_H

enum {
    MMO_HIDDEN,
    MMO_EMBED,
    MMO_CHANNELS,
    MMO_ENTITY,
    MMO_SIDE,
    MMO_ENTS,
    MMO_EFEAT,
    MMO_SELF,
    MMO_TERRAINS,
    MMO_THINGS,
    MMO_KINDS,
    MMO_STANCES,
    MMO_PARAMS
};
#define MMO_KIND_EMBED 8   /* policy.py: nn.Embedding(KINDS, 8) */
#define MMO_STANCE_EMBED 4 /* and nn.Embedding(STANCES, 4) */
#define MMO_ENTITY_IN (MMO_KIND_EMBED + MMO_STANCE_EMBED + 5)
#define MMO_TARGET_HEAD 2 /* move, style, target, use */

/* Where the twin's tensors and its one-row scratch sit; computed from the params on every call (a few
 * multiplications against the matrix products of a row). */
typedef struct MmoPolicy {
    int hidden, embed, channels, entity, side, crop, half, ents, efeat, self;
    int terrains, things, kinds, stances, flat; /* flat: the crop encoder's linear input width */
    const float *terrain, *thing, *conv1_w, *conv1_b, *conv2_w, *conv2_b, *crop_w, *crop_b, *kind, *stance;
    const float *entity1_w, *entity1_b, *entity2_w, *entity2_b, *own_w, *own_b, *mix_w, *mix_b, *query_w, *query_b;
    unsigned long long floats; /* the tensors' total; 64 bits, so a corrupt file's sizes cannot wrap */
    float *mix_in;             /* [hidden + 3 entity]: crop, mean, max, own */
    float *rows;               /* [ents][entity]: what the pointer scores */
    float *ent_in, *ent_mid, *own_in;
    float *tiles; /* the crop's embeddings: [crop][embed], or [embed][side][side] for the convolutions */
    float *conv1, *patch, *conv2, *query;
    unsigned long long scratch; /* the scratch's total */
} MmoPolicy;

/* The next `n` floats of `base` (NULL while only sizes are wanted). */
static const float *mmo_policy_take(const float *base, unsigned long long *at, unsigned long long n) {
    const float *p = base != NULL ? base + *at : NULL;
    *at += n;
    return p;
}

static float *mmo_policy_room(float *base, unsigned long long *at, unsigned long long n) {
    float *p = base != NULL ? base + *at : NULL;
    *at += n;
    return p;
}

/* The layout of the twin's tensors and scratch for these params; weights and scratch may be NULL (sizes
 * only). */
static void mmo_policy_layout(MmoPolicy *m, const int *p, const float *weights, float *scratch) {
    typedef unsigned long long u64;
    m->hidden = p[MMO_HIDDEN];
    m->embed = p[MMO_EMBED];
    m->channels = p[MMO_CHANNELS];
    m->entity = p[MMO_ENTITY];
    m->side = p[MMO_SIDE];
    m->crop = m->side * m->side;
    m->half = (m->side + 1) / 2;
    m->ents = p[MMO_ENTS];
    m->efeat = p[MMO_EFEAT];
    m->self = p[MMO_SELF];
    m->terrains = p[MMO_TERRAINS];
    m->things = p[MMO_THINGS];
    m->kinds = p[MMO_KINDS];
    m->stances = p[MMO_STANCES];
    m->flat = m->channels ? m->channels * m->half * m->half : m->crop * m->embed;
    u64 at = 0, H = (u64)m->hidden, E = (u64)m->entity, C = (u64)m->channels;
    m->terrain = mmo_policy_take(weights, &at, (u64)m->terrains * m->embed);
    m->thing = mmo_policy_take(weights, &at, (u64)m->things * m->embed);
    m->conv1_w = m->conv1_b = m->conv2_w = m->conv2_b = NULL;
    if (m->channels) {
        m->conv1_w = mmo_policy_take(weights, &at, C * m->embed * 9);
        m->conv1_b = mmo_policy_take(weights, &at, C);
        m->conv2_w = mmo_policy_take(weights, &at, C * C * 9);
        m->conv2_b = mmo_policy_take(weights, &at, C);
    }
    m->crop_w = mmo_policy_take(weights, &at, H * (u64)m->flat);
    m->crop_b = mmo_policy_take(weights, &at, H);
    m->kind = mmo_policy_take(weights, &at, (u64)m->kinds * MMO_KIND_EMBED);
    m->stance = mmo_policy_take(weights, &at, (u64)m->stances * MMO_STANCE_EMBED);
    m->entity1_w = mmo_policy_take(weights, &at, E * MMO_ENTITY_IN);
    m->entity1_b = mmo_policy_take(weights, &at, E);
    m->entity2_w = mmo_policy_take(weights, &at, E * E);
    m->entity2_b = mmo_policy_take(weights, &at, E);
    m->own_w = mmo_policy_take(weights, &at, E * (u64)m->self);
    m->own_b = mmo_policy_take(weights, &at, E);
    m->mix_w = mmo_policy_take(weights, &at, H * (H + 3 * E));
    m->mix_b = mmo_policy_take(weights, &at, H);
    m->query_w = mmo_policy_take(weights, &at, E * H);
    m->query_b = mmo_policy_take(weights, &at, E);
    m->floats = at;
    at = 0;
    m->mix_in = mmo_policy_room(scratch, &at, H + 3 * E);
    m->rows = mmo_policy_room(scratch, &at, (u64)m->ents * E);
    m->ent_in = mmo_policy_room(scratch, &at, MMO_ENTITY_IN);
    m->ent_mid = mmo_policy_room(scratch, &at, E);
    m->own_in = mmo_policy_room(scratch, &at, (u64)m->self);
    m->tiles = mmo_policy_room(scratch, &at, (u64)m->crop * m->embed);
    m->conv1 = mmo_policy_room(scratch, &at, C * m->crop);
    m->patch = mmo_policy_room(scratch, &at, 9 * (u64)(m->channels > m->embed ? m->channels : m->embed));
    m->conv2 = mmo_policy_room(scratch, &at, C ? (u64)m->flat : 0);
    m->query = mmo_policy_room(scratch, &at, E);
    m->scratch = at;
}

static const char *mmo_policy_check(const PufferNet *net, size_t *scratch) {
    const int *p = net->params;
    if (net->num_params != MMO_PARAMS) return "the weights do not fit puffer_mmo's policy twin (its params)";
    /* Bounds that keep every int product of the layout far from overflow (the crop side above 255 would
     * not fit the row anyway). */
    for (int i = 0; i < MMO_PARAMS; i++)
        if (p[i] < (i == MMO_CHANNELS ? 0 : 1) || p[i] > (i == MMO_SIDE ? 255 : 4096))
            return "the weights do not fit puffer_mmo's policy twin (a param is out of range)";
    MmoPolicy m;
    mmo_policy_layout(&m, p, NULL, NULL);
    if (!net->twin_encodes || net->twin_width != m.hidden || net->hidden_size != m.hidden ||
        net->row_bytes != 2 * m.crop + m.ents * m.efeat + m.self || m.efeat < 8 ||
        (unsigned long long)net->twin_floats != m.floats || m.scratch > PUFFERNET_MAX_WIDTH * 16ull)
        return "the weights do not fit puffer_mmo's policy twin (its observation row, widths or tensors)";
    if (net->action_kind != PUFFERNET_MULTIDISCRETE || net->num_heads <= MMO_TARGET_HEAD ||
        net->heads[MMO_TARGET_HEAD] != m.ents)
        return "the weights do not fit puffer_mmo's policy twin (its target head is not one logit per entity row)";
    *scratch = (size_t)m.scratch;
    return NULL;
}

static int mmo_policy_clamp(int v, int n) { return v < 0 ? 0 : (v >= n ? n - 1 : v); }

/* torch's Conv2d (3x3, padding 1) of `in` [cin][size][size] to out [cout][osize][osize], then GELU: each
 * output pixel's 3x3 patch gathered once (zeros off the edge, as the padding), then one dot per channel. */
static void mmo_policy_conv(const float *w, const float *b, const float *in, int cin, int size, int stride, int cout,
                            float *patch, float *out) {
    int osize = (size - 1) / stride + 1;
    for (int oy = 0; oy < osize; oy++) {
        for (int ox = 0; ox < osize; ox++) {
            for (int c = 0; c < cin; c++) {
                for (int ky = 0; ky < 3; ky++) {
                    for (int kx = 0; kx < 3; kx++) {
                        int y = oy * stride + ky - 1, x = ox * stride + kx - 1;
                        int inside = y >= 0 && y < size && x >= 0 && x < size;
                        patch[(c * 3 + ky) * 3 + kx] = inside ? in[((size_t)c * size + y) * size + x] : 0.0f;
                    }
                }
            }
            for (int o = 0; o < cout; o++) {
                float z = puffernet_dot(w + (size_t)o * cin * 9, patch, cin * 9, b[o]);
                out[((size_t)o * osize + oy) * osize + ox] = puffernet_activate(z, PUFFERNET_GELU);
            }
        }
    }
}

static void mmo_policy_encode(const PufferNet *net, const unsigned char *row, float *hidden) {
    MmoPolicy m;
    mmo_policy_layout(&m, net->params, net->twin_w, net->twin_scratch);
    int E = m.entity, H = m.hidden;

    /* The crop: each tile's terrain and thing embeddings summed; tile-major for the linear encoder,
     * channel-major (an image per embedding dimension) for the convolutions. */
    for (int i = 0; i < m.crop; i++) {
        const float *t = m.terrain + (size_t)mmo_policy_clamp(row[i], m.terrains) * m.embed;
        const float *u = m.thing + (size_t)mmo_policy_clamp(row[m.crop + i], m.things) * m.embed;
        for (int e = 0; e < m.embed; e++) {
            size_t at = m.channels ? (size_t)e * m.crop + i : (size_t)i * m.embed + e;
            m.tiles[at] = t[e] + u[e];
        }
    }
    const float *flat = m.tiles;
    if (m.channels) {
        mmo_policy_conv(m.conv1_w, m.conv1_b, m.tiles, m.embed, m.side, 1, m.channels, m.patch, m.conv1);
        mmo_policy_conv(m.conv2_w, m.conv2_b, m.conv1, m.channels, m.side, 2, m.channels, m.patch, m.conv2);
        flat = m.conv2;
    }
    puffernet_linear(m.crop_w, m.crop_b, flat, m.flat, H, m.mix_in, PUFFERNET_GELU);

    /* Entity rows through the shared MLP, zeroed where the row is empty; pooled by mean and max. */
    const unsigned char *ents = row + 2 * m.crop;
    float *mean = m.mix_in + H, *max = mean + E, count = 0.0f;
    for (int d = 0; d < E; d++) mean[d] = 0.0f;
    for (int k = 0; k < m.ents; k++) {
        const unsigned char *f = ents + (size_t)k * m.efeat;
        float valid = (float)f[0];
        memcpy(m.ent_in, m.kind + (size_t)mmo_policy_clamp(f[1], m.kinds) * MMO_KIND_EMBED,
               sizeof(float) * MMO_KIND_EMBED);
        memcpy(m.ent_in + MMO_KIND_EMBED, m.stance + (size_t)mmo_policy_clamp(f[6], m.stances) * MMO_STANCE_EMBED,
               sizeof(float) * MMO_STANCE_EMBED);
        float *numeric = m.ent_in + MMO_KIND_EMBED + MMO_STANCE_EMBED;
        numeric[0] = ((float)f[2] - 5.0f) / 5.0f;
        numeric[1] = ((float)f[3] - 5.0f) / 5.0f;
        numeric[2] = (float)f[4] / 100.0f;
        numeric[3] = (float)f[5] / 10.0f;
        numeric[4] = (float)f[7] / 5.0f;
        float *out = m.rows + (size_t)k * E;
        puffernet_linear(m.entity1_w, m.entity1_b, m.ent_in, MMO_ENTITY_IN, E, m.ent_mid, PUFFERNET_GELU);
        puffernet_linear(m.entity2_w, m.entity2_b, m.ent_mid, E, E, out, PUFFERNET_GELU);
        for (int d = 0; d < E; d++) {
            out[d] *= valid;
            mean[d] += out[d];
            float masked = out[d] - 1e4f * (1.0f - valid);
            if (k == 0 || masked > max[d]) max[d] = masked;
        }
        count += valid;
    }
    if (count < 1.0f) count = 1.0f;
    for (int d = 0; d < E; d++) {
        mean[d] /= count;
        if (!(max[d] > 0.0f)) max[d] = 0.0f;
    }

    /* The own state, scaled as policy.py does, then everything mixed into the hidden state. */
    const unsigned char *own = ents + (size_t)m.ents * m.efeat;
    for (int j = 0; j < m.self; j++) m.own_in[j] = (float)own[j] / 100.0f;
    puffernet_linear(m.own_w, m.own_b, m.own_in, m.self, E, max + E, PUFFERNET_GELU);
    puffernet_linear(m.mix_w, m.mix_b, m.mix_in, H + 3 * E, H, hidden, PUFFERNET_GELU);
}

/* The pointer: each entity row of this observation (left in the scratch by the encoder) scored against a
 * query from the heads' input, scaled by 1/sqrt(entity size) as policy.py's `scale`, added to the target
 * head's logits. */
static void mmo_policy_terms(const PufferNet *net, const unsigned char *row, const float *hidden, float *logits) {
    (void)row;
    MmoPolicy m;
    mmo_policy_layout(&m, net->params, net->twin_w, net->twin_scratch);
    float scale = (float)(1.0 / sqrt((double)m.entity));
    puffernet_linear(m.query_w, m.query_b, hidden, m.hidden, m.entity, m.query, PUFFERNET_IDENTITY);
    int at = 0;
    for (int k = 0; k < MMO_TARGET_HEAD; k++) at += net->heads[k];
    for (int k = 0; k < m.ents; k++)
        logits[at + k] += puffernet_dot(m.rows + (size_t)k * m.entity, m.query, m.entity, 0.0f) * scale;
}

#define PUFFERNET_TWIN_NAME "puffer_mmo"
#define PUFFERNET_TWIN_CHECK mmo_policy_check
#define PUFFERNET_TWIN_ENCODE mmo_policy_encode
#define PUFFERNET_TWIN_TERMS mmo_policy_terms

#endif
