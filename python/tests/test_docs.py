"""The Python blocks of README.md and docs/ (CONTRIBUTING.md, "Docs that run"): every
```python block without the ``gpu`` tag runs here with the installed wheel, in a directory
that looks like the checkout (a copy of samples/). cli/tests/cli/docs compiles every
Python block, ``gpu`` ones included."""

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks():
    """(page, line, code) of each ```python block without the gpu tag."""
    out = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            text = lines[i].lstrip()
            if not text.startswith("```"):
                i += 1
                continue
            indent = len(lines[i]) - len(text)
            words = text[3:].split()
            j, body = i + 1, []
            while lines[j].strip() != "```":
                cut = min(indent, len(lines[j]) - len(lines[j].lstrip()))
                body.append(lines[j][cut:])
                j += 1
            if words and words[0] == "python" and "gpu" not in words[1:]:
                out.append((page, i + 1, "\n".join(body) + "\n"))
            i = j + 1
    return out


BLOCKS = python_blocks()


def test_the_docs_have_python_to_run():
    assert any(page.name == "python.md" for page, _, _ in BLOCKS), BLOCKS


@pytest.mark.parametrize(
    "page,line,code", BLOCKS, ids=[f"{p.name}:{n}" for p, n, _ in BLOCKS]
)
def test_block_runs(page, line, code, tmp_path, monkeypatch):
    shutil.copytree(ROOT / "samples", tmp_path / "samples")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), {"__name__": "__docs__"})


def test_a_renamed_call_fails(tmp_path, monkeypatch):
    page, line, code = next(b for b in BLOCKS if "ikp.load(" in b[2])
    shutil.copytree(ROOT / "samples", tmp_path / "samples")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AttributeError):
        exec(compile(code.replace("ikp.load(", "ikp.load_file("), "renamed", "exec"), {})
