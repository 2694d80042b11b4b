/* The ceiling oneDNN's products set for `vit bench`: oneDNN's matmul alone on the weight products
 * of one ViT forward pass (per layer: qkv, attention output, MLP up and down, each [B·T, in] x
 * [in, out]) in fp32, bf16 (bf16 in and out) and int8 (u8 x s8 -> s32, as vit's int8 layers run
 * them before their own dequantisation), every layer with its own weights so that they come from
 * memory as in a real pass. Prints each precision's GFLOP/s (G integer ops for int8) and the
 * images/s a forward pass could not exceed if the attention, norms and everything else were free.
 *   build/bench/onednn_bench [-b B] [-t THREADS] [-T TOKENS] [-D HIDDEN] [-I MLP] [-L LAYERS]
 *                            [-n RUNS]
 * Defaults: ViT-Tiny/16 at 224 (T 197, D 192, I 768, 12 layers), batch 8, 2 threads. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vit/base/clock.h"

#ifdef VIT_ONEDNN
#include <dnnl.h>

enum { PRODUCTS = 4 };

typedef struct {
    dnnl_primitive_t prim;
    dnnl_memory_t src, weights, dst, scratchpad;
} product;

static int compare_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static dnnl_memory_desc_t matrix(int rows, int cols, dnnl_data_type_t type, dnnl_format_tag_t tag) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {rows, cols};
    dnnl_memory_desc_init_by_tag(&md, 2, dims, type, tag);
    return md;
}

/* A memory object of its own, filled with small varied bytes (any bit pattern of them is a finite
 * number in every type used here). */
static dnnl_memory_t filled(const dnnl_memory_desc_t *md, dnnl_engine_t engine) {
    dnnl_memory_t m;
    if (dnnl_memory_create(&m, md, engine, DNNL_MEMORY_ALLOCATE) != dnnl_success) return NULL;
    void *data = NULL;
    dnnl_memory_get_data_handle(m, &data);
    const size_t bytes = dnnl_memory_desc_get_size(md);
    for (size_t i = 0; i < bytes; i++) ((unsigned char *)data)[i] = (unsigned char)(i * 7 % 61);
    return m;
}

/* One product [rows, in] x [in, out] with weights in oneDNN's preferred layout. */
static int make_product(product *p, int rows, int in, int out, const char *precision,
                        dnnl_engine_t engine) {
    dnnl_data_type_t src = dnnl_f32, wei = dnnl_f32, dst = dnnl_f32;
    if (!strcmp(precision, "bf16")) src = wei = dst = dnnl_bf16;
    if (!strcmp(precision, "int8")) src = dnnl_u8, wei = dnnl_s8, dst = dnnl_s32;
    const dnnl_memory_desc_t a = matrix(rows, in, src, dnnl_ab),
                             w = matrix(in, out, wei, dnnl_format_tag_any),
                             c = matrix(rows, out, dst, dnnl_ab);
    dnnl_matmul_desc_t desc;
    dnnl_primitive_attr_t attr;
    dnnl_primitive_desc_t pd;
    if (dnnl_matmul_desc_init(&desc, &a, &w, NULL, &c) != dnnl_success ||
        dnnl_primitive_attr_create(&attr) != dnnl_success)
        return -1;
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    const dnnl_status_t made = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (made != dnnl_success) return -1;
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p->src = filled(&a, engine);
    p->weights = filled(wmd, engine);
    p->dst = filled(&c, engine);
    p->scratchpad = filled(smd, engine);
    const int ok = dnnl_primitive_create(&p->prim, pd) == dnnl_success;
    dnnl_primitive_desc_destroy(pd);
    return ok && p->src && p->weights && p->dst && p->scratchpad ? 0 : -1;
}

static int run(const product *p, dnnl_stream_t stream) {
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, p->src},
                                    {DNNL_ARG_WEIGHTS, p->weights},
                                    {DNNL_ARG_DST, p->dst},
                                    {DNNL_ARG_SCRATCHPAD, p->scratchpad}};
    return dnnl_primitive_execute(p->prim, stream, 4, args) == dnnl_success ? 0 : -1;
}

static void free_product(product *p) {
    dnnl_primitive_destroy(p->prim);
    dnnl_memory_destroy(p->src);
    dnnl_memory_destroy(p->weights);
    dnnl_memory_destroy(p->dst);
    dnnl_memory_destroy(p->scratchpad);
}

/* Median seconds of one pass over every layer's products in one precision. */
static double time_pass(const char *precision, int B, int T, int D, int mlp, int layers, int runs,
                        dnnl_engine_t engine, dnnl_stream_t stream) {
    const int shapes[PRODUCTS][2] = {{D, 3 * D}, {D, D}, {D, mlp}, {mlp, D}}; /* {in, out} */
    product *p = calloc((size_t)layers * PRODUCTS, sizeof *p);
    double *t = malloc(sizeof(double) * (size_t)runs), median = -1;
    if (!p || !t) goto done;
    for (int i = 0; i < layers * PRODUCTS; i++)
        if (make_product(&p[i], B * T, shapes[i % PRODUCTS][0], shapes[i % PRODUCTS][1], precision,
                         engine) != 0)
            goto done;
    for (int r = -2; r < runs; r++) {
        const double t0 = clock_seconds();
        for (int i = 0; i < layers * PRODUCTS; i++)
            if (run(&p[i], stream) != 0) goto done;
        dnnl_stream_wait(stream);
        if (r >= 0) t[r] = clock_seconds() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, compare_double);
    median = t[runs / 2];
done:
    if (p)
        for (int i = 0; i < layers * PRODUCTS; i++) free_product(&p[i]);
    free(p);
    free(t);
    return median;
}

int main(int argc, char **argv) {
    int B = 8, T = 197, D = 192, mlp = 768, layers = 12, threads = 2, runs = 10, opt;
    while ((opt = getopt(argc, argv, "b:t:T:D:I:L:n:")) != -1) {
        const int v = atoi(optarg);
        if (v < 1) return fprintf(stderr, "-%c needs a positive integer\n", opt), 2;
        switch (opt) {
        case 'b':
            B = v;
            break;
        case 't':
            threads = v;
            break;
        case 'T':
            T = v;
            break;
        case 'D':
            D = v;
            break;
        case 'I':
            mlp = v;
            break;
        case 'L':
            layers = v;
            break;
        case 'n':
            runs = v;
            break;
        default:
            return 2;
        }
    }
    omp_set_num_threads(threads);
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success)
        return fprintf(stderr, "onednn_bench: no oneDNN CPU engine\n"), 1;
    const double ops = 2.0 * B * T * layers * ((double)D * 3 * D + (double)D * D + 2.0 * D * mlp);
    printf("oneDNN's products alone, %d threads: batch %d, %d tokens, D %d, I %d, %d layers "
           "(%.2f G multiply-adds x 2 an image)\n",
           threads, B, T, D, mlp, layers, ops / B / 2e9);
    const char *precisions[] = {"fp32", "bf16", "int8"};
    for (int i = 0; i < 3; i++) {
        const double seconds = time_pass(precisions[i], B, T, D, mlp, layers, runs, engine, stream);
        if (seconds < 0) {
            printf("  %s: not available on this CPU\n", precisions[i]);
            continue;
        }
        printf("  %s: %.1f G%s/s, %.2f ms a pass: at most %.1f images/s\n", precisions[i],
               ops / seconds * 1e-9, i == 2 ? "OP" : "FLOP", seconds * 1e3, B / seconds);
    }
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "onednn_bench: built without oneDNN (ONEDNN=0)\n");
    return 1;
}
#endif
