#include "vit/gen/topk.h"

#include <math.h>

/* PyTorch's comparator for largest-first: NaN before numbers, then greater values. */
static int before(gen_pair x, gen_pair y) {
    return (isnan(x.value) && !isnan(y.value)) || x.value > y.value;
}

static void swap(gen_pair *a, gen_pair *b) {
    gen_pair t = *a;
    *a = *b;
    *b = t;
}

static int floor_log2(int n) {
    int l = 0;
    while (n >>= 1) l++;
    return l;
}

/* ---- heaps (the root is the element that sorts last) ---- */

static void push_heap(gen_pair *a, int hole, int top, gen_pair value) {
    int parent = (hole - 1) / 2;
    while (hole > top && before(a[parent], value)) {
        a[hole] = a[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    a[hole] = value;
}

/* Sifts the hole down to a leaf along the larger children, then pushes value back up. */
static void adjust_heap(gen_pair *a, int hole, int len, gen_pair value) {
    const int top = hole;
    int child = hole;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (before(a[child], a[child - 1])) child--;
        a[hole] = a[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        a[hole] = a[child - 1];
        hole = child - 1;
    }
    push_heap(a, hole, top, value);
}

static void make_heap(gen_pair *a, int len) {
    if (len < 2) return;
    for (int parent = (len - 2) / 2;; parent--) {
        adjust_heap(a, parent, len, a[parent]);
        if (parent == 0) return;
    }
}

/* Moves the root to *result and result's old value into the heap a[0..len). */
static void pop_heap(gen_pair *a, int len, gen_pair *result) {
    gen_pair value = *result;
    *result = a[0];
    adjust_heap(a, 0, len, value);
}

/* a[0..middle) becomes a heap of the `middle` first-sorting elements of a[0..last). */
static void heap_select(gen_pair *a, int middle, int last) {
    make_heap(a, middle);
    for (int i = middle; i < last; i++)
        if (before(a[i], a[0])) pop_heap(a, middle, &a[i]);
}

static void sort_heap(gen_pair *a, int len) {
    while (len > 1) {
        len--;
        pop_heap(a, len, &a[len]);
    }
}

static void partial_sort(gen_pair *a, int middle, int last) {
    heap_select(a, middle, last);
    sort_heap(a, middle);
}

/* ---- quicksort partitions, insertion sorts ---- */

static void move_median_to_first(gen_pair *result, gen_pair *x, gen_pair *y, gen_pair *z) {
    if (before(*x, *y)) {
        if (before(*y, *z))
            swap(result, y);
        else if (before(*x, *z))
            swap(result, z);
        else
            swap(result, x);
    } else if (before(*x, *z))
        swap(result, x);
    else if (before(*y, *z))
        swap(result, z);
    else
        swap(result, y);
}

static int unguarded_partition(gen_pair *a, int first, int last, gen_pair pivot) {
    for (;;) {
        while (before(a[first], pivot)) first++;
        last--;
        while (before(pivot, a[last])) last--;
        if (!(first < last)) return first;
        swap(&a[first], &a[last]);
        first++;
    }
}

/* The median of a[first + 1], the middle and the last goes to a[first] as the pivot. */
static int partition_pivot(gen_pair *a, int first, int last) {
    const int mid = first + (last - first) / 2;
    move_median_to_first(&a[first], &a[first + 1], &a[mid], &a[last - 1]);
    return unguarded_partition(a, first + 1, last, a[first]);
}

static void unguarded_linear_insert(gen_pair *a, int i) {
    gen_pair value = a[i];
    while (before(value, a[i - 1])) {
        a[i] = a[i - 1];
        i--;
    }
    a[i] = value;
}

static void insertion_sort(gen_pair *a, int first, int last) {
    for (int i = first + 1; i < last; i++) {
        if (before(a[i], a[first])) {
            gen_pair value = a[i];
            for (int j = i; j > first; j--) a[j] = a[j - 1];
            a[first] = value;
        } else {
            unguarded_linear_insert(a, i);
        }
    }
}

/* std::nth_element: a[nth] gets the element that sorts there, the ones before it sort no
 * later. */
static void introselect(gen_pair *a, int first, int nth, int last, int depth) {
    while (last - first > 3) {
        if (depth == 0) {
            heap_select(a + first, nth + 1 - first, last - first);
            swap(&a[first], &a[nth]);
            return;
        }
        depth--;
        const int cut = partition_pivot(a, first, last);
        if (cut <= nth)
            first = cut;
        else
            last = cut;
    }
    insertion_sort(a, first, last);
}

static void introsort_loop(gen_pair *a, int first, int last, int depth) {
    while (last - first > 16) {
        if (depth == 0) {
            partial_sort(a + first, last - first, last - first);
            return;
        }
        depth--;
        const int cut = partition_pivot(a, first, last);
        introsort_loop(a, cut, last, depth);
        last = cut;
    }
}

/* std::sort of a[0..n). */
static void sort(gen_pair *a, int n) {
    if (n == 0) return;
    introsort_loop(a, 0, n, 2 * floor_log2(n));
    if (n > 16) {
        insertion_sort(a, 0, 16);
        for (int i = 16; i < n; i++) unguarded_linear_insert(a, i);
    } else {
        insertion_sort(a, 0, n);
    }
}

void gen_topk(gen_pair *pairs, int n, int k) {
    if ((int64_t)k * 64 <= n) {
        partial_sort(pairs, k, n);
        return;
    }
    introselect(pairs, 0, k - 1, n, 2 * floor_log2(n));
    sort(pairs, k - 1);
}
