#include "vit/io/torch_pickle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds a hostile pickle meets long before memory runs out; a real state dict's pickle needs
 * some twenty objects per tensor and a stack a few thousand deep (SETITEMS batches). */
#define TP_MAX_OBJECTS (1u << 23)
#define TP_MAX_STACK   (1u << 20)
#define TP_MAX_MARKS   (1u << 16)
#define TP_MAX_MEMO    (1u << 23)
#define TP_MAX_BYTES   ((size_t)1 << 30)
#define TP_MAX_NAME    256

typedef enum {
    G_ORDERED_DICT,
    G_REBUILD_V2,
    G_REBUILD,
    G_PARAMETER,
    G_STORAGE,
    G_DTYPE
} global_kind;

static const struct {
    const char *module, *name;
    global_kind kind;
    st_dtype dtype;
} allowed[] = {
    {"collections", "OrderedDict", G_ORDERED_DICT, ST_F32},
    {"torch._utils", "_rebuild_tensor_v2", G_REBUILD_V2, ST_F32},
    {"torch._utils", "_rebuild_tensor", G_REBUILD, ST_F32},
    {"torch._utils", "_rebuild_parameter", G_PARAMETER, ST_F32},
    {"torch", "FloatStorage", G_STORAGE, ST_F32},
    {"torch", "HalfStorage", G_STORAGE, ST_F16},
    {"torch", "BFloat16Storage", G_STORAGE, ST_BF16},
    {"torch", "DoubleStorage", G_STORAGE, ST_F64},
    {"torch", "LongStorage", G_STORAGE, ST_I64},
    {"torch", "IntStorage", G_STORAGE, ST_I32},
    {"torch", "ShortStorage", G_STORAGE, ST_I16},
    {"torch", "CharStorage", G_STORAGE, ST_I8},
    {"torch", "ByteStorage", G_STORAGE, ST_U8},
    {"torch", "BoolStorage", G_STORAGE, ST_BOOL},
    {"torch", "float32", G_DTYPE, ST_F32},
    {"torch", "float16", G_DTYPE, ST_F16},
    {"torch", "bfloat16", G_DTYPE, ST_BF16},
    {"torch", "float64", G_DTYPE, ST_F64},
    {"torch", "int64", G_DTYPE, ST_I64},
    {"torch", "int32", G_DTYPE, ST_I32},
    {"torch", "int16", G_DTYPE, ST_I16},
    {"torch", "int8", G_DTYPE, ST_I8},
    {"torch", "uint8", G_DTYPE, ST_U8},
    {"torch", "bool", G_DTYPE, ST_BOOL},
};

typedef struct {
    const uint8_t *p;
    size_t n, pos, op_at;
    const char *path;
    tp_arena *a;
    tp_obj **stack;
    size_t sp, scap;
    size_t *marks;
    size_t nmarks, mcap;
    tp_obj **memo;
    size_t memo_cap, memo_len;
    vit_error *err;
    int truncated;
} vm;

static int fail(vm *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(vm *v, const char *fmt, ...) {
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return vit_fail(v->err, "%s: %s (pickle offset %zu)", v->path, why, v->op_at);
}

static void *arena_alloc(vm *v, size_t bytes) {
    tp_arena *a = v->a;
    if (a->bytes + bytes > TP_MAX_BYTES) return fail(v, "the pickle needs too much memory"), NULL;
    if (a->nblocks == a->cap) {
        const size_t cap = a->cap ? 2 * a->cap : 64;
        void **blocks = realloc(a->blocks, cap * sizeof *blocks);
        if (!blocks) return fail(v, "out of memory"), NULL;
        a->blocks = blocks, a->cap = cap;
    }
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) return fail(v, "out of memory"), NULL;
    a->blocks[a->nblocks++] = p;
    a->bytes += bytes;
    return p;
}

void tp_free(tp_arena *a) {
    for (size_t i = 0; i < a->nblocks; i++) free(a->blocks[i]);
    free(a->blocks);
    memset(a, 0, sizeof *a);
}

