"""Export a run spec as a standalone Python script that needs only triton and torch.

Pure text generation: the web process never runs the script. The script is, in order: its header
(exported/header.py.in), the kernel's source as written, the spec as a Python literal, the run's own
build and check (the definitions SHARED_DEFINITIONS names, copied from sandbox/launch/build.py and
sandbox/run/check.py as text: read here, never imported, as they import torch), and the runner
(exported/runner.py.in) that builds, launches, checks and times with them as a run does.
"""
import ast
import functools
import os

from sandbox.spec import SpecError, is_script, normalize, parameter_names, parse_source

PARTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exported")
SANDBOX = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "sandbox")
# What a run's build and check are made of, taken whole into every exported script.
SHARED_DEFINITIONS = {
    "launch/kernel.py": ("GridError", "triton_grid"),
    "launch/build.py": ("_EMPTY", "evaluate", "poison", "build_inputs", "build_grid"),
    "run/check.py": ("TOLERANCES", "tolerances", "unwritten_mask", "compare_one", "compare"),
}
SPEC = '''
# %% The run spec: inputs are built in order on DEVICE (later ones may use earlier ones; outputs
# made with torch.empty are poisoned first, so elements the kernel never writes show up); each
# argument is an expression over the inputs and earlier arguments, or a literal; `meta` in the
# grid is the dict of all arguments; each reference is the expected final value of an output,
# from the inputs as they were before the launch.
KERNEL = {kernel}
SPEC = {spec}
'''
# A puzzle's check stays on the server: the script says so, and prints what the kernel wrote.
PUZZLE_NOTE = '''# The puzzle "{puzzle}": its check runs on the server (the reference is not shared), so this
# script prints what your kernel wrote. To be graded, Run it on the puzzle's page: /puzzles/{puzzle}

'''


@functools.cache
def part(name):
    with open(os.path.join(PARTS, name)) as f:
        return f.read()


@functools.cache
def shared_definitions():
    """The source of SHARED_DEFINITIONS, each as written in its file."""
    parts = []
    for file, names in SHARED_DEFINITIONS.items():
        with open(os.path.join(SANDBOX, file)) as f:
            text = f.read()
        found = {}
        for node in ast.parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined = [node.name]
            else:
                defined = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
            for name in set(defined) & set(names):
                found[name] = ast.get_source_segment(text, node)
        parts += [found[name] for name in names]  # a KeyError here: a shared definition was renamed
    return "\n\n\n".join(parts)


def _spec_literal(spec):
    """The spec as the script's SPEC: its fields one per line, dicts one entry per line."""
    fields = {"inputs": spec["inputs"], "args": _args_in_parameter_order(spec), "grid": spec["grid"],
              "reference": spec["reference"],
              "options": {key: spec["options"][key] for key in
                          ("num_warps", "num_stages", "seed", "check", "bench", "atol", "rtol", "flops")}}
    return "{\n" + "".join(f"    {key!r}: {_literal(value, 4)},\n" for key, value in fields.items()) + "}"


def _literal(value, indent=0):
    """A dict one entry per line, anything else as its repr."""
    if not isinstance(value, dict) or not value:
        return repr(value)
    pad = " " * indent
    return "{\n" + "".join(f"{pad}    {key!r}: {item!r},\n" for key, item in value.items()) + pad + "}"


def _kernel_params(source, kernel):
    """The kernel's parameter names in order, read from the source without running it."""
    try:
        tree = parse_source(source)
    except SpecError:  # the run would say why; the script keeps the spec's order
        return []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            return parameter_names(node)
    return []


def _args_in_parameter_order(spec):
    """Arguments are evaluated in the kernel's parameter order, as the playground does."""
    params = [p for p in _kernel_params(spec["source"], spec["kernel"]) if p in spec["args"]]
    rest = [name for name in spec["args"] if name not in params]
    return {name: spec["args"][name] for name in params + rest}


# What the script's header imports already: the same line in the kernel's source is dropped.
HEADER_IMPORTS = {"import math", "import os", "import re", "import sys", "import torch", "import triton",
                  "import triton.language as tl"}


def _source_without_header_imports(source):
    """The kernel's source minus its top-level lines that repeat an import of the header."""
    return "\n".join(line for line in source.strip("\n").split("\n") if line.rstrip() not in HEADER_IMPORTS)


def export_script(spec, title=None):
    """A standalone script (str) that builds the inputs, launches, checks and times `spec`. A script
    spec's program is one already, and is its own export."""
    spec = normalize(spec)
    if is_script(spec):
        return spec["source"]
    if spec["options"]["device"] == "interpreter":
        choose = 'os.environ["TRITON_INTERPRET"] = "1"  # the run spec asks for the interpreter'
    else:
        choose = 'if not torch.cuda.is_available():\n    os.environ["TRITON_INTERPRET"] = "1"'
    script = part("header.py.in").format(title=(title or spec["kernel"]).replace('"""', "'''"), choose_interpreter=choose)
    if spec["options"]["puzzle"]:
        script += PUZZLE_NOTE.format(puzzle=spec["options"]["puzzle"])
    script += _source_without_header_imports(spec["source"]).strip("\n") + "\n\n"
    script += SPEC.format(kernel=repr(spec["kernel"]), spec=_spec_literal(spec)) + "\n\n"
    return script + part("shared.py.in") + shared_definitions() + "\n\n\n" + part("runner.py.in")
