#include "vit/data/imagefolder.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "vit/base/strlist.h"

/* Deeper than any real dataset; stops pathological trees without a fixed path-length limit. */
#define MAX_DEPTH 64

/* dir/name, without doubling a '/' that dir ends with ("photos/" + "a.jpg": "photos/a.jpg"). */
static char *join_path(const char *dir, const char *name) {
    size_t n = strlen(dir), m = strlen(name);
    char *p = malloc(n + m + 2);
    if (!p) return NULL;
    memcpy(p, dir, n);
    if (n == 0 || dir[n - 1] != '/') p[n++] = '/';
    memcpy(p + n, name, m + 1);
    return p;
}

int imagefolder_is_image_name(const char *name) {
    static const char *const extensions[] = {".png", ".jpg",  ".jpeg", ".webp",
                                             ".tif", ".tiff", ".gif",  ".bmp"};
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++)
        if (strcasecmp(dot, extensions[i]) == 0) return 1;
    return 0;
}

/* ---- directory listings ---- */

typedef struct {
    char *name;
    unsigned char type; /* d_type: DT_UNKNOWN when the file system does not say */
} dir_entry;

static int by_name(const void *a, const void *b) {
    return strcmp(((const dir_entry *)a)->name, ((const dir_entry *)b)->name);
}

static void free_entries(dir_entry *e, int n) {
    for (int i = 0; i < n; i++) free(e[i].name);
    free(e);
}

/* The non-hidden entries of an open directory, sorted. Returns -1 only when out of memory. */
static int read_sorted(DIR *d, dir_entry **out, int *count) {
    dir_entry *e = NULL;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            dir_entry *grown = realloc(e, sizeof *e * (size_t)cap);
            if (!grown) return free_entries(e, n), -1;
            e = grown;
        }
        if (!(e[n].name = strdup(de->d_name))) return free_entries(e, n), -1;
        e[n++].type = de->d_type;
    }
    if (n > 1) qsort(e, (size_t)n, sizeof *e, by_name);
    *out = e;
    *count = n;
    return 0;
}

/* S_IFMT bits of path's entry (symlinks followed), using d_type when it is conclusive. */
static int entry_mode(const char *path, unsigned char type, struct stat *st) {
    if (type == DT_REG) return S_IFREG;
    if (type == DT_DIR) return S_IFDIR;
    if (type != DT_UNKNOWN && type != DT_LNK) return -2; /* fifo, socket, ... */
    if (stat(path, st) != 0) return -1;
    return (int)(st->st_mode & S_IFMT);
}

/* ---- the class folders ---- */

int imagefolder_open(imagefolder *f, const char *root, vit_error *err) {
    memset(f, 0, sizeof *f);
    size_t len = strlen(root);
    while (len > 1 && root[len - 1] == '/') len--; /* "dir/" and "dir" give the same paths */
    if (!(f->root = strndup(root, len))) return vit_fail(err, "out of memory");
    DIR *d = opendir(f->root);
    if (!d) {
        vit_fail(err, "%s: %s", root, errno == ENOTDIR ? "not a directory" : strerror(errno));
        return imagefolder_close(f), -1;
    }
    dir_entry *e;
    int n;
    int rc = read_sorted(d, &e, &n);
    closedir(d);
    if (rc != 0) return imagefolder_close(f), vit_fail(err, "out of memory");
    if (!(f->folders = malloc(sizeof *f->folders * (size_t)(n ? n : 1)))) rc = -1;
    for (int i = 0; i < n && rc == 0; i++) {
        char *path = join_path(f->root, e[i].name);
        struct stat st;
        if (!path)
            rc = -1;
        else if (entry_mode(path, e[i].type, &st) == S_IFDIR) {
            f->folders[f->num_folders++] = e[i].name;
            e[i].name = NULL; /* moved */
        }
        free(path);
    }
    free_entries(e, n);
    if (rc != 0) return imagefolder_close(f), vit_fail(err, "out of memory");
    if (f->num_folders == 0) {
        vit_fail(err, "%s: no class folders (expected %s/<class>/<images>)", root, f->root);
        return imagefolder_close(f), -1;
    }
    return 0;
}

