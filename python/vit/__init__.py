"""vit from Python: Vision Transformer (and BERT) inference through libvit.so.

    import vit
    model = vit.load("models/vit-tiny-in1k")
    model.classify("cat.jpg", k=3)       # [Prediction(index=285, label='Egyptian cat', ...), ...]
    model.embed("cat.jpg")               # numpy float32 [hidden]

An image is a file path (str or os.PathLike), the bytes of an encoded file, a PIL.Image, or a uint8
numpy array HxWx3 (RGB) or HxW (grey); a list (or tuple) of images, or a uint8 array NxHxWx3,
gives a list of answers, one per image. Failures of the library raise vit.Error with its message.

A model computes one call at a time (calls from several threads wait for each other); share()
gives another model over the same weights (no copy of them) for another thread.
"""

import ctypes
import json
import os
import threading
from typing import List, NamedTuple

import numpy as np

from . import _lib
from ._lib import Error

Error.__module__ = __name__  # vit.Error, where users catch it

__version__ = "0.1.0"
__all__ = [
    "Error",
    "Generation",
    "Generator",
    "ImageModel",
    "Prediction",
    "TextModel",
    "Classes",
    "Explanation",
    "library_path",
    "load",
    "version",
]

# The CLI's prompt for zero-shot class names (vit classify --template's default, CLIP's).
DEFAULT_TEMPLATES = ("a photo of a {}.",)


def _f32(x):
    """A float32 value as its shortest repr ('0.8300392', not '0.8300392031669617')."""
    return str(np.float32(x))


class Prediction(NamedTuple):
    """One class of a top-k: its index, its label and its probability."""

    index: int
    label: str
    prob: float

    def __repr__(self):
        return "Prediction(index=%d, label=%r, prob=%s)" % (self.index, self.label, _f32(self.prob))


class Generation(NamedTuple):
    """An image-to-text model's answer: the text, the token ids from the decoder's start token on,
    and the sequence score (beam search: transformers' sequences_scores; greedy: the sum of the
    chosen tokens' log-probabilities)."""

    text: str
    ids: List[int]
    score: float

    def __repr__(self):
        return "Generation(text=%r, ids=%r, score=%s)" % (self.text, self.ids, _f32(self.score))


class Explanation(NamedTuple):
    """Where the model looked: the class explained (-1 for a base model), its probability, and
    the maps, float32 [maps, grid_h, grid_w] (one map, or one per head for method='last')."""

    label: int
    prob: float
    map: np.ndarray


def version():
    """The loaded libvit's version ("0.1.0")."""
    return _lib.lib().vit_version().decode()


def library_path():
    """The libvit.so file in use (found as vit/_lib.py says: VIT_LIBRARY, the checkout's build/,
    the installed library)."""
    return _lib.path()


def _text(ptr):
    return ptr.decode("utf-8", "replace") if ptr is not None else None


def _addr(array, row=0):
    """The address of row `row` of a C-contiguous numpy array."""
    return array.ctypes.data + row * (array.strides[0] if array.ndim else 0)


def _call(fn, *args):
    """fn(*args, &err); a negative (or NULL) answer raises Error with the library's message."""
    err = _lib.new_error()
    rc = fn(*args, ctypes.byref(err))
    if rc is None or (isinstance(rc, int) and rc < 0):
        raise _lib.fail(err)
    return rc


def _predictions(top, n):
    return [Prediction(top[i].index, _text(top[i].label), float(top[i].prob)) for i in range(n)]


def _top_k(fn, owner, probs, row, k):
    """fn (vit_top_k, vit_text_top_k, vit_classes_top_k) on row `row` of probs."""
    top = (_lib.Prediction * max(1, min(k, probs.shape[1])))()
    return _predictions(top, _call(fn, owner, _addr(probs, row), k, top))


def _enum(table, value, what):
    try:
        return table[value]
    except (KeyError, TypeError):
        names = ", ".join(repr(k) for k in table if k is not None)
        raise ValueError("%s %r: one of %s" % (what, value, names)) from None


# ---- images in ----


def _pil_module():
    try:
        from PIL import Image, ImageOps
    except ImportError:
        return None, None
    return Image, ImageOps


class _Input:
    """One image as the library takes it: a file name, encoded bytes, or RGB pixels."""

    __slots__ = ("kind", "data")

    def __init__(self, kind, data):
        self.kind, self.data = kind, data


def _rgb_array(a):
    if a.dtype != np.uint8:
        raise TypeError("an image array holds uint8 pixels (RGB or grey); got %s" % a.dtype)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim == 2:  # grey: the library takes RGB, as Pillow's convert("RGB") makes it
        return np.repeat(a[:, :, None], 3, axis=2)
    if a.ndim == 3 and a.shape[2] == 3:
        return np.ascontiguousarray(a)
    raise ValueError("an image array is HxWx3 (RGB) or HxW (grey); got shape %s" % (a.shape,))


def _pil_pixels(img, exif):
    _, ImageOps = _pil_module()
    # As Hugging Face's load_image: upright by the EXIF orientation (the library does the same
    # with files), a copy only when there is something to turn.
    if exif and img.getexif().get(0x0112, 1) not in (1, None):
        img = ImageOps.exif_transpose(img)
    if img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    return _rgb_array(np.asarray(img))


def _input(image, exif):
    if isinstance(image, (str, os.PathLike)):
        return _Input("file", os.fsencode(image))
    if isinstance(image, (bytes, bytearray, memoryview)):
        return _Input("memory", np.frombuffer(image, dtype=np.uint8))
    if isinstance(image, np.ndarray):
        return _Input("rgb", _rgb_array(image))
    Image, _ = _pil_module()
    if Image is not None and isinstance(image, Image.Image):
        return _Input("rgb", _pil_pixels(image, exif))
    raise TypeError(
        "an image is a file path, the bytes of an encoded image file, a PIL.Image or a uint8 "
        "numpy array HxWx3 or HxW; got %s" % type(image).__name__
    )


