"""The Python package against the CLI (bin/vit, the same library behind another front end) and
against itself: a path, a PIL image, encoded bytes and a numpy array give the same answers; a list
gives a list; errors raise vit.Error with the library's message. Run from the checkout:
PYTHONPATH=python python3 -m pytest python/tests (tests/python.sh does, in make test)."""

import glob
import hashlib
import json
import os
import re
import subprocess
import threading

import numpy as np
import pytest

import vit

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "tests", "data")
VIT_BIN = os.environ.get("VIT_BIN") or os.path.join(ROOT, "bin", "vit")
SHARED = os.environ.get("VIT_SHARED") or os.path.join(ROOT, "..", "shared")

MICRO = os.path.join(DATA, "micro-a")
TINY = os.path.join(ROOT, "models", "vit-tiny-in1k")
CLIP = os.path.join(DATA, "clip-micro")
SIGLIP = os.path.join(DATA, "siglip-micro")
TROCR = os.path.join(DATA, "ved-trocr-vit")
VIT_GPT2 = os.path.join(DATA, "ved-gpt2-vit")
BERT = os.path.join(SHARED, "models", "bert-sst2-tiny")

PHOTOS = sorted(glob.glob(os.path.join(ROOT, "examples", "photos", "*.jpg")))
GOLDEN = [
    os.path.join(DATA, "golden-images", name)
    for name in (
        "rgb_300x200.png",
        "gray_100x60.png",
        "rgba_80x80.png",
        "palette_120x90.png",
        "tall_40x400.jpg",
        "progressive_200x150.jpg",
    )
]
IMAGES = PHOTOS + GOLDEN
CAT = os.path.join(ROOT, "examples", "photos", "cat.jpg")

Image = pytest.importorskip("PIL.Image")


def cli(*args, check=True):
    run = subprocess.run([VIT_BIN, *args], capture_output=True, text=True, cwd=ROOT)
    if check:
        assert run.returncode == 0, run.stderr
    return run


def cli_json(*args):
    return [json.loads(line) for line in cli(*args, "--json").stdout.splitlines()]


def same(predictions, top):
    """Predictions equal to the CLI's JSON top list (its probabilities print a float32 exactly)."""
    got = [(p.index, p.label, np.float32(p.prob)) for p in predictions]
    want = [(t["index"], t["label"], np.float32(t["prob"])) for t in top]
    assert got == want


@pytest.fixture(scope="module")
def micro():
    with vit.load(MICRO) as m:
        yield m


@pytest.fixture(scope="module")
def tiny():
    with vit.load(TINY, batch=4) as m:
        yield m


@pytest.fixture(scope="module")
def clip():
    with vit.load(CLIP) as m:
        yield m


# ---- the library and the package ----


def test_library_of_the_checkout():
    """PYTHONPATH=python finds this checkout's build/libvit.so (unless VIT_LIBRARY names one),
    of the version vit.h and pyproject.toml say."""
    path = vit.library_path()
    if not os.environ.get("VIT_LIBRARY"):
        assert os.path.dirname(path) == os.path.join(ROOT, "build")
    with open(os.path.join(ROOT, "vit", "vit.h")) as f:
        header = dict(re.findall(r"#define VIT_VERSION_(MAJOR|MINOR|PATCH) (\d+)", f.read()))
    want = "%s.%s.%s" % (header["MAJOR"], header["MINOR"], header["PATCH"])
    assert vit.version() == want
    assert vit.__version__ == want
    with open(os.path.join(ROOT, "python", "pyproject.toml")) as f:
        assert re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1) == want


def test_load_picks_the_class():
    assert type(vit.load(MICRO)) is vit.ImageModel
    assert type(vit.load(CLIP)) is vit.ImageModel
    assert type(vit.load(TROCR)) is vit.Generator


def test_model_description(micro, tiny):
    assert micro.num_labels == 5 and micro.labels == ["class_%d" % i for i in range(5)]
    assert micro.input_shape == (3, 32, 32) and micro.patch_grid == (4, 4)
    assert micro.has_classifier and micro.joint_dim == 0
    assert tiny.labels[285] == "Egyptian cat" and tiny.hidden_size == 192
    info = cli("info", "-m", TINY).stdout
    assert re.search(r"^parameters: +(\d+)$", info, re.M).group(1) == str(tiny.num_parameters)
    assert re.search(r"^flops/image: +([\d.]+) GFLOP$", info, re.M).group(1) == "%.3f" % (
        tiny.flops_per_image / 1e9
    )


# ---- classification: the CLI's answers, whatever form the image takes ----


@pytest.mark.parametrize("model_dir", [MICRO, TINY])
def test_classify_file_as_the_cli(model_dir):
    model = vit.load(model_dir)
    for image in IMAGES:
        (want,) = cli_json("classify", "-m", model_dir, "-k", "5", image)
        same(model.classify(image, k=5), want["top"])


