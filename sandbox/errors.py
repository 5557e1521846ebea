"""The one error type a run reports, and the plain-words hints for Triton's common mistakes."""
import dataclasses
import functools
import importlib.metadata
import os
import re
import traceback

PHASES = ("parse", "build", "compile", "launch", "check", "bench", "trace", "ir",
          "timeout", "limit", "sandbox", "stopped", "program")


class RunError(Exception):
    """A run failed in `phase`. Fields, never text to parse back: `message` in plain words, `hint`
    (what a beginner should try; found from the message when not given), `line` of the user's
    source, `pid` the program id, `field` the spec field at fault ("args.n", "inputs.x", "grid",
    "reference.out", "options.flops", "source", "kernel"), `launch` the index of the program's
    launch at fault (script mode)."""

    trace = None  # an out-of-bounds error's trace, up to and including the offending access

    def __init__(self, phase, message, *, type=None, hint=None, line=None, pid=None, field=None, launch=None):
        assert phase in PHASES, phase
        super().__init__(message)
        self.phase, self.message, self.type = phase, message, type
        self.hint = hint if hint is not None else hint_for(message)
        self.line, self.pid, self.field, self.launch = line, pid, field, launch

    def to_dict(self):
        return {"phase": self.phase, "type": self.type or "RunError", "message": self.message,
                "hint": self.hint, "line": self.line, "pid": self.pid, "field": self.field,
                "launch": self.launch}


class Refused(Exception):
    """A request refused before any run, as every HTTP route and Socket.IO ack answers it (the one
    handler: app.web.errors): its class says `status` (HTTP), `phase` (parse, limit, timeout or
    sandbox) and `type` (the class's own name: one type per refusal, whatever the route); `field` names
    the request's field at fault, `retry_after` the seconds a 429 asks to wait."""

    status, phase = 400, "parse"

    def __init__(self, message, field=None, *, retry_after=None, hint=None):
        super().__init__(message)
        self.field, self.retry_after, self.hint = field, retry_after, hint

    @classmethod
    def kind(cls):
        return cls.__name__

    def error(self):
        """The refusal as a run's error (the body's one shape)."""
        return RunError(self.phase, str(self), type=self.kind(), hint=self.hint, field=self.field)


def unknown_fields(found, allowed, where, refusal, prefix=""):
    """Refuse (raise `refusal(message, field)`) a mapping `found` holding a key outside `allowed`: the
    message names up to five of them (sorted) and what `where` ("in the run spec") may hold; the
    field is the first, after `prefix` (its parent's path: "options.")."""
    unknown = sorted((key for key in found if key not in allowed), key=str)
    if unknown:
        names = ", ".join(repr(str(key) if len(str(key)) <= 40 else str(key)[:40] + "…") for key in unknown[:5])
        raise refusal(f"unknown field{'s' if len(unknown) > 1 else ''} {where}: {names}"
                      f"{' and more' if len(unknown) > 5 else ''}; it has only {', '.join(allowed)}",
                      prefix + str(unknown[0])[:40])


class StartError(RuntimeError):
    """A worker, or a run process of one, could not start; its message says why in a line, as
    /healthz shows it (never a traceback)."""


def explain(exc):
    """(type name, message) of the innermost meaningful exception: the interpreter wraps errors as
    InterpreterError(repr(e)), the compiler as CompilationError. The type is a field of its own:
    the message does not repeat it."""
    inner = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    return type(inner).__name__, str(inner) or type(inner).__name__


