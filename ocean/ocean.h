/* ocean.h: the contract between an Ocean environment and the binding that vectorizes it.
 *
 * An env is one C struct whose first member is OCEAN_SLOTS(obs_type) and which holds `<Name>Config cfg`
 * (the options, generated from ocean/<name>/spec.toml into spec.h). The binding copies the validated
 * options into `cfg`, fills the slots' sizes from the spec and points the slots at the env's own rows
 * of the vector's shared arrays, so the env writes observations, rewards and flags straight into the
 * buffers the trainer reads (no copy, shared memory included).
 *
 * Each env header defines, all `static`:
 *   int  c_init(Env*)          after cfg and slots are set; the only place allowed to allocate. Returns 0,
 *                              or `ocean_fail(env, "message")` (nonzero) when it cannot start, e.g. an
 *                              allocation failed; the message reaches Python as an EnvError
 *   void c_reset(Env*)         start a fresh episode for every agent of this env (uses env->rng)
 *   void c_step(Env*)          read actions, write obs/rewards/terminals/truncations; when an episode
 *                              ends, record it in env->log and reset inside the same call, so the
 *                              observation already belongs to the next episode ("same-step" autoreset)
 *   void c_frame_shape(Env*, int* h, int* w)           size of one RGB frame
 *   void c_render_rgb(Env*, unsigned char* frame)      frame is [frame_h][frame_w][3]
 *   int  c_render_text(Env*, char* out, int cap)       returns the length written (< cap)
 *   void c_close(Env*)         frees what c_init allocated; also called after a failed c_init, so it
 *                              must cope with a half-initialised env (free(NULL) is fine: the env
 *                              struct starts zeroed)
 * and, only where spec.toml declares them (the trainer's [swarm] reads them, docs/training.md):
 *   void c_progress(Env*, double* out)   [[progress]]: this game's milestone counters now, in spec order
 *   uint64_t c_cell(Env*)                cell = "...": this game's Go-Explore cell now (equal = alike)
 * Saved states (binding.h, vec_get_state / vec_set_state): a game's state is its struct by value plus
 * its rows, so an env whose state all lives in its struct has nothing to do. An env with pointer
 * members (memory c_init allocates) lists every one of them, each with the bytes it points to, before
 * binding.h is included:
 *     #define OCEAN_STATE_BLOCKS(X, env) X(grid, (size_t)(env)->rows * (env)->stride) X(body, ...)
 * A saved state then carries those bytes instead of the pointer, and loading copies them into the
 * loading game's own memory (0 bytes for a pointer into another listed block: it is kept as it is).
 * A pointer member that is not listed would be copied as an address: never leave one out, and never
 * point at static data (store an index instead). An env whose struct changes meaning without
 * changing size defines OCEAN_STATE_VERSION (default 1) and bumps it, so old states are refused.
 * Rules: no allocation after c_init, no global or static mutable state (several vectors may live in
 * one process and on several threads), every random draw from env->rng so a seed fixes a run, and
 * actions from the caller are untrusted: clamp them with ocean_clamp before indexing anything, and read
 * Box actions (`box` in the spec: float32 in `cont_actions`) through ocean_cont_action. A mixed action
 * (`mixed = true`: spec.h's OCEAN_ACTION_MIXED) is one float32 row in `cont_actions`: its first
 * ocean_spec_discrete_size(&cfg) elements are discrete choices, read with ocean_choice, the rest Box
 * elements, read with ocean_cont_action.
 */
#ifndef OCEAN_H
#define OCEAN_H

#include <stdint.h>
#include <string.h>
/* sinf, cosf, erff, tanhf and exp computed the same way on every platform (the browser build included), so
 * a seed and the actions fix the game bit for bit wherever it is built. */
#include "ocean_math.h"

