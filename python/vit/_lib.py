"""libvit.so through ctypes: finding it, and the C declarations of vit.h that the package calls.

The structures and signatures mirror vit/vit.h of the version in API_VERSION; a library of another
minor version (the 0.x API may change between them) is refused rather than called with the wrong
layouts.
"""

import ctypes
import ctypes.util
import glob
import os
import shutil
import sys

# The vit.h these declarations follow (major.minor: the API changes only with these in 0.x).
API_VERSION = (0, 1)


class Error(Exception):
    """A failure reported by libvit (its one-line message naming the file and the problem), or
    libvit.so itself not found."""


class _Error(ctypes.Structure):
    _fields_ = [("msg", ctypes.c_char * 512)]


class Params(ctypes.Structure):
    _fields_ = [
        ("threads", ctypes.c_int),
        ("max_batch", ctypes.c_int),
        ("image_size", ctypes.c_int),
        ("max_pixels", ctypes.c_int64),
        ("backend", ctypes.c_int),
        ("precision", ctypes.c_int),
        ("exif_orientation", ctypes.c_int),
        ("inference_only", ctypes.c_int),
    ]


class TextParams(ctypes.Structure):
    _fields_ = [
        ("threads", ctypes.c_int),
        ("max_batch", ctypes.c_int),
        ("backend", ctypes.c_int),
        ("precision", ctypes.c_int),
        ("tokenizer_optional", ctypes.c_int),
    ]


class TextPairs(ctypes.Structure):
    """vit_text_pairs: the pairs' first and second texts and their lengths."""

    _fields_ = [
        ("a", ctypes.POINTER(ctypes.c_char_p)),
        ("b", ctypes.POINTER(ctypes.c_char_p)),
        ("a_lengths", ctypes.POINTER(ctypes.c_size_t)),
        ("b_lengths", ctypes.POINTER(ctypes.c_size_t)),
    ]


class GenParams(ctypes.Structure):
    _fields_ = [
        ("image", Params),
        ("max_beams", ctypes.c_int),
        ("tokenizer_optional", ctypes.c_int),
    ]


class GenOptions(ctypes.Structure):
    _fields_ = [
        ("num_beams", ctypes.c_int),
        ("max_new_tokens", ctypes.c_int),
        ("max_length", ctypes.c_int),
        ("min_length", ctypes.c_int),
        ("length_penalty", ctypes.c_float),
        ("early_stopping", ctypes.c_int),
        ("no_repeat_ngram_size", ctypes.c_int),
    ]


class Generation(ctypes.Structure):
    _fields_ = [
        ("text", ctypes.c_void_p),  # char *, freed by vit_generation_free: not a c_char_p copy
        ("ids", ctypes.POINTER(ctypes.c_int32)),
        ("num_ids", ctypes.c_int),
        ("score", ctypes.c_float),
    ]


class TextEmbedOpts(ctypes.Structure):
    _fields_ = [("pool", ctypes.c_int), ("prompt", ctypes.c_char_p), ("dimensions", ctypes.c_int)]


class Prediction(ctypes.Structure):
    _fields_ = [("index", ctypes.c_int), ("prob", ctypes.c_float), ("label", ctypes.c_char_p)]


class Entity(ctypes.Structure):
    _fields_ = [
        ("label", ctypes.c_char_p),
        ("score", ctypes.c_float),
        ("word", ctypes.c_char_p),
        ("start", ctypes.c_int),
        ("end", ctypes.c_int),
        ("byte_start", ctypes.c_int),
        ("byte_end", ctypes.c_int),
        ("index", ctypes.c_int),
    ]


class Explanation(ctypes.Structure):
    _fields_ = [
        ("label", ctypes.c_int),
        ("prob", ctypes.c_float),
        ("maps", ctypes.c_int),
        ("grid_h", ctypes.c_int),
        ("grid_w", ctypes.c_int),
        ("map", ctypes.POINTER(ctypes.c_float)),
    ]


BACKENDS = {None: 0, "default": 0, "openblas": 1, "onednn": 2}
PRECISIONS = {None: 0, "fp32": 0, "bf16": 1, "int8": 2}
POOLS = {"cls": 0, "mean": 1, "pooler": 2, "joint": 3, "patches": 4}
# vit_pool for texts: VIT_POOL_PROJECTION 5, then sentence-transformers' poolings and pipeline
TEXT_POOLS = {"cls": 0, "mean": 1, "pooler": 2, "joint": 3, "projection": 5, "max": 6,
              "mean_sqrt_len": 7, "weightedmean": 8, "lasttoken": 9, "sentence": 10}
EXPLAIN_METHODS = {"rollout": 0, "last": 1, "grad": 2}