def test_a_list_gives_a_list_as_the_cli_batch(tiny):
    """Seven images in batches of 4 (the CLI's default batch of 8): the CLI's answers."""
    want = cli_json("classify", "-m", TINY, "-k", "3", *IMAGES[:7])
    got = tiny.classify(IMAGES[:7], k=3)
    assert isinstance(got, list) and len(got) == 7
    for g, w in zip(got, want):
        same(g, w["top"])
    assert tiny.classify(tuple(IMAGES[:2]), k=3) == got[:2]
    assert tiny.classify([], k=3) == []


# Pillow's convert("RGB") of a palette image with transparency warns (the library does the same)
@pytest.mark.filterwarnings("ignore:Palette images with Transparency")
@pytest.mark.parametrize("image", IMAGES)
def test_path_pil_numpy_bytes_agree(micro, image):
    want = micro.classify(image, k=5)
    pil = Image.open(image)
    assert micro.classify(pil, k=5) == want
    rgb = np.asarray(pil.convert("RGB"))
    assert rgb.dtype == np.uint8 and rgb.shape[2] == 3
    assert micro.classify(rgb, k=5) == want
    # a view that is not C-contiguous: copied once, as it must be, to the same pixels
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    assert not bgr[:, :, ::-1].flags.c_contiguous
    assert micro.classify(bgr[:, :, ::-1], k=5) == want
    with open(image, "rb") as f:
        encoded = f.read()
    assert micro.classify(encoded, k=5) == want
    assert micro.classify(bytearray(encoded), k=5) == want
    from pathlib import Path

    assert micro.classify(Path(image), k=5) == want
    # the batch path (preprocess, forward, softmax, top-k) agrees with the one-image call
    assert micro.classify([image, rgb, pil], k=5) == [want, want, want]


def test_grey_arrays(micro):
    grey = os.path.join(DATA, "golden-images", "gray_100x60.png")
    want = micro.classify(grey)
    pil = Image.open(grey)
    assert pil.mode == "L"
    array = np.asarray(pil)
    assert array.ndim == 2
    assert micro.classify(array) == want
    assert micro.classify(array[:, :, None]) == want


def test_an_nhwc_array_is_a_batch(micro):
    images = np.stack([np.asarray(Image.open(p).convert("RGB").resize((64, 48))) for p in PHOTOS])
    assert images.shape == (3, 48, 64, 3)
    got = micro.classify(images, k=2)
    assert got == [micro.classify(images[i], k=2) for i in range(3)]


def test_exif_orientation():
    """A file turned upright by its EXIF orientation, as a PIL image is (Hugging Face's
    load_image); with exif=False both are the raw pixels."""
    path = os.path.join(DATA, "formats", "orient_6.jpg")
    pil = Image.open(path)
    assert pil.getexif().get(0x0112) == 6
    upright = vit.load(MICRO)
    raw = vit.load(MICRO, exif=False)
    assert upright.preprocess(path).tobytes() == upright.preprocess(pil).tobytes()
    assert raw.preprocess(path).tobytes() == raw.preprocess(pil).tobytes()
    assert upright.preprocess(path).tobytes() != raw.preprocess(path).tobytes()
    (want,) = cli_json("classify", "-m", MICRO, "--no-exif", path)
    same(raw.classify(pil), want["top"])


def test_k(micro):
    assert len(micro.classify(CAT, k=1)) == 1
    assert len(micro.classify(CAT, k=100)) == 5  # at most the labels
    with pytest.raises(vit.Error, match="k 0 is not positive"):
        micro.classify(CAT, k=0)
    top = micro.classify(CAT)
    assert [p.prob for p in top] == sorted((p.prob for p in top), reverse=True)
    assert abs(sum(p.prob for p in top) - 1) < 1e-5
    assert top[0].index == top[0][0] and top[0].label == micro.labels[top[0].index]


def test_forward_and_preprocess(micro):
    pixels = micro.preprocess(IMAGES[:3])
    assert pixels.shape == (3, 3, 32, 32) and pixels.dtype == np.float32
    with vit.load(MICRO, exif=False) as other:
        # the CLI's tensor of one image (vit preprocess writes it as safetensors)
        assert other.preprocess(CAT).shape == (3, 32, 32)
    logits = micro.forward(pixels)
    assert logits.shape == (3, 5) and logits.dtype == np.float32
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    for row, image in zip(probs, IMAGES[:3]):
        top = micro.classify(image, k=1)[0]
        assert top.index == int(np.argmax(row)) and abs(top.prob - row.max()) < 1e-6
    assert np.array_equal(micro.forward(pixels[0]), logits[0])