def _is_batch(images):
    return isinstance(images, (list, tuple)) or (
        isinstance(images, np.ndarray) and images.ndim == 4
    )


def _inputs(images, exif):
    """(the images as _Inputs, whether a batch was given)."""
    if _is_batch(images):
        return [_input(x, exif) for x in images], True
    return [_input(images, exif)], False


def _preprocess(lib, ctx, item, pixels, row):
    out = _addr(pixels, row)
    if item.kind == "file":
        _call(lib.vit_preprocess_file, ctx, item.data, out)
    elif item.kind == "memory":
        _call(lib.vit_preprocess_memory, ctx, _addr(item.data), item.data.size, out)
    else:
        h, w = item.data.shape[:2]
        _call(lib.vit_preprocess_rgb, ctx, _addr(item.data), w, h, out)


def _chunks(n, size):
    for start in range(0, n, size):
        yield start, min(size, n - start)


def _params(lib, backend, precision, threads, batch, image_size, max_pixels, exif):
    p = lib.vit_default_params()
    p.backend = _enum(_lib.BACKENDS, backend, "backend")
    p.precision = _enum(_lib.PRECISIONS, precision, "precision")
    p.threads = threads or 0
    p.max_batch = batch
    p.image_size = image_size or 0
    p.max_pixels = max_pixels or 0
    p.exif_orientation = 1 if exif else 0
    return p