static tp_obj *new_obj(vm *v, tp_kind kind) {
    if (++v->a->objects > TP_MAX_OBJECTS) return fail(v, "too many objects"), NULL;
    tp_obj *o = arena_alloc(v, sizeof *o);
    if (o) o->kind = kind;
    return o;
}

static int push(vm *v, tp_obj *o) {
    if (!o) return -1;
    if (v->sp == v->scap) {
        if (v->scap >= TP_MAX_STACK) return fail(v, "the stack is too deep");
        const size_t cap = v->scap ? 2 * v->scap : 256;
        tp_obj **s = realloc(v->stack, cap * sizeof *s);
        if (!s) return fail(v, "out of memory");
        v->stack = s, v->scap = cap;
    }
    v->stack[v->sp++] = o;
    return 0;
}

/* The top of the stack, taken off; NULL (err set) when empty or at a mark. */
static tp_obj *pop(vm *v) {
    const size_t floor = v->nmarks ? v->marks[v->nmarks - 1] : 0;
    if (v->sp <= floor) return fail(v, "the stack is empty"), NULL;
    return v->stack[--v->sp];
}

static tp_obj *top(vm *v) {
    const size_t floor = v->nmarks ? v->marks[v->nmarks - 1] : 0;
    if (v->sp <= floor) return fail(v, "the stack is empty"), NULL;
    return v->stack[v->sp - 1];
}

/* The items above the last mark (*count of them, at *first), and the mark taken off. */
static int pop_mark(vm *v, tp_obj ***first, size_t *count) {
    if (!v->nmarks) return fail(v, "no mark on the stack");
    const size_t at = v->marks[--v->nmarks];
    *first = v->stack ? v->stack + at : NULL; /* nothing was ever pushed */
    *count = v->sp - at;
    v->sp = at;
    return 0;
}

static const uint8_t *take(vm *v, size_t bytes) {
    if (bytes > v->n - v->pos) {
        v->truncated = 1;
        return fail(v, "the pickle ends early"), NULL;
    }
    const uint8_t *p = v->p + v->pos;
    v->pos += bytes;
    return p;
}

static uint64_t le(const uint8_t *p, int bytes) {
    uint64_t x = 0;
    for (int i = bytes - 1; i >= 0; i--) x = x << 8 | p[i];
    return x;
}

static tp_obj *new_str(vm *v, const uint8_t *bytes, size_t len) {
    tp_obj *o = new_obj(v, TP_STR);
    char *s = o ? arena_alloc(v, len + 1) : NULL;
    if (!s) return NULL;
    memcpy(s, bytes, len);
    o->s = s, o->len = len;
    return o;
}

static int op_string(vm *v, int len_bytes) {
    const uint8_t *n = take(v, (size_t)len_bytes);
    if (!n) return -1;
    const uint64_t len = le(n, len_bytes);
    const uint8_t *bytes = len <= v->n ? take(v, (size_t)len) : NULL;
    if (!bytes) return v->truncated = 1, fail(v, "a string runs past the pickle's end");
    return push(v, new_str(v, bytes, (size_t)len));
}

static int push_int(vm *v, int64_t x) {
    tp_obj *o = new_obj(v, TP_INT);
    if (o) o->i = x;
    return push(v, o);
}

static int op_int(vm *v, int bytes, int is_signed) {
    const uint8_t *p = take(v, (size_t)bytes);
    if (!p) return -1;
    uint64_t x = le(p, bytes);
    if (is_signed && bytes < 8 && (x >> (8 * bytes - 1)) & 1) x |= ~(uint64_t)0 << (8 * bytes);
    return push_int(v, (int64_t)x);
}

static int op_long1(vm *v) {
    const uint8_t *n = take(v, 1), *p = n ? take(v, *n) : NULL;
    if (!p) return -1;
    if (*n <= 8) {
        uint64_t x = *n ? le(p, *n) : 0;
        if (*n && *n < 8 && (p[*n - 1] & 0x80)) x |= ~(uint64_t)0 << (8 * *n);
        return push_int(v, (int64_t)x);
    }
    tp_obj *o = new_obj(v, TP_LONG);
    char *s = o ? arena_alloc(v, *n) : NULL;
    if (!s) return -1;
    memcpy(s, p, *n);
    o->s = s, o->len = *n;
    return push(v, o);
}

