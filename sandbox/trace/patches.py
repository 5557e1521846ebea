"""Triton's interpreter, patched where the playground needs it to behave as a compiled launch does.

- `interpreter_hygiene()`: an interpreted launch leaves triton.language as it found it, so the same
  process can compile for a GPU afterwards;
- `patch_interpreter_compat()`: Triton 3.6's interpreter made to take what 3.7's takes (interpreter
  scalars in `range`, float arguments as fp32 tensors, libdevice functions);
- `boolean_mask()`: 3.9's loads and stores made to take what 3.7's took (a mask whose lanes the
  interpreter holds as int32).
"""
import contextlib

import numpy as np
import triton.language as tl
from triton.runtime import interpreter
from triton.runtime.jit import mangle_type

from sandbox.trace import libdevice

@contextlib.contextmanager
def interpreter_hygiene():
    """Run the interpreter without leaving it patched into triton.language afterwards.

    Two fixes, both needed by a process that compiles for a GPU after an interpreted launch (a GPU
    run's trace pass; the IR of a CPU run):
    - triton.language's own @jit functions (tl.cdiv, tl.sum, ...) are compiled-mode JITFunctions in
      a process that imported triton with the interpreter off, and refuse to be called in a kernel:
      call them as interpreted functions instead;
    - the interpreter patches triton.language for each device-function call and never restores
      it (only the launch's own patches are undone): each call's patches are undone with its launch's.

    A device function's patches depend only on its module's globals, so they are made once per
    launch: the interpreter's own way (again at every call of tl.sum or tl.max, ~7 ms apiece) spent
    nine tenths of a softmax's launch patching. The scopes form a stack, restored last in first out
    (a device call's patches of triton.language's tensor are undone before its launch's).
    """
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction
    scopes, interpreted = [], {}
    original_patch, original_jit_call = interpreter._patch_lang, JITFunction.__call__

    def patch_lang(fn):
        if any(scope.globals is fn.__globals__ for scope in scopes):
            return interpreter._LangPatchScope()  # patched for this launch already: nothing to undo
        scope = StackedScope(original_patch(fn), fn.__globals__, scopes)
        scopes.append(scope)
        return scope

    def jit_call(self, *args, **kwargs):
        if self.fn not in interpreted:
            interpreted[self.fn] = interpreter.InterpretedFunction(self.fn)
        return interpreted[self.fn](*args, **kwargs)

    interpreter._patch_lang, JITFunction.__call__ = patch_lang, jit_call
    try:
        yield
    finally:
        interpreter._patch_lang, JITFunction.__call__ = original_patch, original_jit_call
        while scopes:
            scopes[-1].restore()


class StackedScope:
    """The interpreter's patches for one module's globals, on a stack: restoring it restores the
    scopes patched after it first (its launch's device calls')."""

    def __init__(self, scope, globals, stack):
        self.scope, self.globals, self.stack = scope, globals, stack

    def restore(self):
        while self in self.stack:
            self.stack.pop().scope.restore()


# ---------------------------------------------------------------- Triton 3.6 compatibility

def _scalar_index(tensor):
    # Interpreter scalars are 1-element arrays; numpy >= 2.4 refuses int() of any array with ndim > 0.
    return int(np.asarray(tensor.handle.data).item())


def patch_interpreter_compat():
    """Let `range(...)` take interpreter scalars (e.g. `range(0, tl.cdiv(K, BK))`) on Triton 3.6.

    Triton 3.6's interpreter gives tl.tensor an `__index__` of `int(handle.data)`, which fails with
    "only 0-dimensional arrays can be converted to Python scalars"; 3.7 squeezes the array first.
    The interpreter installs `__index__` at every launch, so the patch wraps the function that does.
    Idempotent, and the same behaviour as 3.7's own on 3.7.
    """
    original = interpreter._patch_lang_tensor
    if getattr(original, "scalar_index_compat", False):
        return

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _scalar_index)

    patch_lang_tensor.scalar_index_compat = True
    interpreter._patch_lang_tensor = patch_lang_tensor
    interpreter._implicit_cvt = _float_arguments(interpreter._implicit_cvt)
    libdevice.install()


def boolean_mask(mask):
    """A masked load's or store's mask as a compiled launch takes it: int1 lanes. The interpreter may
    hand over an int1 tensor's lanes as int32 (`(offs < n) & (n < 2000)`, a block's comparison and a
    scalar's), which Triton 3.9's loads and stores refuse ("mask has unsupported dtype"; 3.7's took
    them): those lanes as booleans. The tracer's hooks of every masked load and store pass it on so."""
    if not isinstance(mask, interpreter.TensorHandle) or mask.data.dtype == np.bool_:
        return mask  # none, booleans, or (a block pointer's on 3.7) a bare numpy array
    return interpreter.TensorHandle(mask.data.astype(np.bool_), tl.int1)


def _float_arguments(convert):
    """A kernel's float argument as a compiled launch passes it: an fp32 scalar tensor (so that
    `eps.to(tl.float32)` works, as in liger-kernel's norms). The interpreter passes a bare float."""
    if getattr(convert, "float_arguments", False):
        return convert

    def implicit_cvt(arg):
        if isinstance(arg, float):
            ty = tl.str_to_ty(mangle_type(arg), None)
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32), ty), ty)
        return convert(arg)

    implicit_cvt.float_arguments = True
    return implicit_cvt