class _Context:
    """A library context: freed once (close() or garbage collection), used by one call at a
    time."""

    _free = None  # the library's free function for this kind of context

    def _own(self, ctx):
        self._ctx = ctx
        self._lock = threading.Lock()

    @property
    def _c(self):
        if not self._ctx:
            raise ValueError("the model is closed")
        return self._ctx

    def close(self):
        """Frees the model's state now (its weights with the last model sharing them), once the
        call it may be running has returned."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # the constructor failed: nothing to free
            return
        with lock:
            ctx, self._ctx = self._ctx, None
        if ctx:
            getattr(_lib.lib(), self._free)(ctx)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- image models ----


class Classes(_Context):
    """Class names embedded once by a joint model's text tower (CLIP's prompt ensembling over the
    templates), to score images against: ImageModel.classes(...)."""

    _free = "vit_classes_free"

    def __init__(self, handle, names, templates):
        self._own(handle)
        self.names = list(names)
        self.templates = tuple(templates)
        # 1: the probabilities are each score's sigmoid (SigLIP); 0: a softmax over the classes.
        self.sigmoid = bool(_lib.lib().vit_classes_sigmoid(handle))

    def __len__(self):
        return len(self.names)

    def __repr__(self):
        return "Classes(%r, templates=%r)" % (self.names, self.templates)


class ImageModel(_Context):
    """An image model: a classifier (ViT, DeiT, DINOv2 and BEiT heads), a base model (features
    only) or the image tower of a CLIP or SigLIP folder (zero-shot classification, joint
    embeddings; its text tower is loaded from the same folder when first needed).

    backend: None (oneDNN where built, else OpenBLAS), 'openblas' or 'onednn'; precision: None or
    'fp32', 'bf16', 'int8'; threads: None (OMP_NUM_THREADS, else one per core); batch: images per
    forward pass (a list of images runs in batches of this many); image_size: run at this size
    (position embeddings interpolated); max_pixels: the decoder's limit; exif: turn images upright
    by their EXIF orientation (files and PIL images), as Hugging Face pipelines do.
    """

    _free = "vit_free"

    def __init__(
        self,
        path,
        *,
        backend=None,
        precision=None,
        threads=None,
        batch=8,
        image_size=None,
        max_pixels=None,
        exif=True,
    ):
        lib = _lib.lib()
        p = _params(lib, backend, precision, threads, batch, image_size, max_pixels, exif)
        err = _lib.new_error()
        ctx = lib.vit_load(os.fsencode(path), ctypes.byref(p), ctypes.byref(err))
        if not ctx:
            raise _lib.fail(err)
        text = {"backend": backend, "precision": precision, "threads": threads}
        self._setup(ctx, os.fspath(path), p, text, None)

    def _setup(self, ctx, path, params, text_settings, parent):
        self._own(ctx)
        lib = _lib.lib()
        self.path = path
        self._params = params
        self._text_settings = text_settings  # the text tower's, as the image tower's
        self._parent = parent  # the model this one shares weights with (its text tower too)
        self._text = None
        self._classes = None  # the last names and templates given to classify(): embedded once
        self.batch = max(1, params.max_batch)
        self.exif = bool(params.exif_orientation)
        self.num_labels = lib.vit_num_labels(ctx)
        self.labels = [_text(lib.vit_label(ctx, i)) for i in range(self.num_labels)]
        self.has_classifier = bool(lib.vit_has_classifier(ctx))
        self.joint_dim = lib.vit_joint_dim(ctx)
        c, h, w = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        lib.vit_input_shape(ctx, ctypes.byref(c), ctypes.byref(h), ctypes.byref(w))
        self.input_shape = (c.value, h.value, w.value)
        lib.vit_patch_grid(ctx, ctypes.byref(h), ctypes.byref(w))
        self.patch_grid = (h.value, w.value)
        self.hidden_size = lib.vit_hidden_size(ctx)
        self.tokens = lib.vit_tokens(ctx)
        self.num_parameters = lib.vit_num_parameters(ctx)
        self.flops_per_image = lib.vit_flops_per_image(ctx)
        self.compute = _text(lib.vit_compute(ctx))
        # None, or the line saying which defaults preprocess a folder without preprocessor_config.json
        self.preprocess_defaults = _text(lib.vit_preprocess_defaults(ctx))

    def __repr__(self):
        return "ImageModel(%r, %s)" % (self.path, self.compute)

    def share(self):
        """Another model over the same weights (no copy), with its own state: for another thread."""
        lib = _lib.lib()
        other = ImageModel.__new__(ImageModel)
        other._setup(
            _call(lib.vit_share, self._c), self.path, self._params, self._text_settings, self
        )
        return other

    def close(self):
        classes, text = getattr(self, "_classes", None), getattr(self, "_text", None)
        for owned in (classes and classes[1], text):
            if owned:
                owned.close()
        super().close()

    # -- pixels --

    def preprocess(self, image):
        """The model's input tensor of an image (or a list: [n, C, H, W]), float32 [C, H, W],
        exactly as Hugging Face's image processor with Pillow."""
        items, many = _inputs(image, self.exif)
        pixels = np.empty((len(items),) + self.input_shape, np.float32)
        for i, item in enumerate(items):
            _preprocess(_lib.lib(), self._c, item, pixels, i)
        return pixels if many else pixels[0]

    def forward(self, pixels):
        """The logits of preprocessed images: float32 [n, C, H, W] (or [C, H, W]) -> [n, labels]
        (or [labels])."""
        pixels = np.ascontiguousarray(pixels, dtype=np.float32)
        many = pixels.ndim == 4
        batch = pixels if many else pixels[None]
        if batch.shape[1:] != self.input_shape:
            raise ValueError(
                "pixels of shape %s; this model takes [n, %d, %d, %d]"
                % ((pixels.shape,) + self.input_shape)
            )
        logits = np.empty((batch.shape[0], self.num_labels), np.float32)
        lib = _lib.lib()
        with self._lock:
            for start, n in _chunks(batch.shape[0], self.batch):
                _call(lib.vit_forward, self._c, _addr(batch, start), n, _addr(logits, start))
        return logits if many else logits[0]

    def _batches(self, items):
        """(start, count, pixels) for the items in batches of self.batch, preprocessed into one
        buffer that is reused."""
        lib = _lib.lib()
        pixels = np.empty((min(self.batch, len(items)),) + self.input_shape, np.float32)
        for start, n in _chunks(len(items), self.batch):
            for i in range(n):
                _preprocess(lib, self._c, items[start + i], pixels, i)
            yield start, n, pixels

    # -- classification --

    def classify(self, image, k=5, *, classes=None, templates=DEFAULT_TEMPLATES):
        """The k most probable classes of an image, largest first: a list of Prediction(index,
        label, prob); for a list of images, a list of such lists. A CLIP or SigLIP model scores
        the images against `classes` (class names, or a Classes), each name put into the
        templates ('{}' standing for it) as vit classify --classes does."""
        if classes is not None:
            return self._zero_shot_top_k(image, k, classes, templates)
        self._require_labels()
        items, many = _inputs(image, self.exif)
        if not many:
            return self._classify_one(items[0], k)
        lib = _lib.lib()
        logits = np.empty((len(items), self.num_labels), np.float32)
        with self._lock:
            for start, n, pixels in self._batches(items):
                _call(lib.vit_forward, self._c, _addr(pixels), n, _addr(logits, start))
        out = []
        for row in range(len(items)):
            lib.vit_softmax(_addr(logits, row), self.num_labels)
            out.append(_top_k(lib.vit_top_k, self._c, logits, row, k))
        return out

    def _require_labels(self):
        if self.joint_dim > 0:
            raise Error(
                "%s is a joint image-text model (CLIP, SigLIP): give the class names to score "
                "images against, classify(image, classes=['cat', 'dog'])" % self.path
            )
        if _model_type(self.path) == "vision-encoder-decoder":
            raise Error(
                "%s is an image-to-text model (VisionEncoderDecoderModel), without labels: "
                "vit.load(%r).generate(image) writes an image's text" % (self.path, self.path)
            )
        if not self.has_classifier:
            raise Error(
                "%s is a base model without a classifier (Dinov2Model, BeitModel: its outputs "
                "are features): embed(image) gives them" % self.path
            )

    def _classify_one(self, item, k):
        lib = _lib.lib()
        top = (_lib.Prediction * max(1, min(k, self.num_labels)))()
        with self._lock:
            if item.kind == "file":
                n = _call(lib.vit_classify_file, self._c, item.data, k, top)
            elif item.kind == "memory":
                n = _call(
                    lib.vit_classify_memory, self._c, _addr(item.data), item.data.size, k, top
                )
            else:
                h, w = item.data.shape[:2]
                n = _call(lib.vit_classify_image, self._c, _addr(item.data), w, h, k, top)
            return _predictions(top, n)

    # -- features --

    def embed(self, image, pool=None):
        """Features of an image, float32 [dim] (a list of images: [n, dim]). pool: 'cls' (the
        final LayerNorm at the CLS token), 'mean' (the mean of the patch tokens), 'joint' (CLIP's
        and SigLIP's normalised embedding in the joint image-text space, their default) or
        'patches' (every patch token: [grid_h, grid_w, hidden])."""
        pool = pool or ("joint" if self.joint_dim > 0 else "cls")
        code = _enum(_lib.POOLS, pool, "pool")
        shape = {
            "joint": (self.joint_dim,),
            "patches": self.patch_grid + (self.hidden_size,),
        }.get(pool, (self.hidden_size,))
        items, many = _inputs(image, self.exif)
        out = np.empty((len(items),) + shape, np.float32)
        lib = _lib.lib()
        with self._lock:
            for start, n, pixels in self._batches(items):
                _call(lib.vit_embed, self._c, _addr(pixels), n, code, _addr(out, start))
        return out if many else out[0]

    def explain(self, image, method="rollout", label=None):
        """Where the model looked in one image: Explanation(label, prob, map). method: 'rollout'
        (attention rollout), 'last' (the last layer's CLS attention, a map per head) or 'grad'
        (gradient-weighted rollout for one class); label None: the most probable class."""
        code = _enum(_lib.EXPLAIN_METHODS, method, "method")
        lib = _lib.lib()
        pixels = self.preprocess(image)
        e = _lib.Explanation()
        with self._lock:
            _call(lib.vit_explain, self._c, _addr(pixels), code, -1 if label is None else label,
                  ctypes.byref(e))
        try:
            size = e.maps * e.grid_h * e.grid_w
            maps = np.ctypeslib.as_array(e.map, (size,)).reshape(e.maps, e.grid_h, e.grid_w).copy()
        finally:
            lib.vit_explanation_free(ctypes.byref(e))
        return Explanation(e.label, float(e.prob), maps)

    # -- zero-shot (CLIP, SigLIP) --

    @property
    def text(self):
        """A CLIP or SigLIP folder's text tower (a TextModel), loaded when first asked for."""
        if self._text is None:
            if self.joint_dim <= 0:
                raise Error(
                    "%s is an image classifier with its own %d labels, without a text tower "
                    "(class names need a CLIP or SigLIP model)" % (self.path, self.num_labels)
                )
            if self._parent is not None:
                self._text = self._parent.text.share()
            else:
                # 64 prompts per pass: the most vit_classes_create embeds at once (as the CLI)
                self._text = TextModel(self.path, batch=64, **self._text_settings)
        return self._text

    def classes(self, names, templates=DEFAULT_TEMPLATES):
        """The class names embedded once by the text tower (each name in every template, '{}'
        standing for it; no templates: the names as they are), for zero_shot and classify."""
        if isinstance(names, (str, bytes)):
            raise TypeError("names is a list of class names, not one string")
        names = list(names)
        templates = tuple(templates or ())
        text = self.text
        lib = _lib.lib()
        c_names = (ctypes.c_char_p * max(1, len(names)))(*[n.encode() for n in names])
        c_templates = (ctypes.c_char_p * max(1, len(templates)))(*[t.encode() for t in templates])
        with text._lock:
            handle = _call(lib.vit_classes_create, text._c, c_names, len(names), c_templates,
                           len(templates))
        return Classes(handle, names, templates)

    def _classes_of(self, classes, templates):
        if isinstance(classes, Classes):
            return classes
        if isinstance(classes, (str, bytes)):
            raise TypeError("classes is a list of class names (or a Classes), not one string")
        key = (tuple(classes), tuple(templates or ()))
        cached = self._classes
        if cached is None or cached[0] != key:
            # the one replaced is freed when no call of another thread still holds it
            cached = self._classes = (key, self.classes(*key))
        return cached[1]

    def zero_shot(self, image, classes, templates=DEFAULT_TEMPLATES, *, logits=False):
        """An image's probability for each class name, float32 [classes] (a list of images:
        [n, classes]): the softmax over the names (CLIP) or each one's sigmoid (SigLIP); logits
        True: the scores they come from (Hugging Face's logits_per_image)."""
        c = self._classes_of(classes, templates)
        items, many = _inputs(image, self.exif)
        scores = np.empty((len(items), len(c)), np.float32)
        probs = np.empty_like(scores)
        lib = _lib.lib()
        with self._lock:
            for start, n, pixels in self._batches(items):
                _call(lib.vit_zero_shot, self._c, c._c, _addr(pixels), n, _addr(scores, start),
                      _addr(probs, start))
        out = scores if logits else probs
        return out if many else out[0]

    def _zero_shot_top_k(self, image, k, classes, templates):
        c = self._classes_of(classes, templates)
        probs = self.zero_shot(image, c)
        many = probs.ndim == 2
        rows = probs if many else probs[None]
        lib = _lib.lib()
        out = [_top_k(lib.vit_classes_top_k, c._c, rows, r, k) for r in range(len(rows))]
        return out if many else out[0]

    def embed_text(self, texts):
        """Texts embedded by a CLIP or SigLIP text tower into the images' joint space, float32
        [dim] (a list: [n, dim]): an image's embed() times a text's is their cosine similarity."""
        return self.text.embed(texts, pool="joint")