_p = ctypes.c_void_p  # contexts, and numpy buffers passed by address
_i = ctypes.c_int
_s = ctypes.c_char_p
_sz = ctypes.c_size_t
_err = ctypes.POINTER(_Error)
_preds = ctypes.POINTER(Prediction)
_strs = ctypes.POINTER(ctypes.c_char_p)

# name: (restype, argtypes)
_SIGNATURES = {
    "vit_version": (_s, []),
    "vit_default_params": (Params, []),
    "vit_load": (_p, [_s, ctypes.POINTER(Params), _err]),
    "vit_share": (_p, [_p, _err]),
    "vit_free": (None, [_p]),
    "vit_num_labels": (_i, [_p]),
    "vit_has_classifier": (_i, [_p]),
    "vit_label": (_s, [_p, _i]),
    "vit_input_floats": (_sz, [_p]),
    "vit_input_shape": (None, [_p, ctypes.POINTER(_i), ctypes.POINTER(_i), ctypes.POINTER(_i)]),
    "vit_tokens": (_i, [_p]),
    "vit_hidden_size": (_i, [_p]),
    "vit_flops_per_image": (ctypes.c_double, [_p]),
    "vit_num_parameters": (_sz, [_p]),
    "vit_compute": (_s, [_p]),
    "vit_preprocess_defaults": (_s, [_p]),
    "vit_preprocess_file": (_i, [_p, _s, _p, _err]),
    "vit_preprocess_memory": (_i, [_p, _p, _sz, _p, _err]),
    "vit_preprocess_rgb": (_i, [_p, _p, _i, _i, _p, _err]),
    "vit_forward": (_i, [_p, _p, _i, _p, _err]),
    "vit_patch_grid": (None, [_p, ctypes.POINTER(_i), ctypes.POINTER(_i)]),
    "vit_embed": (_i, [_p, _p, _i, _i, _p, _err]),
    "vit_softmax": (None, [_p, _i]),
    "vit_top_k": (_i, [_p, _p, _i, _preds, _err]),
    "vit_classify_file": (_i, [_p, _s, _i, _preds, _err]),
    "vit_classify_memory": (_i, [_p, _p, _sz, _i, _preds, _err]),
    "vit_classify_image": (_i, [_p, _p, _i, _i, _i, _preds, _err]),
    "vit_explain": (_i, [_p, _p, _i, _i, ctypes.POINTER(Explanation), _err]),
    "vit_explanation_free": (None, [ctypes.POINTER(Explanation)]),
    "vit_joint_dim": (_i, [_p]),
    "vit_classes_create": (_p, [_p, _strs, _i, _strs, _i, _err]),
    "vit_classes_free": (None, [_p]),
    "vit_classes_count": (_i, [_p]),
    "vit_classes_name": (_s, [_p, _i]),
    "vit_classes_sigmoid": (_i, [_p]),
    "vit_zero_shot": (_i, [_p, _p, _p, _i, _p, _p, _err]),
    "vit_classes_top_k": (_i, [_p, _p, _i, _preds, _err]),
    "vit_text_default_params": (TextParams, []),
    "vit_text_load": (_p, [_s, ctypes.POINTER(TextParams), _err]),
    "vit_text_share": (_p, [_p, _err]),
    "vit_text_free": (None, [_p]),
    "vit_text_num_labels": (_i, [_p]),
    "vit_text_regression": (_i, [_p]),
    "vit_text_label": (_s, [_p, _i]),
    "vit_text_max_batch": (_i, [_p]),
    "vit_text_max_tokens": (_i, [_p]),
    "vit_text_compute": (_s, [_p]),
    "vit_text_forward": (_i, [_p, _strs, ctypes.POINTER(_sz), _i, _p, _p, _err]),
    "vit_text_tokenize": (_i, [_p, _s, _sz, _p, _i, _err]),
    "vit_text_embed": (_i, [_p, _strs, ctypes.POINTER(_sz), _i, _i, _p, _err]),
    "vit_text_embed_with": (
        _i,
        [_p, _strs, ctypes.POINTER(_sz), _i, ctypes.POINTER(TextEmbedOpts), _p, _err],
    ),
    "vit_text_default_pool": (_i, [_p]),
    "vit_text_embed_size": (_i, [_p, _i]),
    "vit_text_prompt_count": (_i, [_p]),
    "vit_text_prompt_name": (_s, [_p, _i]),
    "vit_text_prompt": (_s, [_p, _s]),
    "vit_text_default_prompt": (_s, [_p]),
    "vit_text_similarity": (_s, [_p]),
    "vit_resolve_model": (_i, [_s, ctypes.POINTER(ctypes.c_char), _sz, _err]),
    "vit_text_pipeline": (_s, [_p]),
    "vit_text_token_logits": (_i, [_p, _strs, ctypes.POINTER(_sz), _i, _p, _err]),
    "vit_text_forward_pairs": (_i, [_p, ctypes.POINTER(TextPairs), _i, _p, _p, _err]),
    "vit_text_pair_scores": (_i, [_p, ctypes.POINTER(TextPairs), _i, _p, _err]),
    "vit_text_ids": (_p, [_p, _i, ctypes.POINTER(_i)]),
    "vit_text_entities": (_i, [_p, _i, _s, _sz, _p, _i, _i, ctypes.POINTER(ctypes.POINTER(Entity)),
                               _err]),
    "vit_aggregation_from_name": (_i, [_s]),
    "vit_text_piece": (_s, [_p, _i]),
    "vit_text_hidden_size": (_i, [_p]),
    "vit_text_joint_dim": (_i, [_p]),
    "vit_text_top_k": (_i, [_p, _p, _i, _preds, _err]),
    "vit_gen_default_params": (GenParams, []),
    "vit_gen_load": (_p, [_s, ctypes.POINTER(GenParams), _err]),
    "vit_gen_share": (_p, [_p, _err]),
    "vit_gen_free": (None, [_p]),
    "vit_gen_image_context": (_p, [_p]),
    "vit_gen_compute": (_s, [_p]),
    "vit_gen_vocab_size": (_i, [_p]),
    "vit_gen_max_new_tokens": (_i, [_p]),
    "vit_gen_default_options": (GenOptions, [_p]),
    "vit_generate": (
        _i,
        [_p, _p, _i, ctypes.POINTER(GenOptions), ctypes.POINTER(Generation), _err],
    ),
    "vit_generate_file": (
        _i,
        [_p, _s, ctypes.POINTER(GenOptions), ctypes.POINTER(Generation), _err],
    ),
    "vit_generation_free": (None, [ctypes.POINTER(Generation), _i]),
}