# ---- errors ----


def test_errors_carry_the_library_message(micro):
    missing = os.path.join(ROOT, "nope.jpg")
    run = cli("classify", "-m", MICRO, missing, check=False)
    assert run.returncode == 1
    with pytest.raises(vit.Error) as e:
        micro.classify(missing)
    assert str(e.value) == "%s: No such file or directory" % missing
    assert "vit classify: %s\n" % e.value in run.stderr
    readme = os.path.join(ROOT, "README.md")
    with pytest.raises(vit.Error, match="README.md: not a PNG, JPEG"):
        micro.classify(readme)
    with pytest.raises(vit.Error, match="not a PNG, JPEG"):
        micro.classify(b"not an image")
    with pytest.raises(vit.Error, match="nope.jpg"):
        micro.classify([CAT, missing])
    with pytest.raises(vit.Error, match="config.json"):
        vit.load(os.path.join(DATA, "no-such-model"))
    with pytest.raises(vit.Error, match="not a text model"):
        vit.TextModel(MICRO)
    with pytest.raises(vit.Error, match="not positive|k|negative"):
        micro.classify(CAT, k=-1)
    assert issubclass(vit.Error, Exception)


def test_bad_arguments(micro):
    with pytest.raises(TypeError, match="uint8"):
        micro.classify(np.zeros((8, 8, 3), np.float32))
    with pytest.raises(ValueError, match="HxWx3"):
        micro.classify(np.zeros((8, 8, 4), np.uint8))
    with pytest.raises(TypeError, match="an image is"):
        micro.classify(42)
    with pytest.raises(ValueError, match="pool"):
        micro.embed(CAT, pool="max")
    with pytest.raises(ValueError, match="backend"):
        vit.load(MICRO, backend="cuda")
    with pytest.raises(vit.Error, match="CLIP or SigLIP"):
        micro.classify(CAT, classes=["cat", "dog"])
    closed = vit.load(MICRO)
    closed.close()
    closed.close()
    with pytest.raises(ValueError, match="closed"):
        closed.classify(CAT)


# ---- features ----


def test_embed_as_the_cli(tmp_path, micro):
    for pool, shape in (("cls", (48,)), ("mean", (48,)), ("patches", (4, 4, 48))):
        out = tmp_path / ("%s.npy" % pool)
        cli("embed", "-m", MICRO, "--pool", pool, "-o", str(out), *IMAGES[:3])
        want = np.load(out)
        got = micro.embed(IMAGES[:3], pool=pool)
        assert got.dtype == np.float32 and got.shape == (3,) + shape
        assert np.array_equal(got, want.reshape(got.shape))
        one = micro.embed(Image.open(IMAGES[0]), pool=pool)
        assert one.shape == shape and np.array_equal(one, got[0])
    assert micro.embed(CAT).shape == (48,)  # cls by default


