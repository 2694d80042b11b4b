/* The text encoders' backward (issue 42): RoBERTa, XLM-R, DistilBERT and MPNet as sequence and
 * token classifiers, BERT's token classifier and its pair classifier with two token types, on the
 * micro folders of tools/text_encoders_reference.py. For one padded batch of 3 sequences:
 *   - the loss and every tensor's gradient against PyTorch float64 autograd
 *     (tools/text_train_reference.py, train_golden.safetensors): the loss as the ...For*
 *     Classification classes compute it, cross-entropy on the sequence or on every token whose
 *     label is not -100;
 *   - finite differences (testutil.h's gradcheck_tensor) on sampled elements of every tensor,
 *     without dropout and with every dropout on (the masks drawn again from one seed at each
 *     evaluation, so the loss is a fixed function of the weights): this covers the dropouts the
 *     reference, in eval mode, does not (RobertaClassificationHead's before its dense layer,
 *     BertForTokenClassification's on every row).
 * What each covers: RoBERTa's positions counted from padding_idx + 1 (a wrong position row fails
 * the position table's gradient), the token types of a pair (BERT), DistilBERT's ReLU
 * pre_classifier and absent token types, MPNet's relative position bias (its table's gradient is
 * the sum of every layer's bias gradient over the pairs of each bucket).
 *
 * Tolerance against float64: the gradients of a float32 forward and backward through two post-LN
 * layers; per tensor max |got - want| <= REF_TOL · max(max |want|, 1e-2). Measured at most
 * 2.5e-6 (printed per folder); REF_TOL = 1e-4, a factor 40 of margin. Mutations fail by far more:
 * positions scattered at t instead of RoBERTa's rows, the bias table's gradient left out, ReLU's
 * backward as tanh's. */
#include "tests/testutil.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "vit/core/ops.h"
#include "vit/io/model_dir.h"
#include "vit/model/params.h"
#include "vit/model/text_model.h"

#define REF_TOL    1e-4
#define FD_SAMPLES 10 /* elements per tensor checked by differences */

enum { MAXB = 3, MAXT = 16, MAXK = 8 };

typedef struct {
    const char *dir;
    model m, g;
    text_acts a;
    float *grads;
    int32_t ids[MAXB * MAXT], types[MAXB * MAXT];
    uint8_t mask[MAXB * MAXT];
    int labels[MAXB * MAXT]; /* per sequence, or per token (-100: ignored) */
    int B, T, K, tok, typed, pad;
    float logits[MAXB * MAXT * MAXK], dlogits[MAXB * MAXT * MAXK];
    float p_drop, p_cls;
} grad_case;

static cJSON *train_header(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/train_golden.safetensors", dir);
    size_t size;
    uint8_t *bytes = read_whole_file(path, &size);
    if (!bytes) fail_msg("%s missing (tools/text_train_reference.py writes it)", path);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | bytes[i];
    cJSON *header = cJSON_ParseWithLength((const char *)bytes + 8, (size_t)n);
    free(bytes);
    assert_non_null(header);
    return header;
}

/* rows [B][T] of a JSON list of lists into out; returns T */
static int read_rows(const cJSON *meta, const char *key, int *out, int *B) {
    cJSON *rows = cJSON_Parse(cJSON_GetObjectItem(meta, key)->valuestring);
    assert_non_null(rows);
    *B = cJSON_GetArraySize(rows);
    assert_true(*B <= MAXB);
    int T = 0;
    for (int b = 0; b < *B; b++) {
        const cJSON *row = cJSON_GetArrayItem(rows, b);
        T = cJSON_GetArraySize(row);
        assert_true(T <= MAXT);
        for (int t = 0; t < T; t++) out[b * T + t] = cJSON_GetArrayItem(row, t)->valueint;
    }
    cJSON_Delete(rows);
    return T;
}

