/* Spaces: structured observations and actions. Each one-step episode shows a 5x5 binary image
 * (float32) and a vector of 5 values in {-1, 0, 1} (int8), and takes two discrete answers: for the
 * vector "is its sum positive?" and for the image "are more than half the pixels on?". Each right
 * answer pays 0.5, so a full score needs every subspace decoded and every sub-action used.
 *
 * The row layout is the packed numpy structured dtype pufferlib.emulation derives from the native
 * Dict space (keys sorted: 'flat' int8[5] at byte 0, then 'image' float32[5, 5] at byte 5), so the
 * model nativizes Ocean and emulated rows the same way. The image is unaligned inside the row, hence
 * memcpy rather than float stores. The flat action is MultiDiscrete([2, 2]) in the same key order. */
#include "ocean.h"
#include "spec.h"

/* SP_FLAT (5) and SP_IMAGE (25) come from spec.toml: they size the row */

typedef struct Spaces {
    OCEAN_SLOTS(unsigned char);
    SpacesConfig cfg;  /* options (spec.toml) */
    signed char flat[SP_FLAT];
    float image[SP_IMAGE];
    int flat_answer, image_answer;
    int last_flat_action, last_image_action;
} Spaces;

static int c_init(Spaces *env) {
    env->last_flat_action = env->last_image_action = -1;
    return 0;
}

static void spaces_new_episode(Spaces *env) {
    uint32_t bits = ocean_rand(&env->rng), digits = ocean_rand(&env->rng);
    int on = 0, sum = 0;
    for (int i = 0; i < SP_IMAGE; i++) {
        int b = (bits >> i) & 1;
        env->image[i] = (float)b;
        on += b;
    }
    for (int i = 0; i < SP_FLAT; i++) {  /* base-3 digits of one draw: 3^5 is far below 2^32 */
        env->flat[i] = (signed char)((int)(digits % 3) - 1);
        digits /= 3;
        sum += env->flat[i];
    }
    env->flat_answer = sum > 0;
    env->image_answer = on > SP_IMAGE / 2;
    memcpy(env->observations, env->flat, SP_FLAT);
    memcpy(env->observations + SP_FLAT, env->image, sizeof(env->image));
}

static void c_reset(Spaces *env) { spaces_new_episode(env); }

static void c_step(Spaces *env) {
    int flat_action = ocean_clamp(env->actions[0], 2), image_action = ocean_clamp(env->actions[1], 2);
    int right_flat = flat_action == env->flat_answer, right_image = image_action == env->image_answer;
    float reward = 0.5f * (float)(right_flat + right_image);
    env->rewards[0] = reward;
    env->terminals[0] = 1;
    env->truncations[0] = 0;
    env->last_flat_action = flat_action;
    env->last_image_action = image_action;
    ocean_log_episode(&env->log, reward, 1.0f, (float)(right_flat + right_image), reward);
    spaces_new_episode(env);
}

static void c_frame_shape(Spaces *env, int *h, int *w) {
    *h = 60;
    *w = 90;
}

static void c_render_rgb(Spaces *env, unsigned char *frame) {
    static const unsigned char on[3] = {230, 230, 230}, neg[3] = {200, 40, 40}, zero[3] = {60, 60, 60},
                               pos[3] = {40, 200, 40};
    for (int i = 0; i < SP_IMAGE; i++)
        if (env->image[i] > 0) ocean_fill_rect(frame, 60, 90, 5 + 10 * (i % 5), 5 + 10 * (i / 5), 9, 9, on);
    for (int i = 0; i < SP_FLAT; i++) {
        const unsigned char *rgb = env->flat[i] < 0 ? neg : env->flat[i] > 0 ? pos : zero;
        ocean_fill_rect(frame, 60, 90, 65, 5 + 10 * i, 20, 9, rgb);
    }
}

static int c_render_text(Spaces *env, char *out, int cap) {
    OceanText t = {out, 0, cap};
    for (int r = 0; r < 5; r++) {
        for (int c = 0; c < 5; c++) ocean_putc(&t, env->image[5 * r + c] > 0 ? '#' : '.');
        ocean_puts(&t, "   ");
        ocean_puts(&t, env->flat[r] < 0 ? "-1" : env->flat[r] > 0 ? "+1" : " 0");
        ocean_putc(&t, '\n');
    }
    ocean_puts(&t, "answers: flat ");
    ocean_puti(&t, env->flat_answer);
    ocean_puts(&t, " image ");
    ocean_puti(&t, env->image_answer);
    ocean_putc(&t, '\n');
    return t.len;
}

static void c_close(Spaces *env) {}