def read_safetensors(path, name):
    """One F32 tensor of a safetensors file (8-byte header length, JSON header, data)."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        data = f.read()
    entry = header[name]
    assert entry["dtype"] == "F32"
    start, end = entry["data_offsets"]
    return np.frombuffer(data[start:end], np.float32).reshape(entry["shape"])


@pytest.mark.parametrize("method, label", [("rollout", None), ("last", None), ("grad", 3)])
def test_explain_as_the_cli(tmp_path, micro, method, label):
    args = ["--label", str(label)] if label is not None else []
    line = cli("explain", "-m", MICRO, "--raw", "--method", method, *args, "-o", str(tmp_path),
               CAT).stdout.split("\t")
    e = micro.explain(Image.open(CAT), method=method, label=label)
    assert e.label == int(line[1]) and "%.4f" % e.prob == line[3]
    assert e.map.dtype == np.float32
    assert e.map.shape == ((4 if method == "last" else 1),) + micro.patch_grid
    assert np.array_equal(e.map, read_safetensors(tmp_path / "cat.safetensors", "map"))


# ---- CLIP and SigLIP ----


@pytest.mark.parametrize("model_dir", [CLIP, SIGLIP])
def test_zero_shot_as_the_cli(model_dir):
    model = vit.load(model_dir)
    names = ["cat", "dog", "espresso", "rocket"]
    try:
        model.text
    except vit.Error as e:  # SigLIP's tokenizer in a build without SentencePiece
        pytest.skip(str(e))
    want = cli_json("classify", "-m", model_dir, "--classes", ",".join(names), "-k", "3",
                    "--logits", *PHOTOS)
    got = model.classify(PHOTOS, k=3, classes=names)
    for g, w in zip(got, want):
        same(g, w["top"])
    scores = model.zero_shot(PHOTOS, names, logits=True)
    assert scores.shape == (len(PHOTOS), 4) and scores.dtype == np.float32
    assert np.array_equal(scores, np.array([w["logits"] for w in want], np.float32))
    probs = model.zero_shot(PHOTOS[0], names)
    assert probs.shape == (4,)
    if model_dir == CLIP:
        assert abs(float(probs.sum()) - 1) < 1e-5
    # other templates, and class names embedded once and reused
    classes = model.classes(names, templates=["a picture of a {}.", "{}"])
    assert len(classes) == 4 and classes.sigmoid == (model_dir == SIGLIP)
    (w,) = cli_json("classify", "-m", model_dir, "--classes", ",".join(names), "--template",
                    "a picture of a {}.", "--template", "{}", PHOTOS[1])
    same(model.classify(PHOTOS[1], classes=classes), w["top"])


def test_joint_embeddings_as_the_cli(tmp_path, clip):
    out = tmp_path / "joint.npy"
    cli("embed", "-m", CLIP, "-o", str(out), *PHOTOS)
    images = clip.embed(PHOTOS)
    assert images.shape == (len(PHOTOS), clip.joint_dim)
    assert np.array_equal(images, np.load(out))
    # a file's lines run as one batch, as a list does (a --text runs alone: a batch of one)
    (tmp_path / "texts.txt").write_text("a cat\na rocket\n")
    cli("embed", "-m", CLIP, "--text-file", str(tmp_path / "texts.txt"), "-o", str(out))
    texts = clip.embed_text(["a cat", "a rocket"])
    assert np.array_equal(texts, np.load(out))
    assert np.allclose(np.linalg.norm(images, axis=1), 1, atol=1e-5)
    tokens = cli("tokenize", "-m", CLIP, "--json", "a photo of a cat").stdout
    assert clip.text.tokenize("a photo of a cat") == json.loads(tokens)["ids"]


def test_joint_model_needs_class_names(clip):
    with pytest.raises(vit.Error, match="joint image-text model"):
        clip.classify(CAT)
    with pytest.raises(TypeError, match="list of class names"):
        clip.classify(CAT, classes="cat,dog")


# ---- image to text ----


@pytest.mark.parametrize("model_dir", [TROCR, VIT_GPT2])
def test_generate_as_the_cli(model_dir):
    gen = vit.load(model_dir)
    for beams in (1, 3):
        want = cli_json("generate", "-m", model_dir, "--num-beams", str(beams), *PHOTOS)
        got = gen.generate(PHOTOS, num_beams=beams)
        assert len(got) == len(PHOTOS)
        for g, w in zip(got, want):
            assert (g.text, g.ids, np.float32(g.score)) == (
                w["text"], w["ids"], np.float32(w["score"])
            )
        assert gen.generate(PHOTOS[0], num_beams=beams) == got[0]
        assert gen.generate(Image.open(PHOTOS[0]), num_beams=beams) == got[0]
        assert gen.generate(PHOTOS[0], beams=beams) == got[0]  # the old name
    (w,) = cli_json("generate", "-m", model_dir, "--max-new-tokens", "3", PHOTOS[2])
    assert gen.generate(PHOTOS[2], max_new_tokens=3).ids == w["ids"]
    assert gen.generate(PHOTOS[2], max_tokens=3).ids == w["ids"]  # the old name
    assert len(w["ids"]) <= 4
    (w,) = cli_json("generate", "-m", model_dir, "--max-length", "3", PHOTOS[2])
    assert gen.generate(PHOTOS[2], max_length=3).ids == w["ids"]
    (w,) = cli_json("generate", "-m", model_dir, "--num-beams", "2", "--no-repeat-ngram-size",
                    "1", PHOTOS[0])
    assert gen.generate(PHOTOS[0], num_beams=2, no_repeat_ngram_size=1).ids == w["ids"]
    # the folder's generation_config.json: what a call without options runs
    (w,) = cli_json("generate", "-m", model_dir, PHOTOS[1])
    assert gen.generate(PHOTOS[1]).ids == w["ids"]
    # one name per setting: the CLI's options, the keywords and options()' keys (transformers')
    names = {"num_beams", "max_new_tokens", "max_length", "min_length", "length_penalty",
             "early_stopping", "no_repeat_ngram_size"}
    assert set(gen.options()) == names
    help_text = cli("generate", "--help").stdout
    for name in names:
        assert "--" + name.replace("_", "-") + " " in help_text
    assert gen.generate(PHOTOS[1], **gen.options()).ids == w["ids"]


def test_generate_errors():
    gen = vit.load(TROCR)
    missing = os.path.join(ROOT, "nope.png")
    run = cli("generate", "-m", TROCR, missing, check=False)
    with pytest.raises(vit.Error) as e:
        gen.generate(missing)
    assert "vit generate: %s\n" % e.value in run.stderr
    with pytest.raises(vit.Error, match="beams"):
        gen.generate(CAT, num_beams=1000)
    with pytest.raises(TypeError, match="both num_beams and its old name beams"):
        gen.generate(CAT, num_beams=2, beams=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'beam'"):
        gen.generate(CAT, beam=2)
    with pytest.raises(ValueError, match="one limit"):
        gen.generate(CAT, max_new_tokens=2, max_length=3)
    encoder = vit.ImageModel(TROCR)  # its encoder: features, but no classes
    with pytest.raises(vit.Error, match="image-to-text model.*generate"):
        encoder.classify(CAT)
    assert encoder.embed(CAT).shape == (encoder.hidden_size,)


# ---- text classification (the BERT of ../shared) ----


@pytest.mark.skipif(not os.path.isdir(BERT), reason="%s: not found" % BERT)
def test_text_classify_as_the_cli():
    texts = ["a great movie", "awful", "it is neither good nor bad, just long", "é ü 漢字"]
    model = vit.load(BERT)
    assert type(model) is vit.TextModel and model.labels == ["negative", "positive"]
    want = cli_json("text", "-m", BERT, "-k", "2", *texts)
    got = model.classify(texts, k=2)
    for g, w in zip(got, want):
        same(g, w["top"])
    assert model.classify(texts[0], k=2) == got[0]
    tokens = json.loads(cli("tokenize", "-m", BERT, "--json", texts[0]).stdout)["ids"]
    assert model.tokenize(texts[0]) == tokens
    assert model.embed(texts).shape == (4, model.hidden_size)
    assert model.embed(texts[0], pool="pooler").dtype == np.float32


# ---- sentence-transformers folders (tests/data/st-*-micro) ----


def cli_rows(*args):
    """vit embed ... -o -: one row per input, the numbers after the tab."""
    out = cli("embed", *args, "-o", "-").stdout
    return np.array([[float(x) for x in line.split("\t")[1].split()]
                     for line in out.splitlines()], np.float32)


def test_sentence_transformers_as_the_cli():
    folder = os.path.join(DATA, "st-prompt-micro")
    texts = ["the cat sat on the mat", "a dog ran"]
    model = vit.load(folder)
    assert type(model) is vit.TextModel
    assert model.prompts == {"query": "my old ", "passage": "the "}
    assert model.default_prompt == "query"
    assert model.pipeline == "Pooling mean (include_prompt false) -> Normalize"
    # each --text is a batch of its own in the CLI: compare text by text
    for text in texts:
        args = ["-m", folder, "--text", text]
        np.testing.assert_array_equal(model.embed(text), cli_rows(*args)[0])
        np.testing.assert_array_equal(model.embed(text, prompt_name="passage", dimensions=8),
                                      cli_rows(*args, "--prompt", "passage",
                                               "--dimensions", "8")[0])
        np.testing.assert_array_equal(model.embed(text, pool="max", prompt=""),
                                      cli_rows(*args, "--pool", "max", "--prompt-text", "")[0])
    assert model.embed(texts).shape == (2, 32)
    with pytest.raises(ValueError, match="'query', 'passage'"):
        model.embed(texts[0], prompt_name="document")
    dense = vit.load(os.path.join(DATA, "st-cls-dense-micro"))
    assert dense.embed(texts).shape == (2, 16)


def test_search_as_the_cli(tmp_path):
    """TextModel.search ranks as `vit search -m MODEL QUERY... FILE`: the same documents, order and
    scores (the query prompt "query", the documents' "passage"), ties (a repeated line) in the
    file's order; semantic_search's top_k; embed_query/embed_document are embed with those
    prompts."""
    folder = os.path.join(DATA, "st-prompt-micro")
    docs = ["the cat sat on the mat", "a dog ran", "birds fly south", "a dog ran", "the cat"]
    queries = ["a small cat", "dogs"]
    path = tmp_path / "docs.txt"
    path.write_text("".join(d + "\n" for d in docs))
    model = vit.load(folder)
    want = cli_json("search", "-m", folder, "--no-cache", "-k", "0", *queries, str(path))
    got = model.search(queries, docs, top_k=None)
    for w, g in zip(want, got):
        assert [r["corpus_id"] for r in w["results"]] == [r["corpus_id"] for r in g]
        np.testing.assert_allclose([r["score"] for r in g], [r["score"] for r in w["results"]],
                                   atol=1e-6)
    ids = [r["corpus_id"] for r in got[1]]
    assert ids.index(1) + 1 == ids.index(3)  # the repeated line follows its first
    assert [r["corpus_id"] for r in model.search(queries[0], docs, top_k=2)] == \
        [r["corpus_id"] for r in got[0][:2]]
    np.testing.assert_array_equal(model.embed_query(queries), model.embed(queries, prompt_name="query"))
    np.testing.assert_array_equal(model.embed_document(docs),
                                  model.embed(docs, prompt_name="passage"))
    hits = vit.semantic_search(np.eye(3, dtype=np.float32), np.eye(3, dtype=np.float32) * 2,
                               top_k=5)
    assert [h[0] for h in hits] == [{"corpus_id": i, "score": 1.0} for i in range(3)]
    assert [h["corpus_id"] for h in hits[0]] == [0, 1, 2]  # the two zeros in the corpus' order


def test_similarity_functions_by_hand():
    """vit.similarity's four functions on rows worked by hand: a = (3, 4) against (0, 0), (6, 8)
    and (3, 0): cosines 0 (the zero row's norm taken as 1e-12), 1 and 9/15; dots 0, 50, 9;
    distances 5, 5, 4 (L2) and 7, 7, 4 (L1), negated."""
    a, b = [3.0, 4.0], [[0, 0], [6, 8], [3, 0]]
    want = {"cosine": [0, 1, 0.6], "dot": [0, 50, 9], "euclidean": [-5, -5, -4],
            "manhattan": [-7, -7, -4]}
    for fn, row in want.items():
        np.testing.assert_allclose(vit.similarity(a, b, fn), [row], rtol=1e-15, atol=1e-15)
        # semantic_search ranks by it: best first, ties in the corpus' order
        hits = vit.semantic_search(a, b, top_k=None, score_function=fn)[0]
        order = [h["corpus_id"] for h in hits]
        assert order == sorted(range(3), key=lambda i: -row[i])
    with pytest.raises(ValueError, match="'cos' is not one of cosine, dot, euclidean, manhattan"):
        vit.similarity(a, b, "cos")
    custom = vit.semantic_search(a, b, score_function=lambda q, c: -(q @ c.T))[0]
    assert [h["corpus_id"] for h in custom] == [0, 2, 1]


def test_search_follows_similarity_fn_name(tmp_path):
    """A folder's similarity_fn_name (config_sentence_transformers.json) is TextModel's
    similarity_fn_name and scores TextModel.search as it scores `vit search`: st-multi-micro's
    unnormalised rows (norms ~40) under each of the four functions, the same order and scores
    (relative 1e-6)."""
    src = os.path.join(DATA, "st-multi-micro")
    docs = ["the cat sat on the mat", "a dog ran", "birds fly south", "stock prices fell",
            "the cat"]
    queries = ["a small cat", "dogs"]
    path = tmp_path / "docs.txt"
    path.write_text("".join(d + "\n" for d in docs))
    orders = {}
    for fn in ("cosine", "dot", "euclidean", "manhattan"):
        folder = tmp_path / fn
        folder.mkdir()
        for name in os.listdir(src):
            if name != "config_sentence_transformers.json":
                os.symlink(os.path.join(src, name), folder / name)
        (folder / "config_sentence_transformers.json").write_text(
            json.dumps({"prompts": {}, "similarity_fn_name": fn}))
        model = vit.load(str(folder))
        assert model.similarity_fn_name == fn
        want = cli_json("search", "-m", str(folder), "--no-cache", "-k", "0", *queries, str(path))
        got = model.search(queries, docs, top_k=None)
        for w, g in zip(want, got):
            assert [r["corpus_id"] for r in w["results"]] == [r["corpus_id"] for r in g]
            np.testing.assert_allclose([r["score"] for r in g], [r["score"] for r in w["results"]],
                                       rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(model.similarity(model.embed_query(queries),
                                                    model.embed_document(docs)),
                                   [[r["score"] for r in sorted(g, key=lambda r: r["corpus_id"])]
                                    for g in got], rtol=1e-12)
        orders[fn] = [r["corpus_id"] for r in got[0]]
    assert orders["dot"] != orders["cosine"]  # the function matters here
    assert vit.load(os.path.join(DATA, "bert-base-micro")).similarity_fn_name == "cosine"


def test_load_hub_reference(tmp_path, monkeypatch):
    """vit.load("org/name") picks the class from the Hub cache's snapshot, as the CLI's -m reads
    it: a sentence-transformers repository (its module folders in the snapshot, huggingface_hub's
    layout of links to blobs, offline) is a TextModel embedding as the folder; a reference the
    cache lacks, offline, is the library's one-line refusal."""
    src = os.path.join(DATA, "st-multi-micro")
    commit = "c" * 40
    repo = tmp_path / "models--org--st"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "blobs").mkdir()
    snapshot = repo / "snapshots" / commit
    for parent, _, files in os.walk(src):
        for name in files:
            if name.startswith("golden") or name.startswith("mnrl"):
                continue
            rel = os.path.relpath(os.path.join(parent, name), src)
            with open(os.path.join(parent, name), "rb") as f:
                data = f.read()
            blob = hashlib.sha1(data).hexdigest()
            (repo / "blobs" / blob).write_bytes(data)
            link = snapshot / rel
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(repo / "blobs" / blob, link.parent), link)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = vit.load("org/st")
    assert isinstance(model, vit.TextModel) and model.path == "org/st"
    texts = ["the cat sat on the mat", "a dog ran"]
    np.testing.assert_array_equal(model.embed(texts), vit.load(src).embed(texts))
    with pytest.raises(vit.Error, match="org/missing is not in the cache"):
        vit.load("org/missing")


