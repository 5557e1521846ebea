"""The compiler's view of a kernel: TTIR, TTGIR, LLIR, PTX and SASS, its registers and shared memory,
and which source line each IR line came from.

`triton.compile` runs the whole pipeline (down to ptxas and the cubin) on the CPU for any NVIDIA
target, so the IR pane works on hosts without a GPU too; only launching a kernel needs one. On a GPU
the IR shown is the kernel the launch compiled (ir_of_compiled): nothing is compiled twice. What is
derived from a compiled kernel (the SASS listing, registers, spills, line maps: `nvdisasm` and
`cuobjdump -res-usage` at once, ~0.5 s, started as soon as the launch's compile made the cubin) is
kept beside it in Triton's cache under a digest of the bytes it is derived from, so it travels as
the kernels do (an owner's cache, the gallery's shared kernels).
"""
import contextlib
import hashlib
import io
import json
import re
import shutil
import subprocess
import tempfile
import threading
import time

import torch
import triton
import triton.language as tl
from triton._utils import type_canonicalisation_dict
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.errors import CompilationError
from triton.runtime.jit import JITFunction

from triton.runtime.cache import get_cache_manager

from sandbox.errors import RunError, compiler_failure
from sandbox.result import IR_STAGES as result_stages
from sandbox.launch import compiler_output
from sandbox.launch.ir_lines import kernel_file, line_map, shorten_paths
from sandbox.launch.kernel import LAUNCH_OPTIONS, find_kernel, launch_keywords, load_module, silenced

DEFAULT_CAPABILITY = 90  # Hopper: the target shown when there is no local GPU to ask
IR_STAGES = tuple(stage for stage in result_stages if stage != "sass")  # the compiler's own; SASS is nvdisasm's
DIVISIBLE_BY_16 = [["tt.divisibility", 16]]
DERIVED_FILE = "derived.json"
DERIVED_VERSION = 2  # of what `derive` makes and how: a new one never reads an older entry


def compile_ir(module_path, kernel_name, args, *, num_warps=4, num_stages=3, arch=None):
    """Compile `kernel_name` from the file `module_path` for `arch` ("sm80", "sm90", ...; None: the
    local GPU, else sm90) with `args` (parameter name -> tensor, number or constexpr value).

    Kernels wrapped in @triton.autotune / @triton.heuristics are compiled as their inner
    @triton.jit function with the given args (the caller passes the config that ran: its
    meta-parameters in `args`, its num_warps and num_stages); a meta-parameter missing from `args`
    comes from the heuristic.
    """
    with silenced():  # the run itself already showed what the module prints
        module = load_module(module_path, interpret=False, phase="compile")
    kernel = find_kernel(module, kernel_name, phase="compile")
    return compile_kernel(kernel, module, module_path, args, num_warps=num_warps, num_stages=num_stages, arch=arch)


def compile_kernel(kernel, module, module_path, args, *, num_warps=4, num_stages=3, arch=None):
    """compile_ir for a sandbox.launch.kernel.Kernel of `module` (whose file is `module_path`), already loaded."""
    capability = parse_arch(arch)
    fn, args = kernel.jit, with_heuristics(kernel, dict(args))
    # A parameter named like an option is that option too, as at launch (sandbox.launch.kernel.launch_keywords).
    options = {name: value for name, value in launch_keywords(args, num_warps=num_warps, num_stages=num_stages).items()
               if name in LAUNCH_OPTIONS}
    signature, constexprs, attrs = specialize(fn, args)
    source = ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    start = time.perf_counter()
    try:
        # ptxas failures print the whole PTX to stdout, a failed pass its diagnostic to stderr; the error
        # we raise carries what matters.
        with contextlib.redirect_stdout(io.StringIO()), compiler_output.captured():
            compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32), options=options)
    except Exception as e:
        raise compile_error(e, module) from None
    compile_ms = (time.perf_counter() - start) * 1e3  # a few ms when triton's on-disk cache has it
    return ir_result(compiled, module_path, capability, compile_ms)


def ir_of_compiled(compiled, module_path):
    """The IR of the kernel a launch compiled for the local GPU (a CompiledKernel): what ran, nothing
    compiled again (a compile of the same kernel's own would have to specialise its arguments exactly
    as the launch did to find the same cubin)."""
    return ir_result(compiled, module_path, parse_arch(None), 0.0)


