#ifndef VIT_GEN_TOPK_H
#define VIT_GEN_TOPK_H

/* torch.topk(values, k) (largest, sorted) as PyTorch computes it on the CPU, equal values
 * included. PyTorch's kernel (aten/src/ATen/native/TopKImpl.h) fills (value, index) pairs and
 * orders them by value alone, NaN first: with std::partial_sort when k * 64 <= n, else with
 * std::nth_element at k - 1 and std::sort of the first k - 1. Neither keeps equal values in
 * index order; the order they leave is that of libstdc++'s algorithms (Linux builds; macOS's
 * libc++ orders ties otherwise), which this file follows step by step: heap selection and heap
 * sort, introselect with median-of-three pivots, introsort with a final insertion sort. */

#include <stdint.h>

typedef struct {
    float value;
    int32_t index;
} gen_pair;

/* Reorders pairs[0..n) so that pairs[0..k) are torch.topk's k values and indices, in its order
 * (1 <= k <= n). */
void gen_topk(gen_pair *pairs, int n, int k);

#endif
