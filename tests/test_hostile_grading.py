"""The kernel graded is the source kept: a student whose kept source fails a puzzle cannot pass it with
another kernel, whatever their own run process hands over or rewrites, and a source the grader
cannot read as written is refused with the line to change (sandbox.grading.kept).

The attacks run against real workers on the constant-add puzzle: the kept source is the starter
(whose kernel stores nothing) plus module code that makes the student's own process show, export
or rewrite the solution. Each must be graded as the kept text says: every test a mismatch.
"""
import json
import textwrap

import pytest

from app.course import puzzles
from sandbox.errors import RunError
from sandbox.grading import kept, submission
from sandbox.worker.run_process import MESSAGE_FD
from tests.test_grading import assert_not_passed, graded, spec  # noqa: F401  (spec: the puzzle's page spec)

PUZZLE = puzzles.builtin("constant_add")
STARTER, SOLUTION = PUZZLE["starter"], PUZZLE["solution"]
GAP = "    # Your code: load x at `offsets`, add 10, store the result in out.\n"
BODY = SOLUTION[SOLUTION.index("    mask = "):]  # the lines the starter lacks
DEF_LINE = SOLUTION.splitlines().index("def add_ten(x_ptr, out_ptr, n, BLOCK: tl.constexpr):") + 1
SOLVED_DEF = "\n".join(SOLUTION.splitlines()[DEF_LINE - 1:]) + "\n"
assert GAP in STARTER and STARTER.replace(GAP, BODY) == SOLUTION

RUN_ID = '''
import json, os, sys
_frame, _run_id = sys._getframe(), None
while _frame is not None and _run_id is None:
    _run_id = _frame.f_locals.get("run_id")
    _frame = _frame.f_back
'''

SWAPS = {
    # The solution's functions sent as the run's kernel, before the run process sends the kept one.
    "a package of the solution on the message pipe": RUN_ID + f'''
_package = {{"kernel": "add_ten", "functions": {{"add_ten": {{"source": {SOLVED_DEF!r}, "line": {DEF_LINE}}}}},
            "constexprs": {{}}, "modules": {{"tl": "triton.language", "triton": "triton"}}, "libdevice": {{}},
            "autotune": None}}
os.write({MESSAGE_FD}, (json.dumps({{"type": "kernel", "id": "x", "run_id": _run_id,
                                     "content": {{"package": _package, "error": None}}}}) + "\\n").encode())
''',
    # The module writes the solution over its own file as it runs: whatever reads the kernel's text
    # from the module's file afterwards reads the solution.
    "its own file rewritten at import": f'''
with open(__file__) as _f:
    _text = _f.read()
with open(__file__, "w") as _f:
    _f.write(_text.replace({GAP!r}, {BODY!r}, 1))
''',
    # The module's `add_ten` replaced by the solution, made by exec from text held in a string at
    # lines of the module's own file (so its code says it comes from there).
    "the kernel replaced through exec and globals()": f'''
_SOLVED = """
@triton.jit
{SOLVED_DEF}"""
_lines = __import__("inspect").currentframe().f_lineno
_namespace = {{"triton": triton, "tl": tl}}
exec(compile("\\n" * (_lines - {SOLVED_DEF.count(chr(10)) + 4}) + _SOLVED, __file__, "exec"), _namespace)
globals()["add_ten"] = _namespace["add_ten"]
''',
}


@pytest.mark.parametrize("how", list(SWAPS))
def test_the_kernel_graded_is_the_kept_source(client, spec, how):  # noqa: F811
    result = graded(client, spec, STARTER + "\n" + textwrap.dedent(SWAPS[how]))
    assert_not_passed(result)
    assert [t["status"] for t in result["puzzle"]["tests"]] == ["mismatch"] * len(result["puzzle"]["tests"]), \
        json.dumps(result["puzzle"]["tests"])[:2000]


def test_a_statement_hidden_in_a_comment_is_not_graded(client, spec):  # noqa: F811
    """U+2028 inside a comment: Python reads the rest of the line as the comment (and so does a
    teacher's editor), str.splitlines as a new line of code. The kernel graded is the one Python reads."""
    hidden = "    # stores nothing yet\u2028    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 10.0, mask=offsets < n)\n"
    result = graded(client, spec, STARTER + hidden)
    assert_not_passed(result)
    assert {t["status"] for t in result["puzzle"]["tests"]} == {"mismatch"}, json.dumps(result["puzzle"]["tests"])[:2000]