# (pattern in Triton's message, what a beginner should read). Checked in order; first match wins.
HINTS = [
    (re.compile(r"arange's range must be a power of 2|range must be a power of 2", re.I),
     "tl.arange(start, end) needs end - start to be a power of 2 (1, 2, 4, 8, 16, ...). "
     "Round the block size up to the next power of 2 (triton.next_power_of_2(n)) "
     "and mask the extra lanes off with `mask = offs < n`."),
    (re.compile(r"arange's arguments must be of type tl.constexpr", re.I),
     "tl.arange(start, end) needs numbers known at compile time: declare the size as a "
     "`BLOCK: tl.constexpr` parameter instead of a plain argument."),
    (re.compile(r"numel.*power of|shape.*power of 2|must be a power of 2", re.I),
     "Block shapes in Triton must be powers of 2. Round the size up "
     "(triton.next_power_of_2) and mask the extra lanes."),
    (re.compile(r"Cannot broadcast|incompatible shapes|shape mismatch", re.I),
     "Two blocks with different shapes were combined. Check the shapes of your offsets: "
     "a row vector is offs[None, :] and a column vector offs[:, None]."),
    (re.compile(r"Block pointers have been removed", re.I),
     "Triton 3.9 removed block pointers (tl.make_block_ptr, tl.advance): describe the tensor once with "
     "tl.make_tensor_descriptor(base, shape, strides, block_shape), then load and store tiles by their offsets "
     "(desc.load([m, n]), desc.store([m, n], tile)); tiles past the edge read zeros, so no boundary_check."),
    (re.compile(r"Unsupported function referenced"),
     "A kernel can call only @triton.jit functions and Triton's own (tl.*, libdevice): decorate the "
     "function with @triton.jit, or write it with tl operations. Triton's interpreter runs any Python, "
     "the compiler does not."),
    (re.compile(r"is not string$"),
     "print() in a kernel takes a text first: print('offs', offs), or tl.device_print('offs', offs) "
     "(tl.static_print for values known at compile time)."),
    (re.compile(r"^EOF when reading a line$"),
     "A run has no keyboard: input() finds nothing to read. Write the value into the source instead."),
]


def hint_for(message):
    for pattern, hint in HINTS:
        if pattern.search(message or ""):
            return hint
    return None


# ---------------------------------------------------------------- failures inside Triton's compiler

# The stages of Triton's compiler after its front end, by the function of its backend
# (triton/backends/<backend>/compiler.py) that makes each, and what to try when one fails.
COMPILER_STAGES = {
    "make_ttir": ("TTIR", "Triton's own IR could not be simplified: the kernel likely uses a construct this "
                          "Triton lowers only in part."),
    "make_ttgir": ("TTGIR", "Laying the kernel out on the GPU failed (layouts, software pipelining, tl.dot's "
                            "lowering): try num_stages=1, another num_warps, or tl.dot blocks of at least 16 "
                            "in each dimension."),
    "gluon_to_ttgir": ("TTGIR", "Lowering the Gluon kernel to Triton's GPU IR failed: check its layouts against "
                                "this Triton's Gluon."),
    "make_llir": ("LLIR", "Lowering to LLVM failed: often an operation or dtype this GPU target lacks (fp8 needs "
                          "sm89 or later), or inline assembly it cannot take."),
    "make_ptx": ("PTX", "LLVM could not emit PTX for this target: try another target GPU or dtype."),
    "make_cubin": ("SASS (ptxas)", "ptxas refused the PTX: inline assembly it does not know, or more "
                                   "registers or shared memory than the GPU has (smaller blocks, fewer stages)."),
    "make_amdgcn": ("AMDGCN", "LLVM could not emit AMDGCN for this target."),
    "make_hsaco": ("HSACO", "The AMD linker refused the kernel."),
}


@functools.cache
def triton_version():
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return "(unknown)"


# What a kernel uses that this Triton lacks, as Python says it: a name its modules do not have.
LACKED = re.compile(r"module '(?P<module>triton(?:\.\w+)*)' has no attribute '(?P<name>\w+)'"
                    r"|cannot import name '(?P<imported>\w+)' from '(?P<origin>triton(?:\.\w+)*)'")


def lacked_by_triton(exc, phase, line=None):
    """`exc` (anywhere in its chain) says the kernel uses a name this Triton's modules lack (a
    function a newer release added, one an older had): the run's error naming the version, its field
    options.triton (the version picker). None for any other error."""
    for raised in error_chain(exc):
        found = LACKED.search(str(raised))
        if found is not None:
            break
    else:
        return None
    module, name = found["module"] or found["origin"], found["name"] or found["imported"]
    shown = {"triton.language": "tl"}.get(module, module)
    version = triton_version()
    return RunError(phase, f"Triton {version} has no {shown}.{name}: this kernel uses something this version lacks "
                           f"({module} has no attribute '{name}')", line=line,
                    type="AttributeError" if found["module"] else "ImportError",
                    field="options.triton",
                    hint=f"Another Triton release may have it (newer releases add functions and drop old "
                         f"ones): choose one beside num_warps (options.triton; GET /api/spec lists this "
                         f"server's). This run used Triton {version}.")


