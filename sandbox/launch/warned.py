"""The warnings a run raises (Python's and Triton's: a deprecation, a performance warning) while it
compiles and runs the user's code, as the result's `warnings` (docs/result.md), instead of lost on
the run process's stderr.

Each warning is placed where the person can act on it: at the line of the user's file the warning's
stack runs through (the interpreter runs the kernel as Python, a module runs its own code there), or
the line Triton's compiler was compiling when it warned; else, where Triton raised it or was on its
way, the place it was raised (`triton/knobs.py:504`). Any other (the playground's own; torch's or
numpy's at the playground's call) is none of the person's business. The same warning at the same
place is one entry with its count (a warning raised per call is raised once per program in the
interpreter); at most MAX_WARNINGS entries of at most MAX_MESSAGE characters each, a note counting
the rest.
"""
import contextlib
import os
import sys
import warnings

import triton

MAX_WARNINGS = 20
MAX_MESSAGE = 500
MAX_CATEGORY = 100  # a user's own warning class may have any name
_TRITON = os.path.dirname(triton.__file__) + os.sep  # Triton's package: its files, never the playground's


class Warned:
    """The warnings raised while `catching()`, by the run whose user's file is `path`."""

    def __init__(self, path):
        self.paths = {path, os.path.realpath(path)}
        self.found = {}  # (category, message, line, where) -> entry
        self.left_out = 0

    @contextlib.contextmanager
    def catching(self):
        """Every warning (a deprecation too, each time it is raised) comes here..."""
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            # ... but the interpreter's numpy arithmetic, which warns of an overflow or a NaN where a GPU
            # computes the inf or NaN silently (a correct flash attention's exp(-inf - -inf), say)
            warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"triton\.runtime\.interpreter")
            warnings.showwarning = self.show
            yield

    def show(self, message, category, filename, lineno, file=None, line=None):
        line, where = self.place(filename, lineno)
        if line is None and where is None:
            return  # not the person's to act on
        text = str(message).strip()
        text = text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"
        kind = category.__name__[:MAX_CATEGORY]
        key = (kind, text, line, where)
        if key in self.found:
            self.found[key]["count"] += 1
        elif len(self.found) < MAX_WARNINGS:
            self.found[key] = {"category": kind, "message": text, "line": line, "where": where, "count": 1}
        else:
            self.left_out += 1

    def place(self, filename, lineno):
        """(the user's line, None) where the warning concerns their file; else (None, where it was
        raised) where Triton raised it or was on its way; else (None, None): the playground's own,
        or torch's or numpy's at the playground's call."""
        if filename in self.paths:
            return lineno, None
        through_triton = _in_triton(filename)
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename in self.paths:
                return frame.f_lineno, None
            compiling = self.compiling_line(frame)
            if compiling is not None:
                return compiling, None
            through_triton = through_triton or _in_triton(frame.f_code.co_filename)
            frame = frame.f_back
        return None, f"{package_path(filename)}:{lineno}" if through_triton else None

    def compiling_line(self, frame):
        """The user's line Triton's compiler (its CodeGenerator walking the kernel's syntax tree) was
        at in `frame`, or None where `frame` is not the compiler's at the user's file."""
        generator = frame.f_locals.get("self") if frame.f_code.co_name.startswith("visit") else None
        node = getattr(generator, "cur_node", None)
        if getattr(generator, "file_name", None) not in self.paths or getattr(node, "lineno", None) is None:
            return None
        return generator.begin_line + node.lineno

    def entries(self):
        return list(self.found.values())

    def into(self, result):
        """`result` with the warnings caught, and a note of those left out."""
        result["warnings"] = self.entries()
        if self.left_out:
            result["notes"].append(f"{self.left_out} more warning{'s' if self.left_out > 1 else ''} raised: only "
                                   f"the first {MAX_WARNINGS} different ones are listed.")
        return result


def _in_triton(filename):
    return filename.startswith(_TRITON)


def package_path(filename):
    """`filename` from its package on (`triton/language/core.py`): never the server's own paths."""
    roots = sorted((p for p in sys.path if p and filename.startswith(p.rstrip(os.sep) + os.sep)), key=len)
    return os.path.relpath(filename, roots[-1]) if roots else os.path.basename(filename)