READABLE = '''import triton
import triton.language as tl
from triton import jit

SHIFT = tl.constexpr(2 * 5.0)
CONFIGS = [triton.Config({}, num_warps=2), triton.Config({}, num_warps=4)]


@jit
def _plus(x):
    return x + SHIFT


@triton.autotune(configs=CONFIGS, key=["n"])
@jit
def add_ten(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, _plus(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


print("the module runs on the page as it likes")
for _ in range(2):
    pass
'''


def test_a_kernel_the_grader_reads_as_written_passes(client, spec):  # noqa: F811
    result = graded(client, spec, READABLE)
    assert result["status"] == "ok" and result["puzzle"]["ok"], result["puzzle"]["tests"]


# ---------------------------------------------------------------- reading the kept source, without workers

WRONG = SOLUTION.replace("x + 10.0", "x + 9.0")
PREFIX = "import triton\nimport triton.language as tl\n"
KERNEL = SOLUTION[SOLUTION.index("@triton.jit"):]

REFUSED = {  # source: (what the refusal says, the line it names)
    "two definitions of the kernel": (SOLUTION + "\n\n" + KERNEL.replace("x + 10.0", "x + 9.0"),
                                      r"'add_ten' is bound more than once \(lines 6, 15\): keep one definition", 6),
    "the kernel rebound after its def": (SOLUTION + "add_ten = None\n", r"'add_ten' is bound more than once", 6),
    "a kernel made by exec": (PREFIX + f"exec({KERNEL!r})\n", r"no @triton.jit function named 'add_ten' at the top level", None),
    "a kernel in an `if`": (PREFIX + "if True:\n" + textwrap.indent(KERNEL, "    "), r"'add_ten' is bound at line 5 by code", 5),
    "a decorator factory": (PREFIX + "def my_jit(f):\n    return triton.jit(f)\n\n\n" + KERNEL.replace("@triton.jit", "@my_jit"),
                            r"'add_ten' \(line 8\) is not decorated with Triton's @triton.jit as written", 8),
    "jit renamed by assignment": (PREFIX + "jit = triton.jit\n" + KERNEL.replace("@triton.jit", "@jit"),
                                  r"'add_ten' \(line 5\) is not decorated", 5),
    "triton rebound": (SOLUTION + "triton = None\n", r"'triton' is bound more than once", 6),
    "a constexpr computed at import": (PREFIX + "import os\nSHIFT = tl.constexpr(float(len(os.sep)) * 10)\n"
                                       + KERNEL.replace("x + 10.0", "x + SHIFT"),
                                       r"add_ten reads 'SHIFT': the constexpr 'SHIFT' \(line 4\) is computed by code", 11),
    "a constexpr too large to compute": (PREFIX + "SHIFT = tl.constexpr(2 ** 10 ** 9)\n" + KERNEL.replace("x + 10.0", "x + SHIFT"),
                                         r"the constexpr 'SHIFT' \(line 3\) is computed by code", 10),
    "a constexpr bound twice": (PREFIX + "SHIFT = tl.constexpr(10.0)\nSHIFT = tl.constexpr(9.0)\n"
                                + KERNEL.replace("x + 10.0", "x + SHIFT"), r"'SHIFT' is bound more than once \(lines 3, 4\)", 11),
    "a constexpr rebound through `global`": (PREFIX + "SHIFT = tl.constexpr(10.0)\n\n\ndef f():\n    global SHIFT\n    SHIFT = 9\n\n\n"
                                             + KERNEL.replace("x + 10.0", "x + SHIFT"), r"'SHIFT' is bound more than once", 17),
    "a constexpr unpacked": (PREFIX + "SHIFT, _ = tl.constexpr(10.0), 0\n" + KERNEL.replace("x + 10.0", "x + SHIFT"),
                             r"'SHIFT' is bound at line 3 by code the grader does not run", 10),
    "a plain value of the module": (PREFIX + "SHIFT = 10.0\n" + KERNEL.replace("x + 10.0", "x + SHIFT"),
                                    r"'SHIFT' \(line 3\) is not a constexpr: .* SHIFT = tl.constexpr\(", 10),
    "a helper rebound by `case`": (PREFIX + "@triton.jit\ndef _plus(x):\n    return x + 10.0\n\n\nmatch 1:\n    case _plus:\n"
                                   "        pass\n" + KERNEL.replace("x + 10.0", "_plus(x)"),
                                   r"'_plus' is bound more than once \(lines 4, 9\)", 17),
    "a helper rebound by `except ... as`": (PREFIX + "@triton.jit\ndef _plus(x):\n    return x + 10.0\n\n\ntry:\n    pass\n"
                                            "except Exception as _plus:\n    pass\n" + KERNEL.replace("x + 10.0", "_plus(x)"),
                                            r"'_plus' is bound more than once \(lines 4, 10\)", 18),
    "a star import": ("from triton.language import *\n" + SOLUTION, r"import \*`: the grader cannot tell what it binds", 1),
    "a builtin imported by name": ("from triton.language import load\n" + SOLUTION.replace("tl.load(", "load("),
                                   r"'load' is imported from Triton by name", 11),
    "@triton.heuristics": (PREFIX + "@triton.heuristics({'B': lambda args: 1})\n" + KERNEL, r"uses @triton.heuristics", 5),
    "a star import in a block": ("try:\n    from triton.language import *\nexcept ImportError:\n    pass\n" + SOLUTION,
                                 r"import \*`: the grader cannot tell what it binds", 2),
    "a complex constexpr": (PREFIX + "SHIFT = tl.constexpr((-100) ** 0.5)\n" + KERNEL.replace("x + 10.0", "x + SHIFT"),
                            r"the constexpr 'SHIFT' \(line 3\) is computed by code", 10),
    "configs made by a comprehension": (PREFIX + "@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (2, 4)], "
                                        "key=['n'])\n" + KERNEL, r"not a list of triton.Config\(...\) written out", 3),
    "autotune's reset_to_zero": (PREFIX + "@triton.autotune(configs=[triton.Config({}, num_warps=2)], key=['n'], "
                                 "reset_to_zero=['out_ptr'])\n" + KERNEL, r"reset_to_zero=...\): the grader takes only configs, key", 3),
    "a config's pre_hook": (PREFIX + "@triton.autotune(configs=[triton.Config({}, pre_hook=print)], key=['n'])\n" + KERNEL,
                            r"triton.Config\(pre_hook=...\)", 3),
    "a config's value computed": (PREFIX + "import os\n@triton.autotune(configs=[triton.Config({'B': len(os.sep)})], key=['n'])\n"
                                  + KERNEL, r"a value in triton.Config that is not a constant written out", 4),
    "a source nested past the parser": ("x = " + "(" * 300 + ")" * 300 + "\n" + SOLUTION, r"does not parse", 1),
    "a source nested past recursion": (f"x = tl.constexpr({'-' * 100_000}1)\n" + SOLUTION, r"nested too deeply", None),
}