# ---- text models ----


def _encode_texts(texts):
    many = not isinstance(texts, (str, bytes))
    data = [t if isinstance(t, bytes) else t.encode("utf-8") for t in (texts if many else [texts])]
    return data, many


class TextModel(_Context):
    """A text encoder's folder: BERT, RoBERTa, XLM-R, DistilBERT or MPNet as a sequence classifier
    (classify), a token classifier (token_logits) or a base model (sentence features), or a CLIP
    or SigLIP folder's text tower (embeddings in the joint space). batch: texts per forward
    pass (a list runs in batches of this many, each padded to its longest)."""

    _free = "vit_text_free"

    def __init__(self, path, *, backend=None, precision=None, threads=None, batch=32):
        lib = _lib.lib()
        p = lib.vit_text_default_params()
        p.backend = _enum(_lib.BACKENDS, backend, "backend")
        p.precision = _enum(_lib.PRECISIONS, precision, "precision")
        p.threads = threads or 0
        p.max_batch = batch
        err = _lib.new_error()
        ctx = lib.vit_text_load(os.fsencode(path), ctypes.byref(p), ctypes.byref(err))
        if not ctx:
            raise _lib.fail(err)
        self._setup(ctx, os.fspath(path))

    def _setup(self, ctx, path):
        self._own(ctx)
        lib = _lib.lib()
        self.path = path
        self.num_labels = lib.vit_text_num_labels(ctx)
        # problem_type "regression": the one output is a score (classify and predict give it raw)
        self.regression = bool(lib.vit_text_regression(ctx))
        self.labels = [_text(lib.vit_text_label(ctx, i)) for i in range(self.num_labels)]
        self.batch = lib.vit_text_max_batch(ctx)
        self.max_tokens = lib.vit_text_max_tokens(ctx)
        self.hidden_size = lib.vit_text_hidden_size(ctx)
        self.joint_dim = lib.vit_text_joint_dim(ctx)
        self.compute = _text(lib.vit_text_compute(ctx))
        # a sentence-transformers folder's prompts (config_sentence_transformers.json)
        self.prompts = {}
        for i in range(lib.vit_text_prompt_count(ctx)):
            name = lib.vit_text_prompt_name(ctx, i)
            self.prompts[_text(name)] = _text(lib.vit_text_prompt(ctx, name))
        self.default_prompt = _text(lib.vit_text_default_prompt(ctx))
        # SentenceTransformer.similarity_fn_name: the folder's, else "cosine"
        self.similarity_fn_name = _text(lib.vit_text_similarity(ctx))
        self.pipeline = _text(lib.vit_text_pipeline(ctx))  # None unless sentence-transformers

    def __repr__(self):
        return "TextModel(%r, %s)" % (self.path, self.compute)

    def share(self):
        """Another model over the same weights and tokenizer, for another thread."""
        other = TextModel.__new__(TextModel)
        other._setup(_call(_lib.lib().vit_text_share, self._c), self.path)
        return other

    def _batches(self, data):
        for start, n in _chunks(len(data), self.batch):
            part = data[start : start + n]
            yield start, n, (ctypes.c_char_p * n)(*part), (ctypes.c_size_t * n)(*map(len, part))

    def classify(self, text, k=5):
        """The k most probable classes of a text (str, or UTF-8 bytes): a list of
        Prediction(index, label, prob); for a list of texts, a list of such lists. A regression
        model's (self.regression) prob is its raw score, as the text-classification pipeline's
        function_to_apply "none" gives it."""
        if self.joint_dim > 0:
            raise Error(
                "%s is a joint model's text tower (CLIP, SigLIP), without classes: embed(texts) "
                "gives its embeddings" % self.path
            )
        data, many = _encode_texts(text)
        lib = _lib.lib()
        logits = np.empty((len(data), self.num_labels), np.float32)
        probs = np.empty_like(logits)
        with self._lock:
            for start, n, texts, lengths in self._batches(data):
                _call(lib.vit_text_forward, self._c, texts, lengths, n, _addr(logits, start),
                      _addr(probs, start))
        out = [_top_k(lib.vit_text_top_k, self._c, probs, row, k) for row in range(len(data))]
        return out if many else out[0]

    def embed(self, text, pool=None, *, prompt_name=None, prompt=None, dimensions=None):
        """Sentence features, float32 [dim] (a list of texts: [n, dim]). pool: None, the model's
        own (a sentence-transformers folder's pipeline, 'sentence': SentenceTransformer.encode's
        output; a CLIP or SigLIP tower's joint embedding or output; a BERT's 'cls'), 'cls' (the
        hidden state at [CLS]), 'mean', 'max', 'mean_sqrt_len', 'weightedmean', 'lasttoken'
        (sentence-transformers' poolings over the tokens, alone), 'pooler' (what the classifier
        reads), 'joint', 'projection'. prompt_name: one of self.prompts, put before each text
        (None: the folder's default prompt); prompt: any text instead ('' as encode's prompt=''). dimensions: the
        first N numbers, normalised again when the embedding is (Matryoshka models)."""
        lib = _lib.lib()
        code = lib.vit_text_default_pool(self._c) if pool is None else _enum(
            _lib.TEXT_POOLS, pool, "pool")
        if prompt_name is not None and prompt is not None:
            raise ValueError("prompt_name and prompt: give one")
        if prompt_name is not None:
            if prompt_name not in self.prompts:
                raise ValueError("prompt_name %r: one of %s" % (
                    prompt_name, ", ".join(repr(k) for k in self.prompts) or "none (no prompts)"))
            prompt = self.prompts[prompt_name]
        opts = _lib.TextEmbedOpts(code, None if prompt is None else prompt.encode("utf-8"),
                                  dimensions or 0)
        dim = dimensions or lib.vit_text_embed_size(self._c, code)
        data, many = _encode_texts(text)
        out = np.empty((len(data), dim), np.float32)
        with self._lock:
            for start, n, texts, lengths in self._batches(data):
                _call(lib.vit_text_embed_with, self._c, texts, lengths, n, ctypes.byref(opts),
                      _addr(out, start))
        return out if many else out[0]

    def token_logits(self, text):
        """A token classifier's (BertForTokenClassification, RobertaForTokenClassification, ...)
        logits of every token, float32 [tokens, labels], a row per id tokenize(text) gives (start
        and end tokens included); for a list of texts, a list of such arrays. A list runs in
        batches, each padded to its longest."""
        data, many = _encode_texts(text)
        lib = _lib.lib()
        out = []
        with self._lock:
            for start, n, texts, lengths in self._batches(data):
                logits = np.empty((n, self.max_tokens, self.num_labels), np.float32)
                _call(lib.vit_text_token_logits, self._c, texts, lengths, n, _addr(logits))
                for i in range(n):
                    count = ctypes.c_int()
                    lib.vit_text_ids(self._c, i, ctypes.byref(count))
                    out.append(logits[i, : count.value].copy())
        return out if many else out[0]

    def tag(self, text, *, aggregation="none", all_tokens=False):
        """A token classifier's entities as transformers' token-classification pipeline gives them
        (and vit tag): aggregation is its aggregation_strategy, "none" (a dict per token:
        "entity", "score", "index", "word", "start", "end"), "simple", "first", "average" or "max"
        (a dict per group: "entity_group", "score", "word", "start", "end"); start and end are
        character offsets into the text (None when the tokenizer gives none; "first", "average"
        and "max" need them). Entities labelled O are left out unless all_tokens (the pipeline's
        ignore_labels=[]). For a list of texts, a list of such lists."""
        lib = _lib.lib()
        code = lib.vit_aggregation_from_name(str(aggregation).encode("utf-8"))
        if code < 0:
            raise ValueError(f"aggregation {aggregation!r} is not none, simple, first, average "
                             "or max")
        data, many = _encode_texts(text)
        out = []
        entities = ctypes.POINTER(_lib.Entity)()
        with self._lock:
            for start, n, texts, lengths in self._batches(data):
                logits = np.empty((n, self.max_tokens, self.num_labels), np.float32)
                _call(lib.vit_text_token_logits, self._c, texts, lengths, n, _addr(logits))
                for i in range(n):
                    t = data[start + i]
                    m = _call(lib.vit_text_entities, self._c, i, t, len(t), _addr(logits, i), code,
                              int(bool(all_tokens)), ctypes.byref(entities))
                    found = []
                    for k in range(m):
                        e = entities[k]
                        d = {"entity_group" if code else "entity": _text(e.label),
                             "score": float(e.score)}
                        if not code:
                            d["index"] = e.index
                        d["word"] = _text(e.word)
                        d["start"] = e.start if e.start >= 0 else None
                        d["end"] = e.end if e.start >= 0 else None
                        found.append(d)
                    out.append(found)
        return out if many else out[0]

    def predict(self, pairs, *, raw=False):
        """A cross-encoder's scores of (a, b) pairs, as sentence-transformers' CrossEncoder.predict
        gives them: float32 [n] for a one-label model ([n, labels] for more), each the logits
        through the model's activation_fn (config.json's, else the sigmoid for one label; raw:
        the logits); a regression model's (problem_type "regression", self.regression) raw, as
        the text-classification pipeline gives it (function_to_apply "none") and vit text --pair
        prints it. One pair (a tuple) gives one score (or [labels]). The pairs are joined and
        cut as tokenizer(a, b) does."""
        single = isinstance(pairs, tuple)
        items = [pairs] if single else list(pairs)
        if not items:
            raise Error("no pairs")
        a, _ = _encode_texts([p[0] for p in items])
        b, _ = _encode_texts([p[1] for p in items])
        lib = _lib.lib()
        scores = np.empty((len(items), self.num_labels), np.float32)
        with self._lock:
            for start, n in _chunks(len(items), self.batch):
                pa, pb = a[start : start + n], b[start : start + n]
                p = _lib.TextPairs(
                    (ctypes.c_char_p * n)(*pa),
                    (ctypes.c_char_p * n)(*pb),
                    (ctypes.c_size_t * n)(*map(len, pa)),
                    (ctypes.c_size_t * n)(*map(len, pb)),
                )
                if raw or self.regression:
                    _call(lib.vit_text_forward_pairs, self._c, ctypes.byref(p), n,
                          _addr(scores, start), None)
                else:
                    _call(lib.vit_text_pair_scores, self._c, ctypes.byref(p), n,
                          _addr(scores, start))
        out = scores[:, 0] if self.num_labels == 1 else scores
        return out[0] if single else out

    def rank(self, query, documents, *, top_k=None, return_documents=False, raw=False):
        """The documents scored against the query, best first, as CrossEncoder.rank: a list of
        {"corpus_id", "score"} (and "text" with return_documents), the top_k best (None: all);
        equal scores keep the documents' order."""
        if self.num_labels != 1:
            raise Error("%s: rank needs a one-label cross-encoder, not %d labels"
                        % (self.path, self.num_labels))
        documents = list(documents)
        scores = self.predict([(query, d) for d in documents], raw=raw)
        order = sorted(range(len(documents)), key=lambda i: -float(scores[i]))
        out = []
        for i in order[:top_k]:
            item = {"corpus_id": i, "score": float(scores[i])}
            if return_documents:
                item["text"] = documents[i]
            out.append(item)
        return out

    def _prompt_of(self, names):
        return next((name for name in names if name in self.prompts), None)

    def embed_query(self, text, **settings):
        """embed with the prompt sentence-transformers' encode_query takes: the folder's "query"
        (else its default prompt); settings: embed's (pool, dimensions, prompt_name, prompt)."""
        if "prompt_name" not in settings and "prompt" not in settings:
            settings["prompt_name"] = self._prompt_of(("query",))
        return self.embed(text, **settings)

    def embed_document(self, text, **settings):
        """embed with encode_document's prompt: the first of "document", "passage" and "corpus"
        the folder has (else its default prompt)."""
        if "prompt_name" not in settings and "prompt" not in settings:
            settings["prompt_name"] = self._prompt_of(("document", "passage", "corpus"))
        return self.embed(text, **settings)

    def similarity(self, a, b):
        """SentenceTransformer.similarity: the rows of a [n, dim] against those of b [m, dim]
        (one row each: [dim]) by the folder's similarity_fn_name, float64 [n, m]."""
        return similarity(a, b, self.similarity_fn_name)

    def search(self, queries, documents, *, top_k=10, **settings):
        """The documents ranked for each query as `vit search -m MODEL QUERY... FILE` ranks a
        file's lines: embed_query's and embed_document's rows scored by semantic_search with the
        folder's similarity_fn_name (cosine unless it names dot, euclidean or manhattan; the
        top_k best, None or 0: all); a list per query of {"corpus_id", "score"}, or that list for
        one query (a str)."""
        single = isinstance(queries, (str, bytes))
        q = self.embed_query([queries] if single else list(queries), **settings)
        d = self.embed_document(list(documents), **settings)
        out = semantic_search(q, d, top_k=top_k, score_function=self.similarity_fn_name)
        return out[0] if single else out

    def tokenize(self, text):
        """The token ids a forward pass reads for a text, start and end tokens included, cut to
        max_tokens."""
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        ids = np.empty(self.max_tokens, np.int32)
        lib = _lib.lib()
        with self._lock:
            n = _call(lib.vit_text_tokenize, self._c, data, len(data), _addr(ids), len(ids))
        return ids[:n].tolist()


