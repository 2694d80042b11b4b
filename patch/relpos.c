/* BEiT's relative position bias (docs/SPEC.md §12): a learned table of one bias per head for each
 * offset between two patches, plus three for the CLS token, read into a [H, T, T] bias on the
 * attention scores; resized bilinearly for another window, as transformers does. */
#include <string.h>

#include "patch/patch.h"

int relpos_table_rows(int n) {
    return (2 * n - 1) * (2 * n - 1) + 3;
}

int relpos_table_resize(float *out, const float *table, int n, int m, int H) {
    const int from = relpos_table_rows(n) - 3, to = relpos_table_rows(m) - 3;
    memcpy(out + (size_t)to * H, table + (size_t)from * H, sizeof(float) * 3 * (size_t)H);
    if (m == n) {
        memcpy(out, table, sizeof(float) * (size_t)from * H);
        return 0;
    }
    return grid_resize(out, table, 2 * n - 1, 2 * m - 1, H, GRID_BILINEAR);
}

/* The table row biasing query token i and key token j (0 is CLS, then the patches row by row). */
static int table_row(int i, int j, int m) {
    const int R = relpos_table_rows(m), w = 2 * m - 1;
    if (i == 0) return j == 0 ? R - 1 : R - 3;
    if (j == 0) return R - 2;
    const int ya = (i - 1) / m, xa = (i - 1) % m, yb = (j - 1) / m, xb = (j - 1) % m;
    return (ya - yb + m - 1) * w + (xa - xb + m - 1);
}

void relpos_bias(float *bias, const float *table, int m, int H, int accumulate) {
    const int T = m * m + 1;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            const float *entry = table + (size_t)table_row(i, j, m) * H;
            for (int h = 0; h < H; h++) {
                float *b = bias + ((size_t)h * T + i) * T + j;
                *b = accumulate ? *b + entry[h] : entry[h];
            }
        }
}

void relpos_bias_backward(float *dtable, const float *dbias, int m, int H) {
    const int T = m * m + 1;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            float *entry = dtable + (size_t)table_row(i, j, m) * H;
            for (int h = 0; h < H; h++) entry[h] += dbias[((size_t)h * T + i) * T + j];
        }
}