static int op_float(vm *v) {
    const uint8_t *p = take(v, 8);
    tp_obj *o = p ? new_obj(v, TP_FLOAT) : NULL;
    if (!o) return -1;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++) bits = bits << 8 | p[i]; /* big-endian */
    memcpy(&o->f, &bits, 8);
    return push(v, o);
}

/* A printable copy of a global's name for the refusal. */
static void printable(char *out, size_t size, const char *s, size_t len) {
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < size; i++)
        out[k++] = (s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
    out[k] = 0;
}

static int push_global(vm *v, const char *module, size_t mlen, const char *name, size_t nlen) {
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strlen(allowed[i].module) == mlen && memcmp(allowed[i].module, module, mlen) == 0 &&
            strlen(allowed[i].name) == nlen && memcmp(allowed[i].name, name, nlen) == 0) {
            tp_obj *o = new_obj(v, TP_GLOBAL);
            if (o) o->i = (int64_t)i;
            return push(v, o);
        }
    char m[TP_MAX_NAME + 1], n[TP_MAX_NAME + 1];
    printable(m, sizeof m, module, mlen);
    printable(n, sizeof n, name, nlen);
    return vit_fail(v->err, "%s: global %s.%s is not one a state dict holds: refused", v->path, m,
                    n);
}

/* GLOBAL: "module\nname\n". */
static int op_global(vm *v) {
    const char *parts[2];
    size_t lens[2];
    for (int k = 0; k < 2; k++) {
        const uint8_t *start = v->p + v->pos, *nl = memchr(start, '\n', v->n - v->pos);
        if (!nl) return v->truncated = 1, fail(v, "a global's name runs past the pickle's end");
        if ((size_t)(nl - start) > TP_MAX_NAME) return fail(v, "a global's name is too long");
        parts[k] = (const char *)start, lens[k] = (size_t)(nl - start);
        v->pos += lens[k] + 1;
    }
    return push_global(v, parts[0], lens[0], parts[1], lens[1]);
}

static int op_stack_global(vm *v) {
    tp_obj *name = pop(v), *module = name ? pop(v) : NULL;
    if (!module) return -1;
    if (name->kind != TP_STR || module->kind != TP_STR)
        return fail(v, "STACK_GLOBAL without two strings");
    if (name->len > TP_MAX_NAME || module->len > TP_MAX_NAME)
        return fail(v, "a global's name is too long");
    return push_global(v, module->s, module->len, name->s, name->len);
}

static tp_obj *new_seq(vm *v, tp_kind kind, tp_obj **items, size_t n) {
    tp_obj *o = new_obj(v, kind);
    if (!o || !n) return o;
    if (!(o->items = arena_alloc(v, n * sizeof *o->items))) return NULL;
    memcpy(o->items, items, n * sizeof *items);
    o->n = o->cap = n;
    return o;
}

static int op_tuple_n(vm *v, size_t n) {
    tp_obj *items[3];
    for (size_t i = n; i > 0; i--)
        if (!(items[i - 1] = pop(v))) return -1;
    return push(v, new_seq(v, TP_TUPLE, items, n));
}

static int op_from_mark(vm *v, tp_kind kind) {
    tp_obj **items = NULL;
    size_t n = 0;
    if (pop_mark(v, &items, &n) != 0) return -1;
    if (kind == TP_DICT && n % 2) return fail(v, "a dict with an odd number of items");
    return push(v, new_seq(v, kind, items, n));
}

/* items appended to list or dict o (a new, larger array from the arena when full). */
static int append(vm *v, tp_obj *o, tp_obj **items, size_t n) {
    if (!n) return 0;
    if (o->n + n > o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 8;
        while (cap < o->n + n) cap *= 2;
        tp_obj **grown = arena_alloc(v, cap * sizeof *grown);
        if (!grown) return -1;
        if (o->n) memcpy(grown, o->items, o->n * sizeof *grown);
        o->items = grown, o->cap = cap;
    }
    memcpy(o->items + o->n, items, n * sizeof *items);
    o->n += n;
    return 0;
}