# ---- image to text ----

_EARLY_STOPPING = {False: 0, True: 1, "never": 2}


# generate()'s keywords before they took transformers' names
_OLD_GENERATE_NAMES = {
    "beams": "num_beams",
    "max_tokens": "max_new_tokens",
    "no_repeat_ngram": "no_repeat_ngram_size",
}


class Generator(_Context):
    """A VisionEncoderDecoderModel folder (TrOCR, ViT-GPT2): text from images, greedily or by beam
    search exactly as transformers' generate, with the folder's generation_config.json unless a
    call says otherwise. batch: images per call of the library; max_beams: the most beams a call
    may ask for (None: the library's 8); the other settings as ImageModel's."""

    _free = "vit_gen_free"

    def __init__(
        self,
        path,
        *,
        backend=None,
        precision=None,
        threads=None,
        batch=1,
        max_beams=None,
        max_pixels=None,
        exif=True,
    ):
        lib = _lib.lib()
        gp = lib.vit_gen_default_params()
        gp.image = _params(lib, backend, precision, threads, batch, None, max_pixels, exif)
        if max_beams is not None:
            gp.max_beams = max_beams
        err = _lib.new_error()
        ctx = lib.vit_gen_load(os.fsencode(path), ctypes.byref(gp), ctypes.byref(err))
        if not ctx:
            raise _lib.fail(err)
        self._setup(ctx, os.fspath(path), gp)

    def _setup(self, ctx, path, gp):
        self._own(ctx)
        lib = _lib.lib()
        self.path = path
        self._gp = gp
        self.batch = max(1, gp.image.max_batch)
        self.exif = bool(gp.image.exif_orientation)
        self._image = lib.vit_gen_image_context(ctx)  # owned by ctx
        c, h, w = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        lib.vit_input_shape(self._image, ctypes.byref(c), ctypes.byref(h), ctypes.byref(w))
        self.input_shape = (c.value, h.value, w.value)
        self.vocab_size = lib.vit_gen_vocab_size(ctx)
        self.max_new_tokens = lib.vit_gen_max_new_tokens(ctx)
        self.compute = _text(lib.vit_gen_compute(ctx))

    def __repr__(self):
        return "Generator(%r, %s)" % (self.path, self.compute)

    def share(self):
        """Another generator over the same weights, for another thread."""
        other = Generator.__new__(Generator)
        other._setup(_call(_lib.lib().vit_gen_share, self._c), self.path, self._gp)
        return other

    def options(self):
        """The model's own generation settings (generation_config.json) as generate's keywords
        (transformers' names)."""
        o = _lib.lib().vit_gen_default_options(self._c)
        stop = {v: k for k, v in _EARLY_STOPPING.items()}
        return {
            "num_beams": o.num_beams,
            "max_new_tokens": o.max_new_tokens,
            "max_length": o.max_length,
            "min_length": o.min_length,
            "length_penalty": o.length_penalty,
            "early_stopping": stop.get(o.early_stopping, o.early_stopping),
            "no_repeat_ngram_size": o.no_repeat_ngram_size,
        }

    def _options(self, num_beams, max_new_tokens, max_length, min_length, length_penalty,
                 early_stopping, no_repeat_ngram_size):
        if max_new_tokens and max_length:  # 0 (options()' "none"): the other limit rules
            raise ValueError("max_new_tokens and max_length together: one limit")
        o = _lib.lib().vit_gen_default_options(self._c)
        if num_beams is not None:
            o.num_beams = num_beams
        if max_new_tokens is not None:
            o.max_new_tokens = max_new_tokens
        if max_length is not None:
            o.max_length, o.max_new_tokens = max_length, 0  # the one limit asked for
        if min_length is not None:
            o.min_length = min_length
        if length_penalty is not None:
            o.length_penalty = length_penalty
        if early_stopping is not None:
            o.early_stopping = _enum(_EARLY_STOPPING, early_stopping, "early_stopping")
        if no_repeat_ngram_size is not None:
            o.no_repeat_ngram_size = no_repeat_ngram_size
        return o

    def generate(
        self,
        image,
        *,
        num_beams=None,
        max_new_tokens=None,
        max_length=None,
        min_length=None,
        length_penalty=None,
        early_stopping=None,
        no_repeat_ngram_size=None,
        **old_names,
    ):
        """The text of an image: Generation(text, ids, score); for a list of images, a list.
        transformers' generate settings, named as it names them (and as vit generate and the
        server do): num_beams (1 greedy, else beam search); max_new_tokens, at most this many
        tokens after the start token, or max_length, the whole sequence's limit; min_length,
        length_penalty, early_stopping (True, False or 'never'), no_repeat_ngram_size. None keeps
        the model's own (options()). The old names beams, max_tokens and no_repeat_ngram are
        still accepted."""
        named = {"num_beams": num_beams, "max_new_tokens": max_new_tokens,
                 "no_repeat_ngram_size": no_repeat_ngram_size}
        for old, value in old_names.items():
            new = _OLD_GENERATE_NAMES.get(old)
            if new is None:
                raise TypeError("generate() got an unexpected keyword argument %r" % old)
            if named[new] is not None:
                raise TypeError("generate() got both %s and its old name %s" % (new, old))
            named[new] = value
        opt = self._options(named["num_beams"], named["max_new_tokens"], max_length, min_length,
                            length_penalty, early_stopping, named["no_repeat_ngram_size"])
        items, many = _inputs(image, self.exif)
        lib = _lib.lib()
        results = []
        with self._lock:
            if not many and items[0].kind == "file":
                out = (_lib.Generation * 1)()
                _call(lib.vit_generate_file, self._c, items[0].data, ctypes.byref(opt), out)
                return self._collect(out, 1)[0]
            pixels = np.empty((min(self.batch, len(items)),) + self.input_shape, np.float32)
            out = (_lib.Generation * pixels.shape[0])()
            for start, n in _chunks(len(items), self.batch):
                for i in range(n):
                    _preprocess(lib, self._image, items[start + i], pixels, i)
                _call(lib.vit_generate, self._c, _addr(pixels), n, ctypes.byref(opt), out)
                results += self._collect(out, n)
        return results if many else results[0]

    @staticmethod
    def _collect(out, n):
        lib = _lib.lib()
        try:
            return [
                Generation(
                    ctypes.string_at(g.text).decode("utf-8", "replace") if g.text else "",
                    g.ids[: g.num_ids],
                    float(g.score),
                )
                for g in out[:n]
            ]
        finally:
            lib.vit_generation_free(out, n)