def test_token_logits_match_reference():
    """A token classifier's per-token logits against tools/text_encoders_reference.py's float64
    forward (the C tests allow 1e-4; seen 1.4e-6), each text alone as in a batch."""
    folder = os.path.join(DATA, "roberta-tok-micro")
    golden = os.path.join(folder, "golden.safetensors")
    with open(golden, "rb") as f:
        meta = json.loads(f.read(int.from_bytes(f.read(8), "little")))["__metadata__"]
    texts, ids = json.loads(meta["texts"]), json.loads(meta["ids"])
    want = read_safetensors(golden, "token_logits")
    model = vit.TextModel(folder)
    got = model.token_logits(texts)
    for i, text in enumerate(texts):
        assert got[i].shape == (len(ids[i]), len(model.labels))
        assert np.abs(got[i] - want[i, : len(ids[i])]).max() <= 1e-4
        assert model.tokenize(text) == ids[i]
        assert np.abs(model.token_logits(text) - got[i]).max() <= 5e-6
    with pytest.raises(vit.Error, match="classifies every token"):
        model.classify(texts[0])
    for name in ("roberta-seq-micro", "distilbert-model-micro", "mpnet-model-micro"):
        assert type(vit.load(os.path.join(DATA, name))) is vit.TextModel


def test_nomic_jina_embed_match_reference():
    """NomicBERT and JinaBERT v2 folders load as TextModels (the folders' modules.json, and
    config.json's model_type alone); their sentence embeddings against
    tools/nomic_jina_reference.py's float64 ones (the C tests allow 1e-5)."""
    for name in ("nomic-micro", "jina-micro"):
        folder = os.path.join(DATA, name)
        golden = os.path.join(folder, "golden.safetensors")
        with open(golden, "rb") as f:
            meta = json.loads(f.read(int.from_bytes(f.read(8), "little")))["__metadata__"]
        texts = json.loads(meta["texts"])
        model = vit.load(folder)
        assert type(model) is vit.TextModel
        got = model.embed(texts)
        assert np.abs(got - read_safetensors(golden, "sentence")).max() <= 1e-5


