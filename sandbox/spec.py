"""The run spec, version 1: the unit of work, of sharing and of the gallery (docs/run-spec.md).

Pure Python and free of user-code evaluation, so the web process can validate specs too.
"""
import ast
import builtins
import copy
import hashlib
import json
import keyword
import math
import re

from sandbox import settings
from sandbox.tritons import VERSION as TRITON_VERSION
from sandbox.errors import Refused, unknown_fields

VERSION = 1
DEVICES = ("auto", "gpu", "interpreter")
DEFAULT_OPTIONS = {
    "num_warps": 4, "num_stages": 3, "device": "auto", "seed": 0,
    "check": True, "bench": True, "trace": True, "ir": True,
    "sanitize": True,             # GPU: bounds-check on CPU copies first even when the trace is off
    "atol": None, "rtol": None,   # None: by dtype (see sandbox.run.check)
    "flops": None,                # optional FLOP count expression, for TFLOP/s
    "arch": None,                 # IR target, e.g. "sm90"; None: the GPU's own, or sm90 without one
    "puzzle": None,               # the puzzle this source answers: the server adds its hidden check
    "trace_pid": None,            # [x, y, z]: record this one program's accesses (one the trace left out)
    "sweep": None,                # {meta-parameter | num_warps | num_stages: [values]}: run each combination
    "step_pid": None,             # [x, y, z]: replay only this program, line by line, with its locals
    "launch": None,               # script mode: the index of the launch to trace, time and compile
    "benchmarks": "first",        # script mode: run each perf_report benchmark at its "first" point, or "all"
    "triton": None,               # the Triton release to run on ("3.9.0"), one the server has; None: its default
    "timeline": False,            # GPU: the kernel (a script's shown launch) once more under Proton's instrumentation
}
MODES = ("form", "script")  # a kernel and its launch form, or a whole program that launches kernels itself
BENCHMARKS = ("first", "all")
# What a script takes from its program instead of the spec: refused there, naming the field.
FORM_ONLY_FIELDS = ("kernel", "inputs", "args", "grid", "reference")
SCRIPT_ONLY_OPTIONS = ("launch", "benchmarks")  # not kept in a form run's spec: its content (and link) is as before
FORM_ONLY_OPTIONS = ("puzzle", "sweep", "step_pid", "check", "flops", "atol", "rtol")
# The names every expression of a spec (inputs, args, grid, reference, flops) may read besides the
# inputs, the arguments and what the source defines: these modules (sandbox.launch.build gives them),
# the grid's `meta`, and Python's builtins.
EXPRESSION_MODULES = ("torch", "triton", "tl", "math")
MAX_SOURCE_BYTES = 128 * 1024
NUM_WARPS = (1, 2, 4, 8, 16, 32)  # a CTA's warps: Triton lays blocks out over a power of 2 of them
PUZZLE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_SWEEP_CONFIGS = 16  # a sweep is a small grid: each configuration is a launch, checked and timed
NUM_STAGES = (1, 8)  # software-pipelining depth of loads in loops, inclusive (Triton's own configs use 1 to 7)
# The fields a spec may have; anything else at its top level is refused, naming it (a client that
# misspells "reference" learns it instead of running unchecked). "grading" is the server's own.
FIELDS = ("version", "mode", "source", "kernel", "inputs", "args", "grid", "reference", "options")
# How deep a request's JSON may nest. A spec is 4 deep at most (options.sweep.NAME[i]), a body
# around it 5; Python's own parsers and copies recurse, and a body nested hundreds deep would take
# them past the interpreter's stack (a RecursionError) before any field is looked at.
MAX_DEPTH = 32


# A program id: [x], [x, y] or [x, y, z], each at most a CUDA grid's largest x extent (y and z are smaller).
PROGRAM_ID = {"min_items": 1, "max_items": 3, "min": 0, "max": 2 ** 31 - 1}


def is_program_id(value):
    return (isinstance(value, list) and PROGRAM_ID["min_items"] <= len(value) <= PROGRAM_ID["max_items"]
            and all(type(v) is int and PROGRAM_ID["min"] <= v <= PROGRAM_ID["max"] for v in value))


def option_modes(name):
    """The modes whose runs take option `name`: a form run's, a script's, or both."""
    return [mode for mode, refused in (("form", SCRIPT_ONLY_OPTIONS), ("script", FORM_ONLY_OPTIONS)) if name not in refused]


def expression_names():
    """What an expression may read besides the inputs, the arguments and the source's own names;
    Python's keywords too, as a reader of its identifiers meets them."""
    return sorted({*EXPRESSION_MODULES, "meta", *keyword.kwlist, *keyword.softkwlist,
                   *(name for name in vars(builtins) if not name.startswith("_"))})