/* Episode statistics. Envs add one completed episode at a time; the binding sums the logs of all
 * envs in a vector, divides by n and zeroes them, so every field is "mean over finished episodes".
 * Plain floats only: the binding walks it as an array. An env's own fields ([[log]] in its spec.toml)
 * come from spec.h as OCEAN_LOG_EXTRA; it adds to them (env->log.<name> += ...) next to its
 * ocean_log_episode call. Without them Log is the five fields below. */
#ifndef OCEAN_LOG_EXTRA
#define OCEAN_LOG_EXTRA
#define OCEAN_LOG_EXTRA_NAMES
#endif
typedef struct Log {
    float episode_return;  /* summed reward of the episode (per agent) */
    float episode_length;  /* steps */
    float score;           /* env-specific raw score: points, bricks, targets, length, ... */
    float perf;            /* normalised success in [0, 1]: 1 means solved */
    /* the spec's [[log]] fields */
    OCEAN_LOG_EXTRA
    float n;               /* number of episodes added; must stay last */
} Log;
#define OCEAN_LOG_FIELDS {"episode_return", "episode_length", "score", "perf", OCEAN_LOG_EXTRA_NAMES "n"}
#define OCEAN_LOG_COUNT ((int)(sizeof(Log) / sizeof(float)))

/* The slots every env struct starts with. The binding fills all of them before c_init: the pointers
 * (this env's rows), the sizes (computed from the spec: agents per env instance, elements per
 * observation row, elements per action row) and rng.
 * masks: row liveness, Python's `env.masks` [rows]: 1 when an agent acts in the row on this step. The
 *   binding sets every row live before each c_reset; an env whose rows all act on every step never
 *   touches it, a turn-based env (ocean/seats.h) writes it in c_reset and after every c_step, and a
 *   trainer leaves the steps of rows that are not live out of its losses.
 * action_masks: NULL unless the spec says `mask = true` under [action]; then the env writes 1 (legal)
 *   or 0 for every action of every agent, in c_reset and after every c_step, and Python reads them as
 *   `env.action_masks` [rows, n_actions]. */
#define OCEAN_SLOTS(obs_type)                                                                 \
    obs_type *observations;        /* [num_agents * obs_size] */                              \
    int32_t *actions;              /* [num_agents * act_size]; NULL with Box/mixed actions */ \
    float *cont_actions;           /* [num_agents * act_size] Box/mixed actions; else NULL */ \
    float *rewards;                /* [num_agents] */                                         \
    unsigned char *terminals;      /* [num_agents] numpy bool: one byte, 0 or 1 */            \
    unsigned char *truncations;                                                               \
    unsigned char *masks;          /* [num_agents] 1 = live (acts this step); see above */    \
    unsigned char *action_masks;   /* [num_agents * n_actions], 1 = legal; NULL: no mask */   \
    int num_agents;                                                                           \
    int obs_size;                                                                             \
    int act_size;                                                                             \
    uint64_t rng;                                                                             \
    const char *error;             /* set by ocean_fail: why c_init failed */                 \
    Log log

/* c_init's way to fail: `if (!env->board) return ocean_fail(env, "out of memory for the board");`
 * The message must be a string literal (or otherwise outlive the call). */
#define ocean_fail(env, message) ((env)->error = (message), -1)

/* The action helpers below are the only way envs read actions: out-of-range values from a buggy
 * policy are clamped, never used as an index. */
static inline int ocean_clamp(int32_t a, int n) { return a < 0 ? 0 : (a >= n ? n - 1 : (int)a); }

/* A Box action element in [lo, hi]. Policies sample Gaussians, so values past the bounds are normal
 * and clamp; NaN (step() refuses it, but anything sharing the buffer can write one) reads as the middle
 * of the range, so no NaN reaches the physics and no float-to-int conversion of it is ever undefined. */
static inline float ocean_clampf(float a, float lo, float hi) {
    return a >= lo ? (a <= hi ? a : hi) : (a < lo ? lo : 0.5f * (lo + hi));
}

/* A discrete choice in [0, n) carried as a float (a mixed action's discrete columns): clamped like
 * ocean_clamp, its fraction dropped, and NaN read as 0, so no float-to-int conversion is ever undefined. */
