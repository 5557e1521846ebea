"""Run specs for kernels of installed Triton libraries (requirements-corpus.txt). The kernels' code
stays in the libraries: a spec names a module and a kernel, and its source is that module's file,
read when the test runs, as a person would paste it (the kernel, its helpers, the module's imports).
The file is found through the installed distribution's record, not by importing it: a library's
package may do at import what a host without its GPU or its other dependencies cannot."""
import ast
import importlib
import importlib.metadata
import re
from dataclasses import dataclass, field

# Imported before any run, as a GPU run's process would have them. fla-core asks Triton's driver for
# the GPU when first imported: imported after a run has installed the CPU host's stand-in driver
# (sandbox.launch.host_driver, a CUDA target), it would ask torch.cuda too. cut-cross-entropy's
# kernels import its @triton.jit helpers: first imported by an interpreted run, they would be the
# interpreter's stand-ins, which a build for a GPU (the GPU tracer's, compiled here for sm90) refuses.
for module in ("fla.modules.activations.ops", "cut_cross_entropy.tl_utils"):
    importlib.import_module(module)


@dataclass
class Entry:
    """One kernel of a library: where it lives, and a launch as the library's own wrapper makes it."""
    module: str
    kernel: str
    inputs: dict
    args: dict
    grid: str
    reference: dict
    overrun: str  # the output whose store loses its mask in the mask-dropping variant
    options: dict = field(default_factory=dict)
    store_root: str = None  # the overrun's pointer in the store, where the kernel renamed its parameter

    def store_pointer(self):
        """The pointer expression's root in the store through which `overrun` is written."""
        return self.store_root or next(param for param, value in self.args.items() if value == self.overrun)

    def source(self):
        path = self.module.replace(".", "/") + ".py"
        return distribution(self.module).locate_file(path).read_text()

    def library(self):
        """(distribution name, version) of the installed library the kernel comes from."""
        dist = distribution(self.module)
        return re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower(), dist.version  # as PyPI spells it

    def spec(self, source=None, **options):
        return {"version": 1, "source": source or self.source(), "kernel": self.kernel, "inputs": dict(self.inputs),
                "args": dict(self.args), "grid": self.grid, "reference": dict(self.reference),
                "options": {"ir": False, "bench": False, "device": "interpreter", **self.options, **options}}


def distribution(module):
    """The installed distribution that provides `module`'s top-level package."""
    top = module.partition(".")[0]
    return importlib.metadata.distribution(importlib.metadata.packages_distributions()[top][0])


STORES = ("store", "atomic_add")  # the calls that write through a pointer under a mask


def store_mask(call):
    """The mask argument of a tl.store call: its keyword, or its third positional argument."""
    keyword = next((k.value for k in call.keywords if k.arg == "mask"), None)
    return keyword if keyword is not None else (call.args[2] if len(call.args) > 2 else None)


def store_calls(source, kernel):
    """The tl.store (and tl.atomic_add) calls of `kernel` in `source` that pass a mask, in source order."""
    fn = next(node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name == kernel)
    return [node for node in ast.walk(fn) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in STORES and store_mask(node) is not None]


def without_store_mask(source, kernel, pointer_root):
    """`source` with the mask of `kernel`'s first masked store through `pointer_root` removed, and that
    store's line. A source transformation of the text, so every other line keeps its number."""
    calls = [c for c in store_calls(source, kernel) if pointer_root in ast.unparse(c.args[0])]
    call = calls[0]
    mask = next((k for k in call.keywords if k.arg == "mask"), None) or store_mask(call)
    value = mask.value if isinstance(mask, ast.keyword) else mask
    lines = source.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:mask.lineno - 1]) + mask.col_offset
    end = sum(len(line) for line in lines[:value.end_lineno - 1]) + value.end_col_offset
    # also drop the comma that separated the mask from the argument before it
    before = source[:start].rstrip()
    assert before.endswith(","), before[-40:]
    return before[:-1] + source[end:], call.lineno
