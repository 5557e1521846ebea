"""The examples gallery: one literate .py file per example in `kernels/`, read without running it.

A file is a docstring (title, underline, paragraphs), the kernel source, then a line
`# %% The run spec` followed by `RUN = {...}`, a pure literal. The spec's source is everything
above that line; `RUN` is read with `ast.literal_eval`, so the web process never executes it.
"""
import ast
import re
from pathlib import Path

from sandbox.spec import normalize

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
RUN_SPEC_MARKER = "# %% The run spec"
_FILE_NAME = re.compile(r"^\d+_([a-z][a-z0-9_]*)\.py$")


def _example_files():
    """{name: path} in gallery order (the files' leading numbers)."""
    files = {}
    for path in sorted(KERNELS_DIR.glob("*.py")):
        match = _FILE_NAME.match(path.name)
        if match:
            files[match.group(1)] = path
    return files


def _title_and_summary(docstring):
    """The first line, and the first paragraph after the title's underline, as one line."""
    lines = (docstring or "").strip().splitlines()
    title = lines[0].strip() if lines else ""
    body = lines[1:]
    if body and set(body[0].strip()) <= set("=-~") and body[0].strip():
        body = body[1:]
    paragraph = []
    for line in body:
        if line.strip():
            paragraph.append(line.strip())
        elif paragraph:
            break
    return title, " ".join(paragraph)


def _run_literal(tree, path):
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["RUN"]:
            return ast.literal_eval(node.value)
    raise ValueError(f"{path.name} has no `RUN = {{...}}` run spec")


def _read(name, path):
    text = path.read_text()
    source, marker, _ = text.partition("\n" + RUN_SPEC_MARKER)
    if not marker:
        raise ValueError(f"{path.name} has no '{RUN_SPEC_MARKER}' line")
    tree = ast.parse(text, filename=str(path))
    title, summary = _title_and_summary(ast.get_docstring(tree))
    spec = normalize({"source": source.rstrip() + "\n", **_run_literal(tree, path)})
    return {"name": name, "title": title, "summary": summary, "spec": spec}


def list_examples():
    """[{"name", "title", "summary"}] in gallery order."""
    examples = []
    for name, path in _example_files().items():
        tree = ast.parse(path.read_text(), filename=str(path))
        title, summary = _title_and_summary(ast.get_docstring(tree))
        examples.append({"name": name, "title": title, "summary": summary})
    return examples


def load_example(name):
    """{"name", "title", "summary", "spec"} for one example, or None if there is no such example."""
    if not isinstance(name, str) or not name.isidentifier():
        return None
    path = _example_files().get(name)
    return _read(name, path) if path else None