SIMILARITY_FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")


def similarity(a, b, fn="cosine"):
    """SentenceTransformer.similarity's functions, in float64: every row of a [n, dim] against
    every row of b [m, dim] (a [dim] row counts as [1, dim]) -> [n, m]. "cosine": util.cos_sim
    (each row divided by its norm, or by 1e-12 at least); "dot": dot_score; "euclidean" and
    "manhattan": euclidean_sim and manhattan_sim, the negative distances (-torch.cdist, p 2 and
    1), so that for each a higher score is closer."""
    a = np.atleast_2d(np.asarray(a, np.float64))
    b = np.atleast_2d(np.asarray(b, np.float64))
    if fn == "cosine":
        a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        return a @ b.T
    if fn == "dot":
        return a @ b.T
    if fn == "euclidean":
        return -np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))
    if fn == "manhattan":
        return -np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
    raise ValueError("similarity %r is not one of %s" % (fn, ", ".join(SIMILARITY_FUNCTIONS)))


def semantic_search(query_embeddings, corpus_embeddings, top_k=10, score_function="cosine"):
    """sentence-transformers' util.semantic_search: for each query row, the corpus rows by
    score_function (a name of similarity()'s, or a function (queries, corpus) -> [n, m] scores;
    util's default is cos_sim), best first, the top_k (None or 0: all); a list per query of
    {"corpus_id", "score"}. Equal scores, which util leaves to torch.topk, keep the corpus' order
    (as vit search)."""
    q = np.atleast_2d(np.asarray(query_embeddings, np.float64))
    c = np.atleast_2d(np.asarray(corpus_embeddings, np.float64))
    if callable(score_function):
        scores = np.asarray(score_function(q, c), np.float64)
    else:
        scores = similarity(q, c, score_function)
    n = c.shape[0] if not top_k else min(top_k, c.shape[0])
    out = []
    for row in scores:
        order = np.argsort(-row, kind="stable")[:n]
        out.append([{"corpus_id": int(i), "score": float(row[i])} for i in order])
    return out