void imagefolder_close(imagefolder *f) {
    if (!f) return;
    for (int i = 0; i < f->num_folders; i++) free(f->folders[i]);
    free(f->folders);
    free(f->label_of);
    free(f->root);
    memset(f, 0, sizeof *f);
}

/* ---- folder names to labels ---- */

typedef struct {
    const char *key;
    int index;
} keyed;

static int by_key(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->index - y->index;
}

/* How many entries of the sorted array have this key (the first two in *a, *b). */
static int lookup(const keyed *k, int n, const char *key, int *a, int *b) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(k[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int m = 0;
    for (int i = lo; i < n && strcmp(k[i].key, key) == 0; i++, m++) {
        if (m == 0) *a = k[i].index;
        if (m == 1) *b = k[i].index;
    }
    return m;
}

static int is_separator(char c) {
    return c == ' ' || c == '_' || c == '-' || c == '/';
}

/* s[0..len) lower-cased, separators unified, surrounding white space dropped. */
static char *normalised(const char *s, size_t len) {
    while (len > 0 && isspace((unsigned char)*s)) s++, len--;
    while (len > 0 && isspace((unsigned char)s[len - 1])) len--;
    char *out = malloc(len + 1);
    if (!out) return NULL;
    for (size_t i = 0; i < len; i++)
        out[i] = is_separator(s[i]) ? '_' : (char)tolower((unsigned char)s[i]);
    out[len] = 0;
    return out;
}

typedef struct {
    keyed *by_rule[3]; /* exact, normalised, normalised first name; each sorted */
    char **owned;      /* [2 * n] the normalised strings */
    int n;
} label_index;

static void label_index_free(label_index *ix) {
    for (int r = 0; r < 3; r++) free(ix->by_rule[r]);
    if (ix->owned)
        for (int i = 0; i < 2 * ix->n; i++) free(ix->owned[i]);
    free(ix->owned);
}

static int label_index_build(label_index *ix, const char *const *labels, int n) {
    memset(ix, 0, sizeof *ix);
    ix->n = n;
    ix->owned = calloc((size_t)(2 * n + 1), sizeof *ix->owned);
    if (!ix->owned) return -1;
    for (int r = 0; r < 3; r++)
        if (!(ix->by_rule[r] = malloc(sizeof(keyed) * (size_t)(n ? n : 1)))) return -1;
    for (int i = 0; i < n; i++) {
        const char *comma = strchr(labels[i], ',');
        size_t first = comma ? (size_t)(comma - labels[i]) : strlen(labels[i]);
        ix->owned[2 * i] = normalised(labels[i], strlen(labels[i]));
        ix->owned[2 * i + 1] = normalised(labels[i], first);
        if (!ix->owned[2 * i] || !ix->owned[2 * i + 1]) return -1;
        ix->by_rule[0][i] = (keyed){labels[i], i};
        ix->by_rule[1][i] = (keyed){ix->owned[2 * i], i};
        ix->by_rule[2][i] = (keyed){ix->owned[2 * i + 1], i};
    }
    for (int r = 0; r < 3; r++) qsort(ix->by_rule[r], (size_t)n, sizeof(keyed), by_key);
    return 0;
}

/* The label of one folder by the first rule that matches: >= 0, -1 none, -2 ambiguous (err). */
static int match_one(const label_index *ix, const char *folder, const char *const *labels,
                     vit_error *err) {
    char *norm = normalised(folder, strlen(folder));
    if (!norm) return vit_fail(err, "out of memory"), -2;
    static const char *const rule_name[3] = {"", " after normalising", " by first name"};
    int label = -1;
    for (int r = 0; r < 3 && label == -1; r++) {
        int a = -1, b = -1, m = lookup(ix->by_rule[r], ix->n, r == 0 ? folder : norm, &a, &b);
        if (m == 1) label = a;
        if (m > 1) {
            vit_fail(err, "folder '%s' matches labels %d ('%s') and %d ('%s')%s; give a class map",
                     folder, a, labels[a], b, labels[b], rule_name[r]);
            label = -2;
        }
    }
    free(norm);
    return label;
}

/* Two folders on one label make per-class figures meaningless: refuse. */
static int check_distinct(const char *const *folders, int num_folders, const char *const *labels,
                          int num_labels, const int *label_of, vit_error *err) {
    int *taker = malloc(sizeof *taker * (size_t)(num_labels ? num_labels : 1));
    if (!taker) return vit_fail(err, "out of memory");
    for (int l = 0; l < num_labels; l++) taker[l] = -1;
    int rc = 0;
    for (int i = 0; i < num_folders && rc == 0; i++) {
        int l = label_of[i];
        if (taker[l] >= 0)
            rc = vit_fail(err, "folders '%s' and '%s' both match label %d ('%s')",
                          folders[taker[l]], folders[i], l, labels[l]);
        taker[l] = i;
    }
    free(taker);
    return rc;
}

int imagefolder_match_labels(const char *const *folders, int num_folders, const char *const *labels,
                             int num_labels, int *label_of, int *by_order, vit_error *err) {
    *by_order = 0;
    label_index ix;
    if (label_index_build(&ix, labels, num_labels) != 0) {
        label_index_free(&ix);
        return vit_fail(err, "out of memory");
    }
    int matched = 0, first_unmatched = -1, rc = 0;
    for (int i = 0; i < num_folders && rc == 0; i++) {
        label_of[i] = match_one(&ix, folders[i], labels, err);
        if (label_of[i] == -2)
            rc = -1;
        else if (label_of[i] >= 0)
            matched++;
        else if (first_unmatched < 0)
            first_unmatched = i;
    }
    label_index_free(&ix);
    if (rc != 0) return rc;
    if (matched == 0 && num_folders == num_labels) {
        for (int i = 0; i < num_folders; i++) label_of[i] = i;
        *by_order = 1;
        return 0;
    }
    if (matched == 0)
        return vit_fail(err,
                        "folder '%s' matches no label, nor does any other folder, and %d folders "
                        "cannot stand for %d labels in order; give a class map",
                        folders[0], num_folders, num_labels);
    if (first_unmatched >= 0)
        return vit_fail(err, "folder '%s' matches no label (%d of %d folders do not)",
                        folders[first_unmatched], num_folders - matched, num_folders);
    return check_distinct(folders, num_folders, labels, num_labels, label_of, err);
}

/* ---- class map file ---- */

int imagefolder_match_class_map(const char *map_path, const char *const *folders, int num_folders,
                                int num_labels, int *label_of, vit_error *err) {
    strlist list;
    if (strlist_read(&list, map_path, 64 << 20, STRLIST_TRIM, err) != 0) return -1;
    char **lines = list.lines;
    int classes = list.count, rc = 0;
    while (classes > 0 && lines[classes - 1][0] == 0) classes--; /* trailing blank lines */
    keyed *k = malloc(sizeof *k * (size_t)(classes ? classes : 1));
    int m = 0;
    if (!k)
        rc = vit_fail(err, "out of memory");
    else if (classes == 0)
        rc = vit_fail(err, "%s: no class names", map_path);
    else if (classes > num_labels)
        rc = vit_fail(err, "%s: %d class names but the model has %d labels", map_path, classes,
                      num_labels);
    for (int i = 0; i < classes && rc == 0; i++)
        if (lines[i][0]) k[m++] = (keyed){lines[i], i};
    if (rc == 0) qsort(k, (size_t)m, sizeof *k, by_key);
    for (int i = 1; i < m && rc == 0; i++)
        if (strcmp(k[i - 1].key, k[i].key) == 0)
            rc = vit_fail(err, "%s: '%s' on lines %d and %d", map_path, k[i].key,
                          k[i - 1].index + 1, k[i].index + 1);
    for (int i = 0; i < num_folders && rc == 0; i++) {
        int a = -1, b;
        if (lookup(k, m, folders[i], &a, &b) == 0)
            rc = vit_fail(err, "folder '%s' is not in the class map %s", folders[i], map_path);
        label_of[i] = a;
    }
    free(k);
    strlist_free(&list);
    return rc;
}

/* ---- on an imagefolder ---- */

static int alloc_labels(imagefolder *f, vit_error *err) {
    free(f->label_of);
    f->label_of = malloc(sizeof *f->label_of * (size_t)f->num_folders);
    return f->label_of ? 0 : vit_fail(err, "out of memory");
}

/* Puts "root: " in front of a matching error, which only knows folder names. */
static int name_root(imagefolder *f, vit_error *err) {
    if (err) {
        vit_error inner = *err;
        vit_fail(err, "%s: %s", f->root, inner.msg);
    }
    free(f->label_of);
    f->label_of = NULL;
    return -1;
}

int imagefolder_map_labels(imagefolder *f, const char *const *labels, int num_labels, int *by_order,
                           vit_error *err) {
    if (alloc_labels(f, err) != 0) return -1;
    if (imagefolder_match_labels((const char *const *)f->folders, f->num_folders, labels,
                                 num_labels, f->label_of, by_order, err) != 0)
        return name_root(f, err);
    return 0;
}

int imagefolder_map_file(imagefolder *f, const char *map_path, int num_labels, vit_error *err) {
    if (alloc_labels(f, err) != 0) return -1;
    if (imagefolder_match_class_map(map_path, (const char *const *)f->folders, f->num_folders,
                                    num_labels, f->label_of, err) != 0)
        return name_root(f, err);
    return 0;
}

/* ---- the walk ---- */

typedef struct {
    char *path;
    dir_entry *entries;
    int count, next;
    dev_t dev;
    ino_t ino;
} frame;

struct imagefolder_walk {
    const imagefolder *f; /* NULL: a walk of the images under one folder, tree */
    const char *tree;
    int tree_done;
    struct stat root; /* an ancestor of every folder walked, for loop detection */
    int folder;       /* the class folder being walked; the next one when the stack is empty */
    frame stack[MAX_DEPTH];
    int depth;
};

imagefolder_walk *imagefolder_walk_open(const imagefolder *f, vit_error *err) {
    imagefolder_walk *w = calloc(1, sizeof *w);
    if (!w) return vit_fail(err, "out of memory"), NULL;
    w->f = f;
    w->folder = -1;
    if (stat(f->root, &w->root) != 0) {
        vit_fail(err, "%s: %s", f->root, strerror(errno));
        return free(w), NULL;
    }
    return w;
}

static void pop(imagefolder_walk *w) {
    frame *t = &w->stack[--w->depth];
    free(t->path);
    free_entries(t->entries, t->count);
}

void imagefolder_walk_close(imagefolder_walk *w) {
    if (!w) return;
    while (w->depth > 0) pop(w);
    free(w);
}

imagefolder_walk *imagefolder_walk_tree(const char *dir, vit_error *err) {
    imagefolder_walk *w = calloc(1, sizeof *w);
    if (!w) return vit_fail(err, "out of memory"), NULL;
    w->tree = dir;
    w->folder = -1;
    if (stat(dir, &w->root) != 0) {
        vit_fail(err, "%s: %s", dir, strerror(errno));
        return free(w), NULL;
    }
    return w;
}

static void set_entry(const imagefolder_walk *w, imagefolder_entry *e, char *path, int unreadable) {
    e->path = path;
    e->folder = w->folder;
    e->label = w->f && w->f->label_of ? w->f->label_of[w->folder] : -1;
    e->unreadable = unreadable;
}

/* Pushes directory path (taking it). 0: entered or skipped; 1: *e reports why it cannot be;
 * -1: out of memory. */
static int enter(imagefolder_walk *w, char *path, imagefolder_entry *e, vit_error *err) {
    if (w->depth == MAX_DEPTH) {
        vit_fail(err, "%s: nested more than %d folders deep", path, MAX_DEPTH);
        return set_entry(w, e, path, 1), 1;
    }
    DIR *d = opendir(path);
    struct stat st;
    if (!d || fstat(dirfd(d), &st) != 0) {
        vit_fail(err, "%s: cannot list the folder: %s", path, strerror(errno));
        if (d) closedir(d);
        return set_entry(w, e, path, 1), 1;
    }
    for (int i = w->f ? -1 : 0; i < w->depth; i++) { /* a tree's root is its first frame */
        dev_t dev = i < 0 ? w->root.st_dev : w->stack[i].dev;
        ino_t ino = i < 0 ? w->root.st_ino : w->stack[i].ino;
        if (dev == st.st_dev && ino == st.st_ino) {
            closedir(d);
            vit_fail(err, "%s: links back to %s (a folder loop)", path,
                     i < 0 ? w->f->root : w->stack[i].path);
            return set_entry(w, e, path, 1), 1;
        }
    }
    frame *t = &w->stack[w->depth];
    int rc = read_sorted(d, &t->entries, &t->count);
    closedir(d);
    if (rc != 0) return free(path), vit_fail(err, "out of memory");
    t->path = path;
    t->next = 0;
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    w->depth++;
    return 0;
}

/* Looks at one entry of the top folder: 1 *e set, 0 nothing to report, -1 out of memory. */
static int visit(imagefolder_walk *w, const dir_entry *d, imagefolder_entry *e, vit_error *err) {
    char *path = join_path(w->stack[w->depth - 1].path, d->name);
    if (!path) return vit_fail(err, "out of memory");
    const int image = imagefolder_is_image_name(d->name);
    struct stat st;
    int mode = entry_mode(path, d->type, &st);
    if (mode == S_IFDIR) return enter(w, path, e, err);
    if (image && mode == S_IFREG) return set_entry(w, e, path, 0), 1;
    if (image) { /* named like an image but cannot be one: say so rather than hang on a fifo */
        vit_fail(err, "%s: %s", path, mode == -1 ? strerror(errno) : "not a regular file");
        return set_entry(w, e, path, 1), 1;
    }
    free(path);
    return 0;
}

int imagefolder_walk_next(imagefolder_walk *w, imagefolder_entry *e, vit_error *err) {
    memset(e, 0, sizeof *e);
    for (;;) {
        int rc;
        if (w->depth == 0 && !w->f) {
            if (w->tree_done) return 0;
            w->tree_done = 1;
            char *path = strdup(w->tree);
            if (!path) return vit_fail(err, "out of memory");
            rc = enter(w, path, e, err);
        } else if (w->depth == 0) {
            if (w->folder + 1 >= w->f->num_folders) return 0;
            w->folder++;
            char *path = join_path(w->f->root, w->f->folders[w->folder]);
            if (!path) return vit_fail(err, "out of memory");
            rc = enter(w, path, e, err);
        } else {
            frame *t = &w->stack[w->depth - 1];
            if (t->next == t->count) {
                pop(w);
                continue;
            }
            rc = visit(w, &t->entries[t->next++], e, err);
        }
        if (rc != 0) return rc;
    }
}

/* ---- all at once ---- */

void imagefolder_list_free(imagefolder_entry *samples, size_t count) {
    for (size_t i = 0; i < count; i++) free(samples[i].path);
    free(samples);
}

int imagefolder_list(const imagefolder *f, imagefolder_entry **samples, size_t *count,
                     imagefolder_problem_fn on_problem, void *user, vit_error *err) {
    imagefolder_walk *w = imagefolder_walk_open(f, err);
    if (!w) return -1;
    imagefolder_entry *s = NULL, e;
    size_t n = 0, cap = 0;
    vit_error why = {{0}};
    int rc;
    while ((rc = imagefolder_walk_next(w, &e, &why)) == 1) {
        if (e.unreadable) {
            if (on_problem) on_problem(user, why.msg);
            free(e.path);
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            imagefolder_entry *grown = realloc(s, sizeof *s * cap);
            if (!grown) {
                free(e.path);
                rc = vit_fail(&why, "out of memory");
                break;
            }
            s = grown;
        }
        s[n++] = e;
    }
    imagefolder_walk_close(w);
    if (rc != 0) {
        if (err) *err = why;
        return imagefolder_list_free(s, n), -1;
    }
    *samples = s;
    *count = n;
    return 0;
}