def schema():
    """What the page and API clients need to build a valid spec: each option's default, its allowed
    values and the modes that take it, and the names an expression may read (served as
    `GET /api/spec` and in the editor page), from the definitions above."""
    rules = {"num_warps": {"choices": list(NUM_WARPS)},
             "num_stages": {"min": NUM_STAGES[0], "max": NUM_STAGES[1]},
             "device": {"choices": list(DEVICES)},
             "sweep": {"max_configs": MAX_SWEEP_CONFIGS}, "trace_pid": PROGRAM_ID, "step_pid": PROGRAM_ID,
             "benchmarks": {"choices": list(BENCHMARKS)}, "triton": {"pattern": TRITON_VERSION.pattern}}
    return {"version": VERSION, "max_source_bytes": MAX_SOURCE_BYTES, "program_id": PROGRAM_ID,
            "expression_names": expression_names(),
            "options": {name: {"default": default, **rules.get(name, {}), "modes": option_modes(name)}
                        for name, default in DEFAULT_OPTIONS.items()}}


class SpecError(Refused, ValueError):
    """The spec is malformed; the message names the field, and `field` holds its path."""


def _expect(cond, message, field=None):
    if not cond:
        raise SpecError(message, field)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_expr_map(value):
    return isinstance(value, dict) and all(isinstance(k, str) and k.isidentifier() for k in value)


def _json_name(number):
    return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"