@pytest.mark.parametrize("what", list(REFUSED))
def test_what_the_grader_cannot_read_as_written_is_refused(what):
    source, message, line = REFUSED[what]
    with pytest.raises(RunError, match="the grader takes only a Triton kernel") as raised:
        submission.check(kept.package(source, "add_ten"))
    assert raised.value.phase == "compile"
    assert __import__("re").search(message, raised.value.message), raised.value.message
    assert raised.value.line == line


def test_what_the_module_does_when_it_runs_changes_nothing_graded():
    """Module code that would rewrite the kernel if it ran: the grader reads the `def` as written."""
    for code in ("add_ten.fn = None\n", "add_ten.src = add_ten.src.replace('9.0', '10.0')\n",
                 "globals()['add_ten'] = None\n", "setattr(__import__('sys').modules[__name__], 'add_ten', None)\n"):
        functions = kept.package(WRONG + code, "add_ten")["functions"]
        assert functions == {"add_ten": {"source": SOLVED_DEF.replace("x + 10.0", "x + 9.0"), "line": DEF_LINE}}


def test_the_forms_the_grader_reads():
    package = kept.package(READABLE + "D = tl.constexpr(tl.float16)\nN = tl.constexpr(-(1 << 4) + 2 ** 3)\n"
                           "S = tl.constexpr('x')\nB = tl.constexpr(not True)\nimport triton\n", "add_ten")
    assert package["constexprs"] == {"SHIFT": ["float", "10.0"], "D": ["dtype", "fp16"], "N": ["int", "-8"],
                                     "S": ["str", "x"], "B": ["bool", "False"]}
    assert package["autotune"] == {"key": ["n"], "configs": [{"kwargs": {}, "num_warps": 2, "num_stages": 3},
                                                             {"kwargs": {}, "num_warps": 4, "num_stages": 3}]}
    assert set(package["functions"]) == {"_plus", "add_ten"} and package["modules"] == {"triton": "triton", "tl": "triton.language"}
    functions, constexprs, _, _, _ = submission.check(package)
    assert constexprs["SHIFT"].value == 10.0
    assert kept.package(SOLUTION.replace("\n", "\r\n"), "add_ten")["functions"]["add_ten"]["source"] == SOLVED_DEF