def _candidates():
    """Where libvit may be, in the order looked at: (what it is, a path or a soname)."""
    env = os.environ.get("VIT_LIBRARY")
    if env:
        # An explicit choice is the only one: a wrong one must fail, not fall back silently.
        return [("VIT_LIBRARY", env)]
    found = []
    # A checkout after `make`: python/vit/ -> the checkout's build/libvit.so.X.Y.Z.
    checkout = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
    built = glob.glob(os.path.join(checkout, "libvit.so*"))
    for path in sorted(built, key=os.path.getmtime, reverse=True):
        found.append(("the checkout's build", os.path.normpath(path)))
    # make install: the dynamic linker's folders (ldconfig ran in /usr/local), LD_LIBRARY_PATH.
    found.append(("the dynamic linker", "libvit.so.%d" % API_VERSION[0]))
    name = ctypes.util.find_library("vit")
    if name:
        found.append(("ctypes.util.find_library", name))
    # make install PREFIX=elsewhere: the lib/ beside the installed bin/vit on PATH, or this
    # Python's own prefix (a virtual environment's, say).
    program = shutil.which("vit")
    prefixes = [os.path.dirname(os.path.dirname(os.path.realpath(program)))] if program else []
    prefixes.append(sys.prefix)
    for prefix in prefixes:
        path = os.path.join(prefix, "lib", "libvit.so.%d" % API_VERSION[0])
        if os.path.exists(path):
            found.append(("prefix %s" % prefix, path))
    return found


_lib = None
_path = None


def _declare(lib):
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _check_version(lib, path):
    lib.vit_version.restype = ctypes.c_char_p
    version = lib.vit_version().decode()
    major_minor = tuple(int(x) for x in version.split(".")[:2])
    if major_minor != API_VERSION:
        raise Error(
            "%s is libvit %s; this vit package calls the API of %d.%d (rebuild one or the other)"
            % (path, version, API_VERSION[0], API_VERSION[1])
        )


def _loaded_file(name):
    """The file the dynamic linker opened for name (a soname resolves to a path only there)."""
    if os.sep in name:
        return os.path.realpath(name)
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                file = line.split(None, 5)[-1].strip()
                if os.path.basename(file).startswith("libvit.so"):
                    return file
    except OSError:
        pass
    return name


def lib():
    """The loaded libvit (loaded on first use), its functions declared."""
    global _lib, _path
    if _lib is not None:
        return _lib
    tried = []
    for where, path in _candidates():
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s): %s" % (path, where, e))
            continue
        _check_version(loaded, path)
        _declare(loaded)
        _lib, _path = loaded, _loaded_file(path)
        return _lib
    raise Error(
        "libvit.so not found; looked for " + "; ".join(tried) + ". Build it with `make` in the "
        "vit checkout (PYTHONPATH=python finds build/libvit.so), install it with `make install`, "
        "or set VIT_LIBRARY=/path/to/libvit.so"
    )


def path():
    """The file libvit was loaded from (loading it if needed)."""
    lib()
    return _path


def fail(err):
    """The Error of a failed call's vit_error."""
    return Error(err.msg.decode("utf-8", "replace"))


def new_error():
    return _Error()