def test_tag_matches_reference():
    """tag's entities: the float64 token logits' argmax and softmax (pipeline's "none")."""
    folder = os.path.join(DATA, "bert-tok-micro")
    golden = os.path.join(folder, "golden.safetensors")
    with open(golden, "rb") as f:
        meta = json.loads(f.read(int.from_bytes(f.read(8), "little")))["__metadata__"]
    texts, ids = json.loads(meta["texts"]), json.loads(meta["ids"])
    want = read_safetensors(golden, "token_logits").astype(np.float64)
    model = vit.TextModel(folder)
    got = model.tag(texts, all_tokens=True)
    for i, text in enumerate(texts):
        assert [e["index"] for e in got[i]] == list(range(1, len(ids[i]) - 1))
        for e in got[i]:
            row = want[i, e["index"]]
            p = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
            assert e["entity"] == model.labels[int(np.argmax(row))]
            assert abs(e["score"] - p.max()) <= 1e-4
        alone = model.tag(text)  # one text alone: within rounding of its batch
        kept = [e for e in got[i] if e["entity"] != "O"]
        assert [(e["entity"], e["index"], e["word"]) for e in alone] == [
            (e["entity"], e["index"], e["word"]) for e in kept]
        assert all(abs(a["score"] - b["score"]) <= 5e-6 for a, b in zip(alone, kept))