static inline int ocean_choice(float a, int n) { return a >= 0.0f ? (a < (float)n ? (int)a : n - 1) : 0; }

/* Element i of this env's Box action row(s), clamped to the spec's [low, high]. */
#define ocean_cont_action(env, i) ocean_clampf((env)->cont_actions[i], OCEAN_ACTION_LOW, OCEAN_ACTION_HIGH)

/* splitmix64: a seed per env from (vector seed, env index), so env i's stream does not depend on how
 * many envs share its vector. */
static inline uint64_t ocean_seed_mix(uint64_t seed, uint64_t index) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ULL + index + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 0x2545F4914F6CDD1DULL;  /* xorshift must never hold 0 */
}

/* xorshift64*: one multiply and three shifts per draw; plenty for envs, and cheap enough that random
 * spawns do not show up in a profile. */
static inline uint32_t ocean_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Uniform integer in [0, n) by multiply-shift (Lemire) without the rejection step: the bias is below
 * n / 2^32, invisible for the small n used here, and it avoids a division. */
static inline int ocean_randint(uint64_t *s, int n) { return (int)(((uint64_t)ocean_rand(s) * (uint64_t)n) >> 32); }

/* Uniform float in [0, 1). */
static inline float ocean_randf(uint64_t *s) { return (ocean_rand(s) >> 8) * (1.0f / 16777216.0f); }

static inline void ocean_log_episode(Log *log, float ret, float len, float score, float perf) {
    log->episode_return += ret;
    log->episode_length += len;
    log->score += score;
    log->perf += perf;
    log->n += 1.0f;
}

/* ---- rendering helpers: rendering is off the hot path, so clarity wins over speed here ---- */

static inline void ocean_fill_rect(unsigned char *frame, int fh, int fw, int x, int y, int w, int h,
                                   const unsigned char rgb[3]) {
    int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    int x1 = x + w > fw ? fw : x + w, y1 = y + h > fh ? fh : y + h;
    for (int r = y0; r < y1; r++)
        for (int c = x0; c < x1; c++) {
            unsigned char *p = frame + 3 * (r * fw + c);
            p[0] = rgb[0];
            p[1] = rgb[1];
            p[2] = rgb[2];
        }
}

/* Paint a grid of palette indices, one cell = `scale` x `scale` pixels. */
static inline void ocean_render_grid(unsigned char *frame, const unsigned char *cells, int rows, int cols, int stride,
                                     int scale, const unsigned char (*palette)[3], int palette_n) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            int v = cells[r * stride + c];
            v = v < 0 ? 0 : (v >= palette_n ? palette_n - 1 : v);
            ocean_fill_rect(frame, rows * scale, cols * scale, c * scale, r * scale, scale, scale, palette[v]);
        }
}

/* Bounded text writer: render code appends without tracking the remaining capacity itself. */
typedef struct OceanText {
    char *out;
    int len, cap;
} OceanText;

static inline void ocean_putc(OceanText *t, char c) {
    if (t->len < t->cap - 1) t->out[t->len++] = c;
    t->out[t->len] = '\0';
}

static inline void ocean_puts(OceanText *t, const char *s) {
    while (*s) ocean_putc(t, *s++);
}

static inline void ocean_puti(OceanText *t, long v) {
    char tmp[24];
    int n = 0;
    int neg = v < 0;
    unsigned long u = neg ? (unsigned long)(-(v + 1)) + 1 : (unsigned long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (neg) ocean_putc(t, '-');
    while (n) ocean_putc(t, tmp[--n]);
}

/* Text rows of a grid through a character table. */
static inline void ocean_text_grid(OceanText *t, const unsigned char *cells, int rows, int cols, int stride,
                                   const char *chars, int chars_n) {
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < cols; c++) {
            int v = cells[r * stride + c];
            ocean_putc(t, chars[v < chars_n ? v : chars_n - 1]);
        }
        ocean_putc(t, '\n');
    }
}

#endif
