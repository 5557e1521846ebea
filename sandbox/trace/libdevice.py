"""What Triton's interpreter lacks of the language as kernels of real libraries write it.

- libdevice functions (`from triton.language.extra.libdevice import rsqrt`, `libdevice.tanh`,
  `tl.extra.cuda.libdevice.exp`): the interpreter patches `tl` and `tl.math` for each call, never
  `triton.language.extra`, so a libdevice function ran as its bare stub (None) or failed for want of
  a semantic. Here they dispatch as the compiler dispatches them (CUDA's libdevice signatures: the
  same argument types accepted, the same result types) and are evaluated with numpy, as the
  interpreter evaluates its own math functions (tl.exp, tl.sqrt, tl.rsqrt: sandbox.trace's builder).
- a module-level alias of a `tl` builtin (`exp = tl.exp`, `my_cast = tl.cast`, `maximum = tl.math.maximum`):
  the interpreter patches the builtins where `tl` holds them, so an alias still named the unpatched
  builtin, which asks for the compiler's `_semantic` ("Did you forget to add @triton.jit?"). Each
  such global of the calling function's module is patched as the interpreter patches `tl`'s.
- a dtype called as a constructor (`m = tl.float32(-float("inf"))`, liger-kernel's softmax): a
  scalar of that dtype.

`patching(_patch_lang)` wraps the interpreter's per-call patcher, so both exist only while a
@triton.jit function runs in the interpreter and are undone with its other patches.
"""
import functools

import numpy as np
import triton.language as tl
from triton.runtime import interpreter

import triton.language.extra.libdevice as generic  # the stubs a kernel imports by name
import triton.language.extra.cuda.libdevice as cuda  # their definitions, with the signatures

LIBDEVICE_MODULES = (generic, cuda)


def _round_half_away(x):
    # libdevice's round() rounds halves away from zero; numpy's rounds them to even.
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _erf(x):
    return interpreter.np_erf_fp32(x) if x.dtype == np.float32 else interpreter.np_erf_fp64(x)


# libdevice symbol stems (`__nv_<stem>[f|d]`) and their numpy evaluation.
NUMPY = {
    "rsqrt": lambda x: 1 / np.sqrt(x), "sqrt": np.sqrt, "rcp": lambda x: 1 / x, "cbrt": np.cbrt,
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(x.dtype.type(10), x), "expm1": np.expm1,
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "erf": _erf,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint,
    "round": _round_half_away, "fabs": np.abs, "abs": np.abs,
    "atan2": np.arctan2, "pow": np.power, "powi": np.power, "fmod": np.fmod, "hypot": np.hypot,
    "fmin": np.fmin, "fmax": np.fmax, "min": np.minimum, "max": np.maximum, "copysign": np.copysign,
    "fdim": lambda x, y: np.maximum(x - y, 0), "fma": lambda x, y, z: x * y + z,
    "isnan": np.isnan, "isinf": np.isinf, "finite": np.isfinite, "isfinite": np.isfinite, "signbit": np.signbit,
    "add_rn": np.add, "sub_rn": np.subtract, "mul_rn": np.multiply, "div_rn": np.divide,
    "sqrt_rn": np.sqrt, "rsqrt_rn": lambda x: 1 / np.sqrt(x), "rcp_rn": lambda x: 1 / x,
    "fma_rn": lambda x, y, z: x * y + z, "fast_exp": np.exp, "fast_log": np.log, "fast_tanh": np.tanh,
    "fast_sin": np.sin, "fast_cos": np.cos, "fast_log2": np.log2, "fast_exp10": lambda x: np.power(x.dtype.type(10), x),
    "fast_pow": np.power, "fast_fdivide": np.divide,
}


class UnsupportedLibdevice(NotImplementedError):
    """A libdevice function without a CPU evaluation: the kernel runs only on a GPU."""


def evaluation(symbol):
    """The numpy function of libdevice's `symbol` (`__nv_rsqrtf` -> 1/sqrt)."""
    stem = symbol.removeprefix("__nv_")
    for name in (stem, stem[:-1] if stem[-1:] in ("f", "d") else None):
        if name in NUMPY:
            return NUMPY[name]
    raise UnsupportedLibdevice(f"libdevice's {stem} has no CPU evaluation in Triton's interpreter: "
                               "run this kernel on a GPU, or write it with tl.math's functions")


