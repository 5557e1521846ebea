"""The examples gallery: one literate .py file per example in `kernels/`, read without running it
(app.literate).

A file is a docstring (title, underline, paragraphs), the kernel source, then a line
`# %% The run spec` followed by `RUN = {...}`, a pure literal. The spec's source is everything
above that line.
"""
from pathlib import Path

from app import literate
from sandbox.spec import normalize

KERNELS_DIR = Path(__file__).resolve().parents[1] / "kernels"
RUN_SPEC = "The run spec"  # the section holding RUN


def _read(name, path):
    doc = literate.read(path)
    spec = normalize({"source": doc.before(RUN_SPEC).rstrip() + "\n", **doc.literal("RUN")})
    return {"name": name, "title": doc.title, "summary": literate.first_paragraph(doc.body), "spec": spec}


def list_examples():
    """[{"name", "title", "summary"}] in gallery order."""
    return [{"name": name, "title": doc.title, "summary": literate.first_paragraph(doc.body)}
            for name, doc in ((name, literate.read(path)) for name, path in literate.files(KERNELS_DIR).items())]


def load_example(name):
    """{"name", "title", "summary", "spec"} for one example, or None if there is no such example."""
    if not isinstance(name, str) or not name.isidentifier():
        return None
    path = literate.files(KERNELS_DIR).get(name)
    return _read(name, path) if path else None