static int op_setitems(vm *v, tp_kind kind) {
    tp_obj **items = NULL;
    size_t n = 0;
    if (pop_mark(v, &items, &n) != 0) return -1;
    tp_obj *o = top(v);
    if (!o) return -1;
    if (o->kind != kind)
        return fail(v, kind == TP_DICT ? "SETITEMS on what is not a dict"
                                       : "APPENDS on what is not a list");
    if (kind == TP_DICT && n % 2) return fail(v, "SETITEMS with an odd number of items");
    return append(v, o, items, n);
}

static int op_setitem(vm *v, tp_kind kind) {
    tp_obj *items[2];
    const size_t n = kind == TP_DICT ? 2 : 1;
    for (size_t i = n; i > 0; i--)
        if (!(items[i - 1] = pop(v))) return -1;
    tp_obj *o = top(v);
    if (!o) return -1;
    if (o->kind != kind)
        return fail(v, kind == TP_DICT ? "SETITEM on what is not a dict"
                                       : "APPEND on what is not a list");
    return append(v, o, items, n);
}

/* BINPERSID: ('storage', storage class, key, location, numel[, view metadata None]). */
static int op_persid(vm *v) {
    tp_obj *pid = pop(v);
    if (!pid) return -1;
    if (pid->kind != TP_TUPLE || pid->n < 5 || pid->n > 6 || pid->items[0]->kind != TP_STR ||
        strcmp(pid->items[0]->s, "storage") != 0)
        return fail(v, "a persistent id that is not a storage");
    tp_obj *const *f = pid->items;
    if (f[1]->kind != TP_GLOBAL || allowed[f[1]->i].kind != G_STORAGE || f[2]->kind != TP_STR ||
        f[3]->kind != TP_STR || f[4]->kind != TP_INT || f[4]->i < 0 ||
        (pid->n == 6 && f[5]->kind != TP_NONE))
        return fail(v, "a storage's persistent id is malformed");
    tp_obj *o = new_obj(v, TP_STORAGE);
    if (!o || !(o->storage = arena_alloc(v, sizeof *o->storage))) return -1;
    *o->storage = (tp_storage){allowed[f[1]->i].dtype, f[2]->s, f[4]->i};
    return push(v, o);
}

static int int_tuple(const tp_obj *t, int64_t *out, int *n) {
    if (t->kind != TP_TUPLE || t->n > ST_MAX_DIMS) return -1;
    for (size_t i = 0; i < t->n; i++) {
        if (t->items[i]->kind != TP_INT || t->items[i]->i < 0) return -1;
        out[i] = t->items[i]->i;
    }
    *n = (int)t->n;
    return 0;
}

/* The element index past t's last, within 2^62 (a hostile size or stride would overflow). */
static int extent_ok(const tp_tensor *t) {
    int64_t last = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) return 1; /* no elements: nothing is read */
        int64_t step;
        if (__builtin_mul_overflow(t->shape[d] - 1, t->stride[d], &step) ||
            __builtin_add_overflow(last, step, &last))
            return 0;
    }
    return last < ((int64_t)1 << 62);
}

/* _rebuild_tensor(_v2)(storage, storage_offset, size, stride, ...). */
static tp_obj *rebuild_tensor(vm *v, const tp_obj *args, size_t min_args, size_t max_args) {
    tp_obj *const *a = args->items;
    int nsize = 0, nstride = 0;
    tp_tensor t = {0};
    if (args->n < min_args || args->n > max_args || a[0]->kind != TP_STORAGE ||
        a[1]->kind != TP_INT || a[1]->i < 0 || int_tuple(a[2], t.shape, &nsize) != 0 ||
        int_tuple(a[3], t.stride, &nstride) != 0 || nsize != nstride)
        return fail(v, "a tensor's arguments are malformed"), NULL;
    t.storage = a[0];
    t.offset = a[1]->i;
    t.ndim = nsize;
    if (!extent_ok(&t)) return fail(v, "a tensor's size and strides reach past 2^62"), NULL;
    tp_obj *o = new_obj(v, TP_TENSOR);
    if (!o || !(o->tensor = arena_alloc(v, sizeof *o->tensor))) return NULL;
    *o->tensor = t;
    return o;
}

