"""Run specs for kernels of installed Triton libraries (requirements-corpus.txt). The kernels' code
stays in the libraries: a spec names a module and a kernel, and its source is that module's file,
read when the test runs, as a person would paste it (the kernel, its helpers, the module's imports)."""
import ast
import importlib
import inspect
from dataclasses import dataclass, field

# fla-core asks Triton's driver for the GPU when first imported: imported after a run has installed
# the CPU host's stand-in driver (sandbox.launch.host_driver, a CUDA target), it would ask torch.cuda too.
importlib.import_module("fla.modules.activations.ops")


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
        return inspect.getsource(importlib.import_module(self.module))

    def spec(self, source=None, **options):
        return {"version": 1, "source": source or self.source(), "kernel": self.kernel, "inputs": dict(self.inputs),
                "args": dict(self.args), "grid": self.grid, "reference": dict(self.reference),
                "options": {"ir": False, "bench": False, "device": "interpreter", **self.options, **options}}


def store_calls(source, kernel):
    """The tl.store calls of `kernel` in `source` that pass a mask, in source order."""
    fn = next(node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name == kernel)
    return [node for node in ast.walk(fn) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "store" and any(k.arg == "mask" for k in node.keywords)]


def without_store_mask(source, kernel, pointer_root):
    """`source` with the mask of `kernel`'s first masked store through `pointer_root` removed, and that
    store's line. A source transformation of the text, so every other line keeps its number."""
    calls = [c for c in store_calls(source, kernel) if pointer_root in ast.unparse(c.args[0])]
    call = calls[0]
    mask = next(k for k in call.keywords if k.arg == "mask")
    lines = source.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:mask.lineno - 1]) + mask.col_offset
    end = sum(len(line) for line in lines[:mask.value.end_lineno - 1]) + mask.value.end_col_offset
    cut = source[start:end]
    assert cut.startswith("mask="), cut
    # also drop the comma that separated the mask from the argument before it
    before = source[:start].rstrip()
    assert before.endswith(","), before[-40:]
    return before[:-1] + source[end:], call.lineno