def error_chain(exc):
    """`exc`, then what it was raised from or during, innermost last (each once)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def compiler_stage(exc):
    """The stage name of Triton's compiler in which `exc` (or an exception it was raised from) was
    raised, or None when it did not come from inside Triton's compiler."""
    for raised in error_chain(exc):
        for frame in reversed(traceback.extract_tb(raised.__traceback__)):
            if frame.name in COMPILER_STAGES and f"{os.sep}triton{os.sep}backends{os.sep}" in frame.filename:
                return frame.name
    return None


def compiler_failure(exc, path, line=None):
    """`exc` raised inside Triton's compiler, after its front end accepted the kernel, as the run's
    error: Triton's version, the stage, the source line (`line`, else the one the compiler's
    diagnostic or Triton's message names in `path`), what the compiler said (a failed pass's
    diagnostic, which it writes to stderr: COMPILER_REPORT) and what to try. None when `exc` did
    not come from there."""
    stage = compiler_stage(exc)
    if stage is None:
        return None
    name, advice = COMPILER_STAGES[stage]
    inner = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    text = (str(inner) or type(inner).__name__).strip()
    diagnostic = read_diagnostic(next((getattr(raised, COMPILER_REPORT) for raised in error_chain(exc)
                                       if hasattr(raised, COMPILER_REPORT)), ""), path)
    if line is None:
        named = re.search(re.escape(path) + r'"?:(\d+)', text)
        line = diagnostic.line or (int(named.group(1)) if named else None)
    kind, specific = type(inner).__name__, None
    if PASS_MANAGER_FAILED.search(text):  # Triton's words say only that a pass failed: the pass's own say why
        kind, specific = "CompilerPassFailed", diagnostic_hint(diagnostic)
        text = diagnostic.said or "one of its passes failed without a diagnostic"
    else:
        text = f"{kind}: {text}"
    version = triton_version()
    where = f" (at line {line})" if line else ""
    in_pass = f", in its pass {diagnostic.failed_pass}" if diagnostic.failed_pass else ""
    return RunError("compile", f"Triton {version}'s compiler failed at its {name} stage{where}{in_pass}: {text}",
                    type=kind, line=line, field=None if line else "source",
                    hint=f"{specific or advice} The front end accepted the kernel; a pass "
                         f"after it did not. A kernel written for another Triton (a newer release, Triton's main "
                         f"branch) may need that version: this playground compiles with Triton {version}.")


# ---------------------------------------------------------------- what the compiler said

# The attribute of a compile's exception holding what Triton's compiler wrote to stderr while it ran
# (sandbox.launch.compiler_output sets it).
COMPILER_REPORT = "compiler_report"
PASS_MANAGER_FAILED = re.compile(r"PassManager::run failed")
MAX_SAID = 600  # characters of the compiler's own words in a message
# One MLIR diagnostic line: `file:line:col: error: text`, or `loc("file":line:col): error: text`.
DIAGNOSTIC_LINE = re.compile(r'^\s*(?:loc\()?"?(?P<file>[^"\n]*?)"?:(?P<line>\d+):(?P<col>\d+)\)?:\s*'
                             r'(?P<severity>error|note|warning|remark):\s*(?P<text>.*?)\s*$')
BARE_ERROR = re.compile(r"^\s*(?P<kind>LLVM ERROR|error):\s*(?P<text>.*?)\s*$")
# MLIR's words when a pass failed, whatever the pass: the pass and its own error say more.
PIPELINE_FAILED = "Failures have been detected while processing an MLIR pass pipeline"
PLAIN_LINE = re.compile(r"^[A-Za-z][^\n]{0,300}$")  # words, not a line of the IR a reproducer dumps
FAILED_PASS = re.compile(r"Pipeline failed while executing \[`(?P<name>[^`]+)`")


@dataclasses.dataclass
class Diagnostic:
    """What a compiler's report says: its errors in order (`errors`), the user's line the first one
    in their file names, the MLIR pass that failed."""
    errors: list = dataclasses.field(default_factory=list)
    line: int = None
    failed_pass: str = None

    @property
    def said(self):
        """The errors, as a message says them (bounded); None when there is none."""
        text = "; ".join(dict.fromkeys(self.errors))
        return (text if len(text) <= MAX_SAID else text[:MAX_SAID - 1] + "…") or None


