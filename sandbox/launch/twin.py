"""The compilable twin of a kernel a program defined in Triton's interpreter: what script mode
compiles for a captured launch's IR and for `kernel.warmup(...)`'s facts, without running the
program again."""
import types

from triton.runtime import interpreter
from triton.runtime.jit import JITFunction

from sandbox.launch.kernel import Kernel


def compiled_twin(function, path):
    """The compilable twin of an interpreted kernel (a compiled one is its own): each @triton.jit function of the program made a
    JITFunction over the same code, in a copy of the program's globals, so helpers it calls resolve
    to their twins too. The program is not run again to compile it."""
    module = types.ModuleType("playground_program_twin")
    namespace = module.__dict__
    namespace.update(function.fn.__globals__)
    module.__file__ = path
    if not isinstance(function, interpreter.InterpretedFunction):  # on a GPU: the program's own kernel
        return Kernel(function.fn.__name__, function, function, heuristics={}), module
    for name, value in list(namespace.items()):
        if isinstance(value, interpreter.InterpretedFunction) and value.fn.__code__.co_filename == path:
            namespace[name] = twin_of(value, namespace)
    module.__file__ = path
    twin = namespace.get(function.fn.__name__)
    if not isinstance(twin, JITFunction) or twin.fn.__code__ is not function.fn.__code__:
        twin = twin_of(function, namespace)
    return Kernel(function.fn.__name__, twin, twin, heuristics={}), module


def twin_of(interpreted, namespace):
    fn = interpreted.fn
    copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__annotations__, copy.__module__, copy.__qualname__ = fn.__annotations__, fn.__module__, fn.__qualname__
    return JITFunction(copy, **interpreted.kwargs)