def test_tag_aggregation_matches_reference():
    """tag(aggregation=...) on bert-ner-micro: the entities tools/token_classification_reference.py
    writes (the pipeline's postprocess in float64 on the npm tokenizers library's offsets), for
    each strategy and ignore list; character offsets; a bad strategy refused."""
    folder = os.path.join(DATA, "bert-ner-micro")
    with open(os.path.join(folder, "expected.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    model = vit.TextModel(folder, threads=1)
    texts = [c["text"] for c in cases]
    compared = 0
    for strategy in ("none", "simple", "first", "average", "max"):
        for all_tokens in (False, True):
            got = model.tag(texts, aggregation=strategy, all_tokens=all_tokens)
            key = strategy + (" all" if all_tokens else "")
            for c, entities in zip(cases, got):
                want = c["entities"][key]
                assert len(entities) == len(want), (c["text"], key)
                for g, w in zip(entities, want):
                    assert abs(g.pop("score") - w.pop("score")) <= 1e-5
                    assert g == w, (c["text"], key)
                    compared += 1
    assert compared > 500
    alone = model.tag(texts[1], aggregation="first")  # one text: its list, as in the batch
    want = cases[1]["entities"]["first"]
    assert [(e["entity_group"], e["word"], e["start"], e["end"]) for e in alone] == [
        (e["entity_group"], e["word"], e["start"], e["end"]) for e in want]
    with pytest.raises(ValueError):
        model.tag("x", aggregation="mean")


def test_pairs_match_reference():
    """A cross-encoder's predict and rank against tools/text_encoders_reference.py's float64
    logits of bert-pair-micro's pairs (BERT with token types): the sigmoid (CrossEncoder's
    default for one label), raw the logits, rank sorted best first."""
    folder = os.path.join(DATA, "bert-pair-micro")
    golden = os.path.join(folder, "golden.safetensors")
    with open(golden, "rb") as f:
        meta = json.loads(f.read(int.from_bytes(f.read(8), "little")))["__metadata__"]
    pairs = [tuple(p) for p in json.loads(meta["pairs"])]
    logits = read_safetensors(golden, "logits")[:, 0]
    model = vit.TextModel(folder, batch=5)
    assert np.abs(model.predict(pairs, raw=True) - logits).max() <= 1e-4
    assert np.abs(model.predict(pairs) - 1 / (1 + np.exp(-logits))).max() <= 1e-4
    assert abs(model.predict(pairs[3]) - 1 / (1 + np.exp(-logits[3]))) <= 1e-4
    query = pairs[0][0]
    docs = [b for a, b in pairs if a == query][:6]
    ranked = model.rank(query, docs, top_k=3, return_documents=True)
    want = sorted(range(len(docs)), key=lambda i: -logits[i])[:3]
    assert [r["corpus_id"] for r in ranked] == want
    assert [r["text"] for r in ranked] == [docs[i] for i in want]
    with pytest.raises(vit.Error, match="rank needs a one-label cross-encoder"):
        vit.TextModel(os.path.join(DATA, "roberta-seq-micro")).rank("q", ["a"])


def test_regression_scores_raw(tmp_path):
    """A problem_type regression model (bert-pair-micro's weights, its config.json with
    problem_type "regression"): predict gives tools/text_encoders_reference.py's float64 logits
    themselves (the pipeline's function_to_apply "none"), not their sigmoid; classify's prob of a
    text is its raw score, the logit of the one-label model's sigmoid of the same text."""
    folder = os.path.join(DATA, "bert-pair-micro")
    for name in ("model.safetensors", "tokenizer_config.json", "vocab.txt"):
        os.symlink(os.path.join(folder, name), tmp_path / name)
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    config["problem_type"] = "regression"
    (tmp_path / "config.json").write_text(json.dumps(config))
    golden = os.path.join(folder, "golden.safetensors")
    with open(golden, "rb") as f:
        meta = json.loads(f.read(int.from_bytes(f.read(8), "little")))["__metadata__"]
    pairs = [tuple(p) for p in json.loads(meta["pairs"])]
    logits = read_safetensors(golden, "logits")[:, 0]
    model, plain = vit.TextModel(str(tmp_path), batch=5), vit.TextModel(folder)
    assert model.regression and not plain.regression
    assert np.abs(model.predict(pairs) - logits).max() <= 1e-4
    assert abs(model.predict(pairs[2]) - logits[2]) <= 1e-4
    assert [r["corpus_id"] for r in model.rank(pairs[0][0], [b for _, b in pairs[:4]])] == sorted(
        range(4), key=lambda i: -logits[i])
    for text in ("the cat sat on the mat", "it was very good"):
        (score,) = model.classify(text, k=1)
        (p,) = plain.classify(text, k=1)
        assert score.label == "LABEL_0"
        assert abs(score.prob - np.log(p.prob / (1 - p.prob))) <= 1e-4


# ---- threads ----


def test_threads_share_the_weights(tiny):
    want = tiny.classify(CAT, k=3)
    results, errors = [], []

    def work(model):
        try:
            for _ in range(3):
                results.append(model.classify(CAT, k=3))
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    models = [tiny, tiny, tiny.share(), tiny.share()]  # two threads on one model wait their turn
    threads = [threading.Thread(target=work, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [want] * 12
    for m in models[2:]:
        m.close()
    assert tiny.classify(CAT, k=3) == want  # the weights outlive the shares