static int op_reduce(vm *v) {
    tp_obj *args = pop(v), *fn = args ? pop(v) : NULL;
    if (!fn) return -1;
    if (fn->kind != TP_GLOBAL || args->kind != TP_TUPLE)
        return fail(v, "REDUCE without a global and its arguments");
    switch (allowed[fn->i].kind) {
    case G_ORDERED_DICT:
        if (args->n) return fail(v, "OrderedDict with arguments");
        return push(v, new_obj(v, TP_DICT));
    case G_REBUILD_V2:
        return push(v, rebuild_tensor(v, args, 6, 7));
    case G_REBUILD:
        return push(v, rebuild_tensor(v, args, 4, 4));
    case G_PARAMETER:
        if (args->n < 1 || args->items[0]->kind != TP_TENSOR)
            return fail(v, "_rebuild_parameter without a tensor");
        return push(v, args->items[0]);
    default:
        return fail(v, "torch.%s called", allowed[fn->i].name);
    }
}

/* BUILD: a state dict's attributes (its _metadata) are not needed; nothing else is built. */
static int op_build(vm *v) {
    tp_obj *state = pop(v), *o = state ? top(v) : NULL;
    if (!o) return -1;
    if (o->kind != TP_DICT && o->kind != TP_TENSOR) return fail(v, "BUILD on what is not a dict");
    return 0;
}

static int memo_put(vm *v, uint64_t index) {
    tp_obj *o = top(v);
    if (!o) return -1;
    if (index >= TP_MAX_MEMO)
        return fail(v, "memo index %llu is too large", (unsigned long long)index);
    if (index >= v->memo_cap) {
        size_t cap = v->memo_cap ? v->memo_cap : 64;
        while (cap <= index) cap *= 2;
        tp_obj **m = realloc(v->memo, cap * sizeof *m);
        if (!m) return fail(v, "out of memory");
        memset(m + v->memo_cap, 0, (cap - v->memo_cap) * sizeof *m);
        v->memo = m, v->memo_cap = cap;
    }
    if (!v->memo[index]) v->memo_len++;
    v->memo[index] = o;
    return 0;
}

static int memo_get(vm *v, uint64_t index) {
    if (index >= v->memo_cap || !v->memo[index])
        return fail(v, "memo index %llu was never stored", (unsigned long long)index);
    return push(v, v->memo[index]);
}

static int op_mark(vm *v) {
    if (v->nmarks == v->mcap) {
        if (v->mcap >= TP_MAX_MARKS) return fail(v, "marks nest too deep");
        const size_t cap = v->mcap ? 2 * v->mcap : 32;
        size_t *m = realloc(v->marks, cap * sizeof *m);
        if (!m) return fail(v, "out of memory");
        v->marks = m, v->mcap = cap;
    }
    v->marks[v->nmarks++] = v->sp;
    return 0;
}

static int op_arg(vm *v, int bytes, uint64_t *x) {
    const uint8_t *p = take(v, (size_t)bytes);
    if (!p) return -1;
    *x = le(p, bytes);
    return 0;
}

static int op_memo(vm *v, int op) {
    uint64_t x = 0;
    switch (op) {
    case 'q':
        return op_arg(v, 1, &x) ? -1 : memo_put(v, x);
    case 'r':
        return op_arg(v, 4, &x) ? -1 : memo_put(v, x);
    case 0x94:
        return memo_put(v, v->memo_len);
    case 'h':
        return op_arg(v, 1, &x) ? -1 : memo_get(v, x);
    default:
        return op_arg(v, 4, &x) ? -1 : memo_get(v, x);
    }
}

static int op_protocol(vm *v, int op) {
    uint64_t x;
    if (op_arg(v, op == 0x80 ? 1 : 8, &x) != 0) return -1;
    if (op == 0x80 && (x < 2 || x > 5))
        return fail(v, "pickle protocol %llu (2 to 5 are read)", (unsigned long long)x);
    return 0;
}

