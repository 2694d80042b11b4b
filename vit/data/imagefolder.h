#ifndef VIT_IMAGEFOLDER_H
#define VIT_IMAGEFOLDER_H

/* Labeled image folders in the ImageFolder layout of torchvision and timm:
 *
 *   ROOT/<class folder>/<image>            images may sit in nested folders inside a class folder
 *
 * Images are regular files named *.png, *.jpg, *.jpeg, *.webp, *.tif, *.tiff, *.gif or *.bmp (any
 * case); other files are ignored, and so are hidden entries (names starting with '.': .git,
 * .ipynb_checkpoints, macOS ._ files).
 * Class folders and the files inside are visited in byte-wise sorted order, so runs repeat.
 *
 *   imagefolder f;
 *   imagefolder_open(&f, "data/val", &err);                    // lists the class folders
 *   imagefolder_map_labels(&f, labels, num_labels, &by_order, &err);   // or imagefolder_map_file
 *   imagefolder_walk *w = imagefolder_walk_open(&f, &err);     // lazy: one directory at a time
 *   imagefolder_entry e;
 *   while (imagefolder_walk_next(w, &e, &err) == 1) { use e.path, e.label; free(e.path); }
 *   imagefolder_walk_close(w);
 *   imagefolder_close(&f);
 */

#include <stddef.h>

#include "vit/base/error.h"

typedef struct {
    char *root;
    char **folders; /* class folder names, sorted */
    int num_folders;
    int *label_of; /* [num_folders] class index of each folder, once mapped; else NULL */
} imagefolder;

/* Lists the class folders of root (sub-directories, symlinks to directories included). An error
 * when root is not a readable directory or has no class folder. */
int imagefolder_open(imagefolder *f, const char *root, vit_error *err);
void imagefolder_close(imagefolder *f);

/* 1 when name ends in .png, .jpg, .jpeg, .webp, .tif, .tiff, .gif or .bmp, any case. */
int imagefolder_is_image_name(const char *name);

/* The folder-to-label rules, for any list of folder names and label names. Each folder takes the
 * one label that is
 *   1. equal to its name, else
 *   2. equal after lower-casing and treating ' ', '_', '-' and '/' as the same character, else
 *   3. so equal to the label's first comma-separated name ("tench" for "tench, Tinca tinca").
 * Two labels matching at the same step, two folders taking one label, or a folder matching
 * nothing are errors naming the folder. When no folder matches anything and the counts are equal,
 * folder i (in the given order, which should be sorted) takes label i and *by_order is set so the
 * caller can warn. */
int imagefolder_match_labels(const char *const *folders, int num_folders, const char *const *labels,
                             int num_labels, int *label_of, int *by_order, vit_error *err);

/* timm's class map: one folder name per line, line number (from 0) = class index; surrounding
 * whitespace is stripped. A folder missing from the map, a name listed twice or more lines than
 * num_labels are errors. */
int imagefolder_match_class_map(const char *map_path, const char *const *folders, int num_folders,
                                int num_labels, int *label_of, vit_error *err);

/* The two above applied to f (sets f->label_of). */
int imagefolder_map_labels(imagefolder *f, const char *const *labels, int num_labels, int *by_order,
                           vit_error *err);
int imagefolder_map_file(imagefolder *f, const char *map_path, int num_labels, vit_error *err);

typedef struct {
    char *path;     /* root/<folder>/...: malloc'ed, the caller frees it */
    int folder;     /* index into f->folders */
    int label;      /* f->label_of[folder], or -1 when unmapped */
    int unreadable; /* 1: an entry that could not be listed or is no regular file; err says why */
} imagefolder_entry;

typedef struct imagefolder_walk imagefolder_walk;

/* A depth-first walk holding only the sorted names of the directories on its current path. */
imagefolder_walk *imagefolder_walk_open(const imagefolder *f, vit_error *err);
/* 1: *e is the next image (or an unreadable entry, e->unreadable set and err naming it);
 * 0: the walk is over; -1: out of memory (err). */
int imagefolder_walk_next(imagefolder_walk *w, imagefolder_entry *e, vit_error *err);
/* The same walk over the images anywhere under one folder, dir (which must outlive the walk);
 * entries have folder and label -1. */
imagefolder_walk *imagefolder_walk_tree(const char *dir, vit_error *err);
void imagefolder_walk_close(imagefolder_walk *w);

/* Every image of a mapped folder at once (for training, which shuffles): *samples holds *count
 * entries (path, folder, label), all readable. Unreadable entries are passed to on_problem (may be
 * NULL) with the message naming them. */
typedef void (*imagefolder_problem_fn)(void *user, const char *message);
int imagefolder_list(const imagefolder *f, imagefolder_entry **samples, size_t *count,
                     imagefolder_problem_fn on_problem, void *user, vit_error *err);
void imagefolder_list_free(imagefolder_entry *samples, size_t count);

#endif