# ---- any folder ----


def _model_type(path):
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return None  # the library's load says what is wrong with the folder
    return config.get("model_type") if isinstance(config, dict) else None


def _folder(path):
    """path when it is a folder; else what the library makes of it, as the CLI's -m: a Hugging
    Face Hub reference (org/name[@revision]) as its snapshot in the Hub's cache (downloaded into
    it if missing), anything else as it is (the load then says what is wrong)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return path
    buf = ctypes.create_string_buffer(4096)
    _call(_lib.lib().vit_resolve_model, os.fsencode(path), buf, len(buf))
    return os.fsdecode(buf.value)


def load(path, **settings):
    """The model of a Hugging Face folder (or Hub reference, org/name[@revision], from the cache
    or downloaded into it), by its config.json's model_type: a Generator for a
    VisionEncoderDecoderModel, a TextModel for a text encoder (BERT, RoBERTa, XLM-R, DistilBERT,
    MPNet, NomicBERT, JinaBERT v2; and a CLIP or SigLIP text tower alone) and a sentence-transformers folder
    (modules.json), else an ImageModel (classifiers, base models, CLIP and SigLIP). settings:
    the class's keywords (backend, precision, threads, batch, ...)."""
    folder = _folder(path)
    if os.path.isfile(os.path.join(folder, "modules.json")):
        return TextModel(path, **settings)
    kind = _model_type(folder)
    if kind == "vision-encoder-decoder":
        return Generator(path, **settings)
    if kind in ("bert", "roberta", "xlm-roberta", "distilbert", "mpnet", "nomic_bert",
                "clip_text_model", "siglip_text_model"):
        return TextModel(path, **settings)
    return ImageModel(path, **settings)
