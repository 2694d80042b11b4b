"""README's "Python" section and python/README.md run as written: their >>> examples, in order and
in one namespace as one session, give the output shown (doctest, figures to 1e-5: CloseNumbers;
from the checkout's root, as the READMEs say). The example with ../shared's BERT is left out,
loudly, without ../shared."""

import doctest
import io
import os
import re

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
README = os.path.join(ROOT, "README.md")


def python_section():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert "\n## Python\n" in text, "README.md has no '## Python' section"
    return text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]


NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


class CloseNumbers(doctest.OutputChecker):
    """Exact output, but for float32 figures, equal to 1e-5 relative: the matrix products' library
    (oneDNN's or OpenBLAS's kernels, as the CPU has them) rounds differently in the seventh digit,
    so the README's figures are the ones of one machine."""

    def check_output(self, want, got, optionflags):
        if super().check_output(want, got, optionflags):
            return True
        w, g = NUMBER.findall(want), NUMBER.findall(got)
        bare = lambda text: re.sub(r"\s+", "", NUMBER.sub("#", text))  # numpy pads to widths
        if len(w) != len(g) or bare(want) != bare(got):
            return False
        return all(abs(float(x) - float(y)) <= 1e-6 + 1e-5 * abs(float(x)) for x, y in zip(w, g))


def run_session(blocks, path, monkeypatch):
    """The >>> examples of blocks, in order in one namespace, from the checkout's root: the number
    run, the ../shared paths of the blocks left out (a block naming a missing one)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("VIT_SHARED", raising=False)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(checker=CloseNumbers(), optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    namespace, ran, left_out = {}, 0, []
    for i, block in enumerate(blocks):
        needs = re.findall(r'"(\.\./shared/[^"]+)"', block)
        missing = [p for p in needs if not os.path.exists(os.path.join(ROOT, p))]
        if missing:
            left_out.append(missing[0])
            continue
        name = "%s example %d" % (os.path.relpath(path, ROOT), i + 1)
        test = parser.get_doctest(block, namespace, name, path, 0)
        runner.run(test, out=report.write, clear_globs=False)
        namespace = test.globs  # (a DocTest runs in a copy of the names it is given)
        ran += len(test.examples)
    assert runner.failures == 0, report.getvalue()
    return ran, left_out


def test_readme_examples_run_as_written(monkeypatch):
    blocks = re.findall(r"```pycon\n(.*?)```", python_section(), re.S)
    assert len(blocks) >= 3
    ran, left_out = run_session(blocks, README, monkeypatch)
    assert ran >= 15
    if left_out:
        pytest.skip("README examples left out: %s not found" % ", ".join(left_out))


def test_package_readme_runs_as_written(monkeypatch):
    """python/README.md's session (the shipped model and tests/data's micro models) runs as
    written; it has no other code but shell lines, so no example there goes unchecked."""
    path = os.path.join(ROOT, "python", "README.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fences = re.findall(r"^```(\w*)$", text, re.M)[::2]  # the opening fences
    assert set(fences) <= {"pycon", "sh"}, fences
    blocks = re.findall(r"```pycon\n(.*?)```", text, re.S)
    assert "path/to" not in "".join(blocks)
    ran, left_out = run_session(blocks, path, monkeypatch)
    assert ran >= 20 and not left_out