static int op_stack(vm *v, int op) {
    tp_obj *o;
    switch (op) {
    case '0':
        return pop(v) ? 0 : -1;
    case '1': {
        tp_obj **items = NULL;
        size_t n = 0;
        return pop_mark(v, &items, &n);
    }
    default:
        return (o = top(v)) ? push(v, o) : -1; /* DUP */
    }
}

/* The opcodes that push a value built from the pickle's bytes alone; 2 for any other. */
static int op_value(vm *v, int op) {
    switch (op) {
    case '}':
        return push(v, new_obj(v, TP_DICT));
    case ']':
        return push(v, new_obj(v, TP_LIST));
    case ')':
        return push(v, new_obj(v, TP_TUPLE));
    case 'N':
        return push(v, new_obj(v, TP_NONE));
    case 0x88:
    case 0x89: {
        tp_obj *o = new_obj(v, TP_BOOL);
        if (o) o->i = op == 0x88;
        return push(v, o);
    }
    case 'X':
    case 'T':
        return op_string(v, 4);
    case 0x8c:
    case 'U':
        return op_string(v, 1);
    case 0x8d:
        return op_string(v, 8);
    case 'J':
        return op_int(v, 4, 1);
    case 'K':
        return op_int(v, 1, 0);
    case 'M':
        return op_int(v, 2, 0);
    case 0x8a:
        return op_long1(v);
    case 'G':
        return op_float(v);
    default:
        return 2;
    }
}

/* The opcodes that combine values on the stack; 2 for any other. */
static int op_combine(vm *v, int op) {
    switch (op) {
    case 't':
        return op_from_mark(v, TP_TUPLE);
    case 'l':
        return op_from_mark(v, TP_LIST);
    case 'd':
        return op_from_mark(v, TP_DICT);
    case 0x85:
    case 0x86:
    case 0x87:
        return op_tuple_n(v, (size_t)(op - 0x84));
    case 'c':
        return op_global(v);
    case 0x93:
        return op_stack_global(v);
    case 'R':
        return op_reduce(v);
    case 'b':
        return op_build(v);
    case 'Q':
        return op_persid(v);
    case 'u':
        return op_setitems(v, TP_DICT);
    case 's':
        return op_setitem(v, TP_DICT);
    case 'e':
        return op_setitems(v, TP_LIST);
    case 'a':
        return op_setitem(v, TP_LIST);
    default:
        return 2;
    }
}

/* One opcode; 1 at STOP. */
static int step(vm *v, tp_obj **result) {
    v->op_at = v->pos;
    const uint8_t *opp = take(v, 1);
    if (!opp) return -1;
    const int op = *opp;
    int rc;
    switch (op) {
    case 0x80:
    case 0x95:
        return op_protocol(v, op);
    case '.':
        return (*result = pop(v)) ? 1 : -1;
    case '(':
        return op_mark(v);
    case '0':
    case '1':
    case '2':
        return op_stack(v, op);
    case 'q':
    case 'r':
    case 0x94:
    case 'h':
    case 'j':
        return op_memo(v, op);
    default:
        if ((rc = op_value(v, op)) != 2 || (rc = op_combine(v, op)) != 2) return rc;
        return fail(v, "opcode 0x%02x is not one a state dict holds: refused", op);
    }
}

int tp_load(const uint8_t *data, size_t size, const char *path, tp_arena *arena, tp_obj **result,
            size_t *end, vit_error *err) {
    vm v = {.p = data, .n = size, .path = path, .a = arena, .err = err};
    *result = NULL;
    int rc;
    while ((rc = step(&v, result)) == 0) {
    }
    free(v.stack), free(v.marks), free(v.memo);
    if (rc < 0) return v.truncated ? -2 : -1;
    *end = v.pos;
    return 0;
}

const tp_obj *tp_dict_get(const tp_obj *d, const char *key) {
    if (!d || d->kind != TP_DICT) return NULL;
    for (size_t i = 0; i + 1 < d->n; i += 2)
        if (d->items[i]->kind == TP_STR && strcmp(d->items[i]->s, key) == 0) return d->items[i + 1];
    return NULL;
}