static void case_init(grad_case *c, const char *dir) {
    memset(c, 0, sizeof *c);
    c->dir = dir;
    vit_error err = {0};
    if (model_load(&c->m, dir, &err) != 0) fail_msg("%s", err.msg);
    c->K = c->m.cfg.num_labels;
    assert_true(c->K <= MAXK);
    c->tok = c->m.cfg.opt.pool == POOL_TOKENS;
    c->pad = c->m.cfg.pad_token_id;
    cJSON *header = train_header(dir);
    const cJSON *meta = cJSON_GetObjectItem(header, "__metadata__");
    int ids[MAXB * MAXT], B;
    c->T = read_rows(meta, "ids", ids, &c->B);
    for (int i = 0; i < c->B * c->T; i++) c->ids[i] = ids[i];
    if (cJSON_GetObjectItem(meta, "types")) {
        int types[MAXB * MAXT];
        read_rows(meta, "types", types, &B);
        for (int i = 0; i < c->B * c->T; i++) c->types[i] = types[i];
        c->typed = 1;
    }
    /* the reference's mask: a row's tokens up to its last non-padding id */
    for (int b = 0; b < c->B; b++) {
        int len = c->T;
        while (len > 0 && c->ids[b * c->T + len - 1] == c->pad) len--;
        for (int t = 0; t < c->T; t++) c->mask[b * c->T + t] = t < len;
    }
    if (c->tok) {
        read_rows(meta, "labels", c->labels, &B);
    } else {
        cJSON *labels = cJSON_Parse(cJSON_GetObjectItem(meta, "labels")->valuestring);
        for (int b = 0; b < c->B; b++) c->labels[b] = cJSON_GetArrayItem(labels, b)->valueint;
        cJSON_Delete(labels);
    }
    cJSON_Delete(header);
    c->grads = test_alloc_floats(c->m.num_params);
    if (model_bind(&c->g, &c->m, c->grads) != 0 ||
        text_acts_alloc(&c->a, &c->m, c->B, c->T, 1, &err) != 0)
        fail_msg("%s: %s", dir, err.msg);
}

static void case_free(grad_case *c) {
    text_acts_free(&c->a);
    model_unbind(&c->g);
    free(c->grads);
    model_free(&c->m);
}

/* Cross-entropy in double of row z [K] against label y, and (dz: not NULL) its gradient times
 * scale. */
static double row_loss(const float *z, int y, int K, float *dz, double scale) {
    double max = z[0], sum = 0.0;
    for (int k = 1; k < K; k++) max = z[k] > max ? z[k] : max;
    for (int k = 0; k < K; k++) sum += exp(z[k] - max);
    if (dz)
        for (int k = 0; k < K; k++) dz[k] = (float)((exp(z[k] - max) / sum - (k == y)) * scale);
    return log(sum) + max - z[y];
}

/* The training forward (masks from one fixed seed), the mean loss as HF computes it, and with
 * backward its gradients into c->grads (zeroed first). */
static double case_loss(grad_case *c, int backward) {
    vit_error err = {0};
    uint64_t rng = 77;
    const forward_mode mode = {.train = 1,
                               .dropout = c->p_drop,
                               .attention_dropout = c->p_drop,
                               .classifier_dropout = c->p_cls,
                               .rng = &rng};
    if (text_model_forward_typed(&c->m, &c->a, c->ids, c->typed ? c->types : NULL, c->mask, c->B,
                                 c->T, &mode, c->logits, &err) != 0)
        fail_msg("%s: %s", c->dir, err.msg);
    const int rows = c->tok ? c->B * c->T : c->B;
    int counted = 0;
    for (int r = 0; r < rows; r++) counted += c->labels[r] != -100;
    double total = 0.0;
    memset(c->dlogits, 0, sizeof c->dlogits);
    for (int r = 0; r < rows; r++)
        if (c->labels[r] != -100)
            total += row_loss(c->logits + (size_t)r * c->K, c->labels[r], c->K,
                              backward ? c->dlogits + (size_t)r * c->K : NULL, 1.0 / counted);
    if (backward) {
        memset(c->grads, 0, c->m.num_params * sizeof(float));
        text_model_backward(&c->m, &c->g, &c->a, c->dlogits);
    }
    return total / counted;
}

static double loss_only(void *p) {
    return case_loss(p, 0);
}