def check_finite(value, path=""):
    """Refuse NaN and ±Infinity anywhere in `value`, naming the field ("options.flops", "args.a[2]").
    JSON has no such numbers but Python's parsers accept them, and one that reached a worker would
    fail there (protocol.encode refuses it) instead of here, with a message that names nothing."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{path or 'the value'} must be a finite number, not {_json_name(value)}", path or None)
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_finite(item, f"{path}[{index}]")


def _measure(value, depth_limit=None, count_limit=None):
    """(how deep `value` nests, how many values it holds, itself included), walked without recursion;
    the walk stops as soon as either limit is passed."""
    deepest, count, stack = 0, 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        count += 1
        if count_limit is not None and count > count_limit:
            break
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if depth_limit is not None and deepest > depth_limit:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest, count


def too_deep(what="the request"):
    """The error of a JSON value nested past MAX_DEPTH."""
    return SpecError(f"{what} is nested more than {MAX_DEPTH} levels deep; the depth limit is {MAX_DEPTH} levels",
                     "depth")


def check_size(value, what="the request", most=None):
    """Refuse a value nested deeper than MAX_DEPTH, or holding more than `most` values (numbers,
    strings, lists, objects; the web app passes its config's REQUEST_MAX_VALUES, elsewhere this
    process's setting), before anything else walks it: what the web process does with a request is
    then bounded by the request's size, whatever its shape."""
    most = settings.value("REQUEST_MAX_VALUES") if most is None else most
    deepest, count = _measure(value, MAX_DEPTH, most)
    if deepest > MAX_DEPTH:
        raise too_deep(what)
    if count > most:
        raise SpecError(f"{what} holds more than {most:,} values (numbers, strings, lists, objects); "
                        f"the limit is REQUEST_MAX_VALUES", "size")


def parse_source(source, what="the source", field="source"):
    """`source`'s syntax tree, or a SpecError naming `field`: a source that does not parse, or that
    nests deeper than Python's parser goes (a MemoryError or RecursionError there), is refused."""
    try:
        return ast.parse(source)
    except SyntaxError as e:
        raise SpecError(f"{what} does not parse: {e.msg} (line {e.lineno})", field) from None
    except (ValueError, MemoryError, RecursionError):
        raise SpecError(f"{what} nests deeper than Python's parser goes", field) from None


def parameter_names(function):
    """The parameter names of a function's syntax tree (an ast.FunctionDef), in order: how anything
    that reads a kernel from its source, without running it, reads its parameters."""
    return [a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs]


def normalize(raw):
    """Check a spec's shape and fill in defaults. Returns a new dict; raises SpecError."""
    _expect(isinstance(raw, dict), "the run spec must be a JSON object")
    check_size(raw, "the run spec")
    unknown_fields({key: value for key, value in raw.items() if key != "grading"}, FIELDS, "in the run spec", SpecError)
    check_finite(raw)
    spec = copy.deepcopy(raw)
    _expect(spec.get("version", VERSION) == VERSION, f"unsupported spec version {spec.get('version')!r} (expected {VERSION})")
    spec["version"] = VERSION
    _expect(isinstance(spec.get("source"), str) and spec["source"].strip(), "'source' must be the kernel's Python source", "source")
    _expect(len(spec["source"].encode()) <= MAX_SOURCE_BYTES, f"'source' is larger than {MAX_SOURCE_BYTES // 1024} KB", "source")
    _expect(spec.get("mode", "form") in MODES, f"'mode' must be one of {', '.join(MODES)}", "mode")
    if spec.get("mode") == "script":
        return _normalize_script(spec)
    spec.pop("mode", None)  # a form run's spec is as it always was: its mode is the default
    _expect(isinstance(spec.get("kernel"), str) and spec["kernel"].isidentifier(),
            "'kernel' must name the @triton.jit function to launch", "kernel")
    for field in ("inputs", "args", "reference"):
        spec.setdefault(field, {})
        _expect(_is_expr_map(spec[field]), f"'{field}' must map names (identifiers) to expressions", field)
    for name, expr in spec["inputs"].items():
        _expect(isinstance(expr, str) and expr.strip(), f"input '{name}' needs a torch expression", f"inputs.{name}")
    for name, value in spec["args"].items():
        _expect(isinstance(value, (str, int, float, bool)) or value is None,
                f"argument '{name}' must be an expression (string) or a literal", f"args.{name}")
    for name, expr in spec["reference"].items():
        _expect(name in spec["inputs"], f"reference '{name}' is not an input: references describe the expected value of an output tensor", f"reference.{name}")
        _expect(isinstance(expr, str) and expr.strip(), f"reference for '{name}' needs an expression", f"reference.{name}")
    _expect(isinstance(spec.get("grid"), str) and spec["grid"].strip(), "'grid' must be an expression such as (triton.cdiv(n, meta['BLOCK_SIZE']),)", "grid")
    options = _options(spec)
    for key in SCRIPT_ONLY_OPTIONS:
        _expect(options.pop(key) == DEFAULT_OPTIONS[key], f"options.{key} is for a script (\"mode\": \"script\"): "
                                                          f"a form run has one launch", f"options.{key}")
    _check_common_options(options)
    low, high = NUM_STAGES
    _expect(isinstance(options["num_stages"], int) and not isinstance(options["num_stages"], bool)
            and low <= options["num_stages"] <= high, f"options.num_stages must be an integer from {low} to {high}",
            "options.num_stages")
    _expect(type(options["num_warps"]) is int and options["num_warps"] in NUM_WARPS,
            f"options.num_warps must be a power of 2 ({', '.join(map(str, NUM_WARPS))}), not {options['num_warps']}",
            "options.num_warps")
    for key in ("atol", "rtol"):
        _expect(options[key] is None or _is_number(options[key]) and options[key] >= 0,
                f"options.{key} must be a non-negative number, or null for the dtype's default", f"options.{key}")
    _expect(options["flops"] is None or _is_number(options["flops"]) or isinstance(options["flops"], str),
            "options.flops must be a number or an expression such as \"2 * M * N * K\"", "options.flops")
    _expect(options["puzzle"] is None or isinstance(options["puzzle"], str) and PUZZLE_NAME.match(options["puzzle"]),
            "options.puzzle must name a puzzle (letters, digits, '_' and '-'), or be null", "options.puzzle")
    _check_sweep(options["sweep"])
    step = options["step_pid"]
    _expect(step is None or is_program_id(step),
            "options.step_pid must be a program id: a list of 1 to 3 non-negative integers", "options.step_pid")
    _expect("grading" not in spec, "'grading' is the server's own (a puzzle's hidden check): name the puzzle in "
                                   "options.puzzle instead", "grading")
    spec["options"] = options
    return spec


def _options(spec):
    """The spec's options over the defaults; an unknown one is refused."""
    options = dict(DEFAULT_OPTIONS)
    user_options = spec.get("options") or {}
    _expect(isinstance(user_options, dict), "'options' must be an object", "options")
    unknown_fields(user_options, DEFAULT_OPTIONS, "in the options", SpecError, "options.")
    options.update(user_options)
    return options


def _check_common_options(options):
    """The options a form run and a script share."""
    _expect(options["device"] in DEVICES, f"options.device must be one of {', '.join(DEVICES)}", "options.device")
    _expect(isinstance(options["seed"], int), "options.seed must be an integer", "options.seed")
    for key in ("check", "bench", "trace", "ir", "sanitize", "timeline"):
        _expect(isinstance(options[key], bool), f"options.{key} must be true or false", f"options.{key}")
    _expect(options["arch"] is None or isinstance(options["arch"], str), "options.arch must be a string such as \"sm90\"", "options.arch")
    _expect(options["triton"] is None or isinstance(options["triton"], str) and TRITON_VERSION.match(options["triton"]),
            "options.triton must be a Triton release such as \"3.9.0\" (GET /api/spec lists this server's), or null "
            "for the server's default", "options.triton")
    if options["triton"] is None:
        del options["triton"]  # a spec that names no version is as it was before versions (its content, its link)
    pid = options["trace_pid"]
    _expect(pid is None or is_program_id(pid),
            "options.trace_pid must be a program id such as [2, 0, 0], or null", "options.trace_pid")
    if pid is not None:
        options["trace_pid"] = pid + [0] * (3 - len(pid))


def _normalize_script(spec):
    """A script's spec: the source is a whole program; its launches say what a form's fields would."""
    _expect("grading" not in spec, "'grading' is the server's own (a puzzle's hidden check)", "grading")
    for field in FORM_ONLY_FIELDS:
        _expect(not spec.get(field), f"'{field}' is not used by a script (\"mode\": \"script\"): the program's own "
                                     f"launches say it; remove it", field)
        spec.pop(field, None)
    options = _options(spec)
    for key in FORM_ONLY_OPTIONS:
        _expect(options[key] == DEFAULT_OPTIONS[key], f"options.{key} is not available for a script "
                                                      f"(\"mode\": \"script\"): make a form run of one of its "
                                                      f"launches (POST /api/launch-form; Form in the page) to use it",
                f"options.{key}")
    _check_common_options(options)
    launch = options["launch"]
    _expect(launch is None or type(launch) is int and launch >= 0,
            "options.launch must be the index of one of the program's launches (0 for the first), or null", "options.launch")
    _expect(options["benchmarks"] in BENCHMARKS, f"options.benchmarks must be one of {', '.join(BENCHMARKS)}",
            "options.benchmarks")
    spec["options"] = options
    return spec


def is_script(spec):
    return isinstance(spec, dict) and spec.get("mode") == "script"


SCRIPT_NOT_AHEAD = "a script compiles its kernels as it runs: compiling ahead takes a form run's spec"


def _check_sweep(sweep):
    if sweep is None:
        return
    _expect(isinstance(sweep, dict) and sweep, "options.sweep must map meta-parameters, num_warps or num_stages "
                                               "to lists of values, e.g. {\"BLOCK_SIZE\": [256, 1024]}", "options.sweep")
    count = 1
    for name, values in sweep.items():
        field = f"options.sweep.{name}"
        _expect(name.isidentifier(), f"options.sweep: {name!r} is not a parameter name", "options.sweep")
        _expect(isinstance(values, list) and values and all(isinstance(v, (int, float, bool, str)) for v in values),
                f"{field} must be a non-empty list of literal values", field)
        if name == "num_warps":
            _expect(all(type(v) is int and v in NUM_WARPS for v in values),
                    f"{field}: each value must be a power of 2 ({', '.join(map(str, NUM_WARPS))})", field)
        if name == "num_stages":
            _expect(all(type(v) is int and NUM_STAGES[0] <= v <= NUM_STAGES[1] for v in values),
                    f"{field}: each value must be an integer from {NUM_STAGES[0]} to {NUM_STAGES[1]}", field)
        count *= len(values)
    _expect(count <= MAX_SWEEP_CONFIGS, f"options.sweep makes {count} configurations; a sweep runs at most "
                                        f"{MAX_SWEEP_CONFIGS}", "options.sweep")


def launch_key(spec):
    """What decides where a normalized spec's launch reads and writes: source, inputs (made from the
    seed), arguments and grid. Equal keys are the same launch, so a bounds check one passed holds for
    the other; options such as num_warps, bench or trace do not move an address."""
    fields = [spec[k] for k in ("source", "kernel", "inputs", "args", "grid")] + [spec["options"]["seed"]]
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def timing_key(spec):
    """Where a reference's timing is kept for its owner (app.dispatch.kept.ReferenceTimes): its
    expressions, the inputs' expressions and seed, and the device asked for, taken from the spec the
    server sends and never from what a run reports, so that a run keeps a timing only where a later
    run of the same reference over the same inputs looks. None for a spec without a reference."""
    if not (isinstance(spec, dict) and isinstance(spec.get("reference"), dict) and spec["reference"]):
        return None
    options = spec.get("options") or {}
    fields = [spec["reference"], spec.get("inputs"), options.get("seed"), options.get("device")]
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()


# The options that change what a run compiles (the kernel's build, its instrumented build, the IR's target).
COMPILE_OPTIONS = ("num_warps", "num_stages", "device", "arch", "trace", "sanitize", "trace_pid", "triton")


def compile_key(spec):
    """What decides what a normalized spec's run compiles: the launch and the compile options. A run
    whose key equals a finished compile-ahead's finds everything that compile built."""
    options = [spec["options"].get(name) for name in COMPILE_OPTIONS]
    return hashlib.sha256(json.dumps([launch_key(spec), options], sort_keys=True).encode()).hexdigest()