def create_extern_elementwise(builder, lib_name, lib_path, symbol, args, ret_type, is_pure):
    """The interpreter builder's extern call: `symbol` over the (already broadcast) arguments' data,
    returned in the result type libdevice declares."""
    result_dtype = ret_type.scalar if hasattr(ret_type, "scalar") else ret_type
    with np.errstate(all="ignore"):  # as on a GPU: inf and nan are values, not errors
        data = evaluation(symbol)(*(arg.data for arg in args))
    return interpreter.TensorHandle(np.asarray(data).astype(interpreter._get_np_dtype(result_dtype)), result_dtype)


def _interpreted(name):
    """A libdevice function, called in the interpreter: CUDA's definition with the interpreter's semantic."""
    definition = getattr(cuda, name)

    def call(*args, **kwargs):
        kwargs.pop("_semantic", None)
        return definition(*args, **kwargs, _semantic=interpreter.interpreter_semantic)

    call.__name__ = name
    return call


def _dtype_call(dtype, value):
    """`tl.float32(x)`: the scalar `x` as that dtype."""
    semantic = interpreter.interpreter_semantic
    return semantic.cast(semantic.to_tensor(value), dtype)


class _Namespace:
    """A module's globals as attributes, so that the interpreter's patch scope can set and restore them."""

    def __init__(self, globals_):
        object.__setattr__(self, "globals", globals_)

    def __getattr__(self, name):
        try:
            return self.globals[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self.globals[name] = value

    def __delattr__(self, name):
        del self.globals[name]


class _OwnAttributes:
    """A class's own attributes, for the interpreter's patch scope to set and restore: through the
    class itself, the scope would find the `__call__` its metaclass lends and put that back, leaving
    every dtype callable, which a later compile for a GPU refuses ("Unsupported function referenced")."""

    def __init__(self, cls):
        object.__setattr__(self, "cls", cls)

    def __getattr__(self, name):
        try:
            return self.cls.__dict__[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        setattr(self.cls, name, value)

    def __delattr__(self, name):
        delattr(self.cls, name)


def _is_libdevice_function(value):
    return callable(value) and getattr(value, "__module__", None) in {m.__name__ for m in LIBDEVICE_MODULES} \
        and hasattr(cuda, getattr(value, "__name__", ""))


def reference(value):
    """[module, name] when `value` is one of libdevice's functions itself (not a look-alike), else None:
    how a graded kernel's package names a function its source imported by name."""
    name = getattr(value, "__name__", None)
    if not (isinstance(name, str) and name in _names()):
        return None
    return next(([module.__name__, name] for module in LIBDEVICE_MODULES if getattr(module, name, None) is value), None)


def resolve(found):
    """libdevice's function that a `reference` names, or None."""
    if not (isinstance(found, list) and len(found) == 2 and all(isinstance(part, str) for part in found)):
        return None
    module = next((m for m in LIBDEVICE_MODULES if m.__name__ == found[0]), None)
    return getattr(module, found[1]) if module is not None and found[1] in _names() and hasattr(module, found[1]) else None


@functools.cache
def _names():
    return tuple(name for name in dir(cuda) if _is_libdevice_function(getattr(cuda, name)))


def patch(fn, scope):
    """Patch, in `scope`, what `fn` (a @triton.jit function's Python function) may call of libdevice,
    and the aliases of Triton's builtins among its module's globals."""
    for module in LIBDEVICE_MODULES:
        for name in _names():
            if hasattr(module, name):
                scope.set_attr(module, name, _interpreted(name))
    namespace = _Namespace(fn.__globals__)
    for name, value in list(fn.__globals__.items()):
        if _is_libdevice_function(value):  # imported by name: `from ...libdevice import rsqrt`
            scope.set_attr(namespace, name, _interpreted(value.__name__))
        elif tl.core.is_builtin(value):  # an alias: `exp = tl.exp`, `my_cast = tl.cast`
            interpreter._patch_attr(namespace, name, value, interpreter.interpreter_builder, scope)
    scope.set_attr(_OwnAttributes(tl.dtype), "__call__", _dtype_call)


def patching(patch_lang):
    """The interpreter's `_patch_lang`, also patching libdevice and dtype calls. Idempotent."""
    if getattr(patch_lang, "libdevice", False):
        return patch_lang

    def patch_lang_and_libdevice(fn):
        scope = patch_lang(fn)
        patch(fn, scope)
        return scope

    patch_lang_and_libdevice.libdevice = True
    return patch_lang_and_libdevice


def install():
    """Give the interpreter's builder its extern calls, and its per-call patcher the patches above."""
    interpreter.InterpreterBuilder.create_extern_elementwise = create_extern_elementwise
    interpreter._patch_lang = patching(interpreter._patch_lang)
