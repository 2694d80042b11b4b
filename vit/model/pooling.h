#ifndef VIT_POOLING_H
#define VIT_POOLING_H

/* Sentence poolings over a text's final hidden states, as sentence-transformers' models.Pooling
 * computes them, and the layers its pipelines put after (models.Dense, models.Normalize). */

#include <stdint.h>

/* Pooling modes, in the order models.Pooling concatenates them. */
enum {
    POOL_MODE_CLS = 1,
    POOL_MODE_MAX = 2,
    POOL_MODE_MEAN = 4,
    POOL_MODE_MEAN_SQRT_LEN = 8,
    POOL_MODE_WEIGHTED_MEAN = 16,
    POOL_MODE_LAST_TOKEN = 32
};
#define POOL_MODE_COUNT 6

/* x [T, D] one text's rows, mask [T] its tokens (1) and padding (0), the first `skip` tokens
 * left out as padding is (a prompt with include_prompt false; CLS still reads row 0) -> out: D
 * floats per mode set in modes, in the order above. */
void pool_tokens(const float *x, const uint8_t *mask, int T, int D, int modes, int skip,
                 float *out);

typedef enum { DENSE_IDENTITY, DENSE_TANH, DENSE_RELU, DENSE_SIGMOID, DENSE_GELU } dense_act;

/* out [n_out] = act(w [n_out, n_in] x + b) (b may be NULL); out must not be x. */
void dense_forward(const float *w, const float *b, int n_in, int n_out, dense_act act,
                   const float *x, float *out);
/* x / max(||x||, 1e-12), as torch.nn.functional.normalize. */
void l2_normalize(float *x, int n);

/* Backward (training): dx [T, D] += pool_tokens' gradient from dout; dense_forward's from dout
 * [n_out] given its input x and output out: dx [n_in] overwritten, dw [n_out, n_in] and db
 * [n_out] (each may be NULL) accumulated; l2_normalize's dx [n] (overwritten) from dy given the
 * input x. */
void pool_tokens_backward(const float *x, const uint8_t *mask, int T, int D, int modes, int skip,
                          const float *dout, float *dx);
void dense_backward(const float *w, const float *b, int n_in, int n_out, dense_act act,
                    const float *x, const float *out, const float *dout, float *dx, float *dw,
                    float *db);
void l2_normalize_backward(const float *x, int n, const float *dy, float *dx);

#endif
