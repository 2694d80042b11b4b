/* patch/: patch split order, position-embedding interpolation against PyTorch's bicubic, and a
 * whole forward pass at another resolution (--size) against a float64 PyTorch reference. */
#include "tests/testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch/patch.h"
#include "vit/vit.h"

static void test_patch_extract_order(void **state) {
    (void)state;
    /* one 2-channel 4x4 image, value = 100·c + 10·y + x; patch 2 -> 4 patches of 2·2·2 */
    float pixels[2 * 4 * 4], patches[4 * 8];
    for (int c = 0; c < 2; c++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++) pixels[(c * 4 + y) * 4 + x] = 100.0f * c + 10 * y + x;
    patch_extract(patches, pixels, 1, 2, 4, 4, 2);
    /* patch 1 is the top-right one: [C][P][P] = c0 (02 03 12 13), c1 (102 103 112 113) */
    const float top_right[8] = {2, 3, 12, 13, 102, 103, 112, 113};
    assert_memory_equal(patches + 8, top_right, sizeof top_right);
    /* patch 2 starts the second row of patches */
    assert_float_equal(patches[16], 20, 0);
    assert_float_equal(patches[23], 131, 0);
}

static void test_interpolation_matches_pytorch(void **state) {
    (void)state;
    /* grid 2x2 -> 4x4, D = 2; expected from torch.nn.functional.interpolate(mode="bicubic",
     * align_corners=False) in float64 */
    const float pos[5][2] = {{7, 8}, {0, 5}, {1, -1}, {2, 0.5f}, {3, 4}}; /* CLS row first */
    const double want[16][2] = {
        {-0.316406250, 6.213096619}, {0.015625000, 3.888229370},  {0.562500000, 0.059036255},
        {0.894531250, -2.265830994}, {0.347656250, 4.386276245},  {0.679687500, 3.108734131},
        {1.226562500, 1.004547119},  {1.558593750, -0.272994995}, {1.441406250, 1.377395630},
        {1.773437500, 1.824859619},  {2.320312500, 2.561859131},  {2.652343750, 3.009323120},
        {2.105468750, -0.449424744}, {2.437500000, 1.045364380},  {2.984375000, 3.507369995},
        {3.316406250, 5.002159119}};
    float out[17][2];
    pos_embed_interpolate(&out[0][0], &pos[0][0], 1, 2, 4, 2);
    assert_float_equal(out[0][0], 7, 0); /* the CLS position is kept */
    assert_float_equal(out[0][1], 8, 0);
    for (int i = 0; i < 16; i++)
        for (int d = 0; d < 2; d++) assert_float_equal(out[1 + i][d], want[i][d], 1e-6);
    /* same size: an exact copy */
    float same[5][2];
    pos_embed_interpolate(&same[0][0], &pos[0][0], 1, 2, 2, 2);
    assert_memory_equal(same, pos, sizeof pos);
}

/* micro-a (32x32, patch 8) run at 48x48: logits within 1e-4 of tools/gen_size_golden.py's float64
 * PyTorch forward (the same tolerance as the native-size goldens). */
static void test_forward_at_other_size(void **state) {
    (void)state;
    size_t size;
    char *json = (char *)read_whole_file(TEST_DATA "/micro-a-size48.json", &size);
    assert_non_null(json);
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    vit_params params = vit_default_params();
    params.image_size = cJSON_GetObjectItem(root, "size")->valueint;
    vit_error err = {0};
    vit_context *ctx = vit_load(MICRO_A, &params, &err);
    if (!ctx) fail_msg("%s", err.msg);
    assert_int_equal(vit_tokens(ctx), 6 * 6 + 1);
    float *pixels = malloc(sizeof(float) * vit_input_floats(ctx));
    float logits[5];
    int images = 0;
    double worst = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(root, "logits")) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", GOLDEN_IMAGES, item->string);
        if (vit_preprocess_file(ctx, path, pixels, &err) != 0) fail_msg("%s", err.msg);
        assert_int_equal(vit_forward(ctx, pixels, 1, logits, &err), 0);
        assert_int_equal(cJSON_GetArraySize(item), 5);
        for (int i = 0; i < 5; i++) {
            const double d = fabs(logits[i] - cJSON_GetArrayItem(item, i)->valuedouble);
            worst = d > worst ? d : worst;
        }
        images++;
    }
    print_message("  micro-a at 48x48: %d images, max |dlogit| %.3g\n", images, worst);
    assert_int_equal(images, 3);
    assert_true(worst <= 1e-4);
    free(pixels);
    vit_free(ctx);
    cJSON_Delete(root);
    free(json);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch_extract_order),
        cmocka_unit_test(test_interpolation_matches_pytorch),
        cmocka_unit_test(test_forward_at_other_size),
    };
    return cmocka_run_group_tests_name("patch", tests, NULL, NULL);
}
