"""The literate kernel files of the gallery (kernels/) and of the course (kernels/puzzles/), read
without running them: a docstring (a title, its underline, the text), then sections, each opened by
a line `# %% <name>`, the last holding a pure literal `NAME = {...}` read with ast.literal_eval, so
the web process never executes a file. Files are named `NN_name.py` (NN: their order) and each is
read once per version (its modification time).
"""
import ast
import re
import threading
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = re.compile(r"^\d+_([a-z][a-z0-9_]*)\.py$")
SECTION = re.compile(r"^# %% (.+)$", re.M)


class LiterateError(ValueError):
    pass


@dataclass(frozen=True)
class Literate:
    path: Path
    text: str
    title: str     # the docstring's first line
    body: str      # the docstring after the title and its underline
    sections: dict  # {name: the text between its `# %%` line and the next}
    tree: ast.Module

    def before(self, name):
        """Everything above the section `name`'s line (the gallery's kernel source, docstring included)."""
        found = re.search(rf"^# %% {re.escape(name)}$", self.text, re.M)
        if found is None:
            raise LiterateError(f"{self.path.name} has no '# %% {name}' line")
        return self.text[:found.start()]

    def section(self, name):
        if name not in self.sections:
            raise LiterateError(f"{self.path.name} has no '# %% {name}' line")
        return self.sections[name].strip() + "\n"

    def literal(self, name):
        """The value of the file's `name = <literal>`."""
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
                return ast.literal_eval(node.value)
        raise LiterateError(f"{self.path.name} has no `{name} = {{...}}`")


def files(directory):
    """{name: path} of the literate files in `directory`, in their order."""
    found = {}
    for path in sorted(Path(directory).glob("*.py")):
        match = FILE_NAME.match(path.name)
        if match:
            found[match.group(1)] = path
    return found


def _title_and_body(docstring):
    lines = (docstring or "").strip().splitlines()
    title = lines[0].strip() if lines else ""
    rest = lines[1:]
    if rest and rest[0].strip() and set(rest[0].strip()) <= set("=-~"):
        rest = rest[1:]
    return title, "\n".join(rest).strip()


def _parse(path):
    text = path.read_text()
    tree = ast.parse(text, filename=str(path))
    title, body = _title_and_body(ast.get_docstring(tree))
    parts = SECTION.split(text)  # [before, name, text, name, text, ...]
    sections = {name.strip(): content for name, content in zip(parts[1::2], parts[2::2])}
    return Literate(path, text, title, body, sections, tree)


_lock = threading.Lock()
_read = {}


def read(path):
    """The file at `path`, parsed once per version."""
    key = (str(path), path.stat().st_mtime_ns)
    with _lock:
        if key not in _read:
            _read[key] = _parse(path)
        return _read[key]


def first_paragraph(text):
    """The first paragraph of `text`, as one line (a gallery example's summary)."""
    return " ".join(re.split(r"\n\s*\n", text, maxsplit=1)[0].split())