def ir_result(compiled, module_path, capability, compile_ms):
    """The IR result of a compiled kernel of the file `module_path`, compiled for sm`capability`."""
    notes = []
    sass, usage, lines = derived(compiled.asm, compiled.metadata.name, module_path, notes)
    user_files = [module_path, kernel_file(compiled.asm["llir"], compiled.metadata.name)]
    return {"target": f"sm{capability}",
            **{stage: shorten_paths(compiled.asm[stage], user_files) for stage in IR_STAGES},
            "sass": sass,
            "n_regs": usage.get("REG"),
            # Local memory per thread in 4-byte words: what triton's launcher reports as n_spills.
            "n_spills": usage["LOCAL"] // 4 if "LOCAL" in usage else None,
            "shared_bytes": compiled.metadata.shared,
            "compile_ms": compile_ms,
            "line_map": lines,
            "notes": notes}


# ---------------------------------------------------------------- what is derived, cached

def derived_key(asm, kernel_name):
    """The cache key of what is derived from a compiled kernel: a digest of every byte it is derived
    from (the cubin and the IR, whose text names the source file), given to Triton's cache manager
    as `triton.compile` gives its own (hex; the manager names the entry), so that the kernel caches
    keep and lend it like any entry."""
    digest = hashlib.sha256(f"playground-derived-{DERIVED_VERSION}-{triton.__version__}-{kernel_name}".encode())
    digest.update(asm["cubin"])
    for stage in IR_STAGES:
        digest.update(b"\0" + asm[stage].encode())
    return digest.hexdigest()


def derived(asm, kernel_name, module_path, notes):
    """(SASS, {"REG", "SHARED", "LOCAL", ...}, line map) of a compiled kernel: from the cache when an
    earlier run derived them from the same bytes, else derived now and kept (unless a tool failed:
    `notes` says so, and the next run tries again)."""
    cache = get_cache_manager(derived_key(asm, kernel_name))
    found = read_derived(cache.get_file(DERIVED_FILE))
    if found is not None:
        return found
    sass, usage = inspect_cubin(asm["cubin"], notes)
    lines = line_map(asm, module_path, kernel_name)
    if not notes:
        with contextlib.suppress(OSError):  # not kept: the next run derives them again
            cache.put(json.dumps({"sass": sass, "usage": usage, "line_map": lines}), DERIVED_FILE, binary=False)
    return sass, usage, lines