static void test_against_pytorch(void **state) {
    (void)state;
    static const char *const dirs[] = {
        "tests/data/roberta-seq-micro",    "tests/data/xlmr-seq-micro",
        "tests/data/distilbert-seq-micro", "tests/data/mpnet-seq-micro",
        "tests/data/bert-nli-micro",       "tests/data/roberta-tok-micro",
        "tests/data/xlmr-tok-micro",       "tests/data/distilbert-tok-micro",
        "tests/data/mpnet-tok-micro",      "tests/data/bert-tok-micro"};
    for (size_t f = 0; f < sizeof dirs / sizeof *dirs; f++) {
        grad_case *c = malloc(sizeof *c);
        case_init(c, dirs[f]);
        char path[4096];
        snprintf(path, sizeof path, "%s/train_golden.safetensors", dirs[f]);
        const double loss = case_loss(c, 1);
        float *want_loss = test_read_tensor(path, "loss", NULL);
        assert_non_null(want_loss);
        if (!(fabs(loss - want_loss[0]) <= 1e-5))
            fail_msg("%s: loss %.8f, PyTorch %.8f", dirs[f], loss, want_loss[0]);
        double worst = 0.0;
        for (int i = 0; i < c->m.num_entries; i++) {
            const param_entry *e = &c->m.entries[i];
            /* the reference names a classifier's encoder tensors with the family's prefix */
            static const char *const prefixes[] = {"", "roberta.", "distilbert.", "mpnet.",
                                                   "bert."};
            char name[512];
            size_t n = 0;
            float *want = NULL;
            for (size_t k = 0; !want && k < sizeof prefixes / sizeof *prefixes; k++) {
                snprintf(name, sizeof name, "grad.%s%s", prefixes[k], e->name);
                want = test_read_tensor(path, name, &n);
            }
            if (!want) fail_msg("%s: no %s in the reference", dirs[f], name);
            assert_int_equal(n, e->numel);
            double scale = 1e-2, diff = 0.0;
            for (size_t j = 0; j < n; j++) {
                scale = fmax(scale, fabs(want[j]));
                diff = fmax(diff, fabs(want[j] - c->grads[e->offset + j]));
            }
            if (!(diff <= REF_TOL * scale))
                fail_msg("%s: %s differs from PyTorch by %.3g (largest %.3g)", dirs[f], e->name,
                         diff, scale);
            worst = fmax(worst, diff / scale);
            free(want);
        }
        print_message("  %-34s loss %.6f (PyTorch %.6f), %d tensors, worst %.2e\n", dirs[f], loss,
                      want_loss[0], c->m.num_entries, worst);
        free(want_loss);
        case_free(c);
        free(c);
    }
}

/* Finite differences on FD_SAMPLES elements of every tensor: its largest gradients and evenly
 * spaced others. */
static void check_by_differences(grad_case *c, const char *what) {
    float *analytic = test_alloc_floats(c->m.num_params);
    case_loss(c, 1);
    memcpy(analytic, c->grads, c->m.num_params * sizeof(float));
    double worst = 0.0;
    for (int i = 0; i < c->m.num_entries; i++) {
        const param_entry *e = &c->m.entries[i];
        size_t top = 0;
        for (size_t j = 1; j < e->numel; j++)
            if (fabs(analytic[e->offset + j]) > fabs(analytic[e->offset + top])) top = j;
        for (int s = 0; s < FD_SAMPLES && (size_t)s < e->numel; s++) {
            const size_t j = s == 0 ? top : (size_t)s * e->numel / FD_SAMPLES;
            double max_grad;
            const double err = gradcheck_tensor(
                c->m.params + e->offset + j, analytic + e->offset + j, 1, loss_only, c, &max_grad);
            if (!(err <= GRADCHECK_TOL))
                fail_msg("%s (%s): %s[%zu] gradient %.6g, numeric error %.3g", c->dir, what,
                         e->name, j, analytic[e->offset + j], err);
            worst = fmax(worst, err);
        }
    }
    print_message("  %-34s %-22s worst %.2e over %d tensors\n", c->dir, what, worst,
                  c->m.num_entries);
    free(analytic);
}

static void test_finite_differences(void **state) {
    (void)state;
    static const char *const dirs[] = {
        "tests/data/roberta-seq-micro", "tests/data/distilbert-seq-micro",
        "tests/data/mpnet-seq-micro",   "tests/data/bert-nli-micro",
        "tests/data/roberta-tok-micro", "tests/data/mpnet-tok-micro"};
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1); /* tiny tensors: barriers would cost more than the work */
    for (size_t f = 0; f < sizeof dirs / sizeof *dirs; f++) {
        grad_case *c = malloc(sizeof *c);
        case_init(c, dirs[f]);
        check_by_differences(c, "no dropout");
        c->p_drop = 0.1f, c->p_cls = 0.3f;
        check_by_differences(c, "dropout 0.1, head 0.3");
        case_free(c);
        free(c);
    }
    omp_set_num_threads(threads);
}

/* The dropout before RoBERTa's dense layer is drawn in training: two seeds give two losses, and
 * without it (DistilBERT's head has none before pre_classifier) ... the head's dropout still
 * changes the loss. Eval mode (no dropout) gives the reference's loss. */
static void test_head_dropout_drawn(void **state) {
    (void)state;
    grad_case *c = malloc(sizeof *c);
    case_init(c, "tests/data/roberta-seq-micro");
    const double plain = case_loss(c, 0);
    c->p_cls = 0.5f;
    const double dropped = case_loss(c, 0);
    assert_true(fabs(plain - dropped) > 1e-4);
    c->p_cls = 0.0f;
    assert_true(fabs(case_loss(c, 0) - plain) == 0.0);
    case_free(c);
    free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_pytorch),
        cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_head_dropout_drawn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