def read_diagnostic(report, path):
    """The Diagnostic of a compiler's `report` (its stderr), locations read against the user's file
    `path`: an error of a pass (or LLVM's) before MLIR's generic "failures have been detected",
    which is kept only when nothing else is said."""
    found, generic, generic_line = Diagnostic(), None, None
    ours = {path, os.path.realpath(path)} if path else set()
    before = None  # the line before: what LLVM's fatal error was about, where the pass printed it first
    for text in report.splitlines():
        located, bare = DIAGNOSTIC_LINE.match(text), BARE_ERROR.match(text)
        if located:
            said = located["text"]
            in_file = located["file"] in ours or os.path.realpath(located["file"] or ".") in ours
            if located["severity"] == "note":
                failed = FAILED_PASS.search(said)
                if failed and found.failed_pass is None:
                    found.failed_pass = failed["name"]
            elif located["severity"] == "error":
                if said.startswith(PIPELINE_FAILED):
                    generic = generic or said
                    generic_line = generic_line or (int(located["line"]) if in_file else None)
                else:
                    found.errors.append(said)
                    if in_file and found.line is None:
                        found.line = int(located["line"])
        elif bare:
            if bare["kind"] == "LLVM ERROR" and before is not None and PLAIN_LINE.match(before):
                found.errors.append(before.strip())
            found.errors.append(f"LLVM ERROR: {bare['text']}" if bare["kind"] == "LLVM ERROR" else bare["text"])
        before = None if located or bare else text
    if not found.errors and generic:
        found.errors.append(generic)
    found.line = found.line or generic_line
    return found


# (pattern in the compiler's errors or its failed pass, what to try). Checked in order; first match wins.
DIAGNOSTIC_HINTS = [
    (re.compile(r"WarpSpecializ|producer commit", re.I),
     "The loop marked tl.range(..., warp_specialize=True) could not be split between warp groups by this Triton's "
     "warp specializer (it takes tiles loaded through tensor descriptors, tl.make_tensor_descriptor, best). "
     "Try without warp_specialize=True, or with num_stages=1 or num_warps=8."),
    (re.compile(r"Unsupported conversion from (?P<source>\w+) to (?P<target>\w+)"),
     "This Triton cannot convert {source} to {target} directly on this target: convert through float32 "
     "(x.to(tl.float32).to(...)), which it can."),
    (re.compile(r"failed to legalize operation '(?P<op>[\w.]+)'"),
     "This Triton has no lowering of {op} for this target: it likely needs a newer GPU (another target "
     "architecture, options.arch) or a newer Triton; or write that line with other operations."),
    (re.compile(r"shared memory|out of resource", re.I),
     "The kernel needs more shared memory than the GPU has: smaller blocks, or fewer num_stages."),
    (re.compile(r"layout", re.I),
     "A layout conversion this Triton cannot make: try another num_warps, or block shapes that are powers of 2 "
     "and at least 16 where they meet tl.dot."),
]


def diagnostic_hint(diagnostic):
    """What to try for a Diagnostic, where its words say; None for the stage's own advice."""
    words = " ".join([*diagnostic.errors, diagnostic.failed_pass or ""])
    for pattern, hint in DIAGNOSTIC_HINTS:
        found = pattern.search(words)
        if found:
            return hint.format(**found.groupdict())
    return None


def escaped(exc):
    """An exception that escaped a run's own handling (the playground's fault: the pipeline answers for
    the kernel's) as the run's error, naming where it was raised, in place of a traceback among what
    the run printed. A SystemExit or a KeyboardInterrupt is no fault of the playground's: the code the
    run ran raised it, or (the interrupt) a SIGINT reached the run's process (nothing of the playground
    sends one)."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    if isinstance(exc, SystemExit):
        return RunError("sandbox", f"the code the run ran exited (sys.exit({exc.code!r}) at {os.path.basename(frame.filename)}:"
                                   f"{frame.lineno}) before the run's result; the server is fine, only this run was "
                                   f"lost", type="SystemExit")
    if isinstance(exc, KeyboardInterrupt):
        return RunError("sandbox", f"the run was interrupted (KeyboardInterrupt at {os.path.basename(frame.filename)}:"
                                   f"{frame.lineno}: raised by the code it ran, or a SIGINT sent to its process); the "
                                   f"server is fine, only this run was lost", type="Interrupted")
    return RunError("sandbox", f"the playground failed while running this ({type(exc).__name__}: {str(exc)[:300]}, "
                               f"at {os.path.basename(frame.filename)}:{frame.lineno}); the server is fine, only this "
                               f"run was lost", type="PlaygroundBug")