def read_derived(path):
    """A kept entry, as `derived` returns it; None when there is none or it is not one (an owner's
    cache is written by the owner's runs: read as data, checked field by field)."""
    if path is None:
        return None
    try:
        with open(path) as f:
            kept = json.load(f)
        usage = {str(k): int(v) for k, v in kept["usage"].items()}
        lines = {stage: {int(i): int(line) for i, line in kept["line_map"][stage].items()} for stage in IR_STAGES}
        sass = kept["sass"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return (sass if isinstance(sass, str) else None), usage, lines


def parse_arch(arch):
    """"sm90" / "sm_90a" / "90" -> 90; None -> the local GPU's capability, else DEFAULT_CAPABILITY."""
    if arch is None:
        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return major * 10 + minor
        return DEFAULT_CAPABILITY
    match = re.fullmatch(r"(?:sm_?)?(\d{2,3})a?", str(arch).strip().lower())
    if not match:
        raise RunError("compile", f"unknown GPU architecture {arch!r}: write it as sm80, sm90, sm100, ...")
    return int(match.group(1))


# ---------------------------------------------------------------- the kernel

def with_heuristics(kernel, args):
    """`args` with what @triton.heuristics computes for the meta-parameters they lack."""
    for name, rule in kernel.heuristics.items():
        if name not in args:
            try:
                args[name] = rule(dict(args))
            except Exception as e:
                raise RunError("compile", f"the heuristic for '{name}' failed: {type(e).__name__}: {e}",
                               type=type(e).__name__, field="source") from None
    return args


def specialize(fn, args):
    """Signature, constexprs and attributes as triton's JIT derives them from a launch's arguments:
    ints by magnitude (1 becomes a constant, unless do_not_specialize), pointers and ints divisible by
    16 marked so."""
    signature, constexprs, attrs = {}, {}, {}
    for index, param in enumerate(fn.params):
        if param.name in args:
            value = args[param.name]
        elif param.has_default:
            value = param.default
        else:
            raise RunError("compile", f"argument '{param.name}' of {fn.__name__} has no value")
        kind, divisible = ("constexpr", False) if param.is_constexpr else param_type(value)  # a str may be one
        if param.do_not_specialize and type(value) is int and value == 1:
            kind, divisible = "i32", False  # a 1 is compiled in only where the parameter may be specialized
        if kind == "constexpr":
            signature[param.name] = "constexpr"
            constexprs[(index, )] = value.value if isinstance(value, tl.constexpr) else value
            continue
        if param.annotation_type:  # e.g. `n: tl.int64` fixes the type whatever the value
            kind = param.annotation_type
            divisible = divisible and kind[:2] not in ("fp", "bf", "u1")
        signature[param.name] = kind
        if divisible and not param.do_not_specialize and not param.do_not_specialize_on_alignment:
            attrs[(index, )] = DIVISIBLE_BY_16
    return signature, constexprs, attrs


def param_type(value):
    """(triton type, divisible by 16) of one runtime argument."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return "*" + type_canonicalisation_dict.get(dtype, dtype), value.data_ptr() % 16 == 0
    if value is None:
        return "constexpr", False
    if isinstance(value, bool):
        return "u1", False
    if isinstance(value, int):
        if value == 1:  # the JIT compiles a 1 in as a constant
            return "constexpr", False
        if -2**31 <= value < 2**31:
            kind = "i32"
        elif 2**63 <= value < 2**64:
            kind = "u64"
        else:
            kind = "i64"
        return kind, value % 16 == 0
    if isinstance(value, float):
        return "fp32", False
    if isinstance(value, tl.constexpr):
        return "constexpr", False
    raise RunError("compile", f"cannot pass a {type(value).__name__} to a kernel: use a tensor, an int, a float or a bool")


# ---------------------------------------------------------------- errors

def compile_error(exc, module):
    """A RunError at the user's line for triton's CompilationError (or any other compiler failure)."""
    starts = jit_function_lines(module)
    line, innermost, cause = None, exc, exc
    while cause is not None:
        if isinstance(cause, CompilationError):
            innermost = cause
            lineno = getattr(cause.node, "lineno", None)
            if cause.src in starts and lineno is not None:
                line = starts[cause.src] + lineno - 1
        cause = cause.__cause__
    root = innermost.__cause__ or innermost
    if not isinstance(innermost, CompilationError):
        failure = compiler_failure(exc, module.__file__, line)
        if failure is not None:
            return failure
    if isinstance(innermost, CompilationError) and innermost.error_message:
        text = innermost.error_message
    else:
        text = str(root)
    called = UNSUPPORTED_CALL.search(text)
    if called and line is None:  # refused before code generation, with no node: the call's line is found
        line = call_line(starts, called.group("name"))
    return RunError("compile", f"{type(root).__name__}: {text}", type=type(root).__name__, line=line)


# Triton's refusal of a plain Python callable a kernel calls (its dependency hash, before any line is known).
UNSUPPORTED_CALL = re.compile(r"Unsupported function referenced: <(?:built-in )?(?:function|ufunc|method) '?(?P<name>\w+)")


def call_line(starts, name):
    """The first line of the module's jit functions (`starts`, jit_function_lines) that calls `name`."""
    call = re.compile(rf"(?<![\w.])(?:\w+\.)*{re.escape(name)}\s*\(")
    for source, start in starts.items():  # each source begins at its `def`, the line `start`
        for offset, text in enumerate(source.splitlines()):
            if offset and call.search(text):
                return start + offset
    return None


def jit_function_lines(module):
    """{source of each jit function defined in the module's file: line of its `def` there}."""
    starts = {}
    for obj in vars(module).values():
        while not isinstance(obj, JITFunction) and hasattr(obj, "fn"):
            obj = obj.fn
        if isinstance(obj, JITFunction) and obj.fn.__code__.co_filename == module.__file__:
            decorators = next(i for i, text in enumerate(obj.raw_src) if text.lstrip().startswith("def "))
            starts[obj.src] = obj.starting_line_number + decorators
    return starts


# ---------------------------------------------------------------- the cubin

def nvidia_tool(name):
    """The copy triton ships (or TRITON_<NAME>_PATH), else one on PATH, else None."""
    try:
        return getattr(triton.knobs.nvidia, name).path
    except RuntimeError:
        return shutil.which(name)


class Disassembly:
    """One cubin's SASS listing (nvdisasm: branch targets as labels, no dataflow analysis, which
    changes nothing printed) and resource usage (cuobjdump -res-usage), the two processes started at
    once. The listing takes ~0.5 s whatever the cubin's size (nvdisasm's own start; `cuobjdump -sass`,
    which runs it, took ~0.08 s more): started as soon as the cubin exists (disassemble_early), it
    runs beside the check and the timing."""

    def __init__(self, tools, cubin):
        self.file = tempfile.NamedTemporaryFile(suffix=".cubin")
        self.file.write(cubin)
        self.file.flush()
        self.processes = {}
        for name, command in (("nvdisasm", [tools["nvdisasm"], "--print-code", "--no-dataflow"]),
                              ("cuobjdump -res-usage", [tools["cuobjdump"], "-res-usage"])):
            try:
                self.processes[name] = subprocess.Popen(command + [self.file.name], stdout=subprocess.PIPE,
                                                        stderr=subprocess.PIPE, text=True)
            except OSError as e:
                self.processes[name] = e

    def result(self, notes, timeout_s=60):
        """(SASS listing or None, {"REG": .., ...}); a tool's failure is a note."""
        out = {name: self._output(name, process, notes, timeout_s) for name, process in self.processes.items()}
        self.file.close()
        sass = out["nvdisasm"]
        return (clean_sass(sass) if sass else None), resource_usage(out["cuobjdump -res-usage"] or "")

    @staticmethod
    def _output(name, process, notes, timeout_s):
        try:
            if isinstance(process, OSError):
                raise process
            stdout, stderr = process.communicate(timeout=timeout_s)
            if process.returncode:
                raise subprocess.CalledProcessError(process.returncode, process.args, stderr=stderr)
            return stdout
        except (subprocess.SubprocessError, OSError) as e:
            if not isinstance(process, OSError):
                process.kill()
                process.wait()
            notes.append(f"{name} failed: {e}")
            return None


_early, _early_lock = {}, threading.Lock()  # a cubin's digest -> its Disassembly, started early


def disassembly_tools():
    """{"nvdisasm": path, "cuobjdump": path}, or None where either is missing."""
    tools = {name: nvidia_tool(name) for name in ("nvdisasm", "cuobjdump")}
    return tools if all(tools.values()) else None


def disassemble_early(compiled):
    """Start disassembling a just-compiled kernel (a CompiledKernel, or None) whose derived data no
    earlier run kept, for the IR step to collect (inspect_cubin) once the run gets there."""
    tools = disassembly_tools()
    asm = getattr(compiled, "asm", None)
    if tools is None or not asm or "cubin" not in asm:
        return
    if get_cache_manager(derived_key(asm, compiled.metadata.name)).get_file(DERIVED_FILE) is not None:
        return  # kept: nothing to derive
    digest = hashlib.sha256(asm["cubin"]).hexdigest()
    with _early_lock:
        if digest not in _early:
            _early[digest] = Disassembly(tools, asm["cubin"])


def inspect_cubin(cubin, notes):
    """(SASS listing, {"REG": .., "SHARED": .., "LOCAL": ..}); (None, {}) without NVIDIA's tools."""
    tools = disassembly_tools()
    if tools is None:
        notes.append("nvdisasm or cuobjdump was not found: no SASS, and registers and spills are unknown")
        return None, {}
    with _early_lock:
        started = _early.pop(hashlib.sha256(cubin).hexdigest(), None)
    return (started or Disassembly(tools, cubin)).result(notes)


# The ELF's bookkeeping in nvdisasm's listing (sections, symbols' types and sizes), none of it code.
ELF_DIRECTIVE = re.compile(r"\s*\.(section|align|global|weak|type|size|other|elftype|headerflags)\b|\s*//-+ ")


def clean_sass(listing):
    """nvdisasm's listing of the code alone: its `.target`, each function's label, the instructions and
    the branch targets' labels (the symbol table after them, and the ELF's directives, dropped)."""
    lines = []
    for line in listing.split("\n"):
        if "//--------------------- SYMBOLS" in line:
            break
        if line.strip() and not ELF_DIRECTIVE.match(line) and not line.startswith(".text."):
            lines.append(" ".join(line.split()) if line.strip().startswith(".target") else line.rstrip())
    return "\n".join(lines) + "\n"


def resource_usage(text):
    """{"REG": 26, "SHARED": 0, "LOCAL": 0, ...} from `cuobjdump -res-usage` (the kernel's function)."""
    match = re.search(r"Function [^\n]*:\s*\n\s*(.*)", text)
    return {k: int(v) for k, v in re.findall(r"(\w+):(\d+)", match.group(1))} if match else {}
