"""Grading nobody can fake: a student who wants the badge without the kernel, against real workers.

Each attack is a submission for the constant-add puzzle (its starter kernel, which does nothing,
or a kernel that is wrong on purpose) with module code or kernel code that tries to pass anyway:
read the hidden check, patch the checker, forge the verdict, replace the launch or the kernel with
torch, loosen the tolerance, pick the seed, read or race the grader, detect the test size, print a
fake table. Each must end with `puzzle.ok` false and a status that is not `ok`, and none moves a
class's leaderboard. The kernel check of the grader (sandbox.grading.submission) is tested beside
them, without workers, on kernels that try to leave Triton.
"""
import json
import textwrap

import pytest

from app.course import puzzles
from sandbox.errors import RunError
from sandbox.worker.run_process import MESSAGE_FD

PUZZLE = puzzles.builtin("constant_add")
STARTER, SOLUTION = PUZZLE["starter"], PUZZLE["solution"]


@pytest.fixture(scope="module")
def spec(app):
    return app.test_client().get("/api/puzzles/constant_add").json["spec"]


def graded(client, spec, source, **options):
    response = client.post("/api/run", json={**spec, "source": source, "options": {**spec["options"], **options}})
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    return response.json


def assert_not_passed(result):
    assert result["status"] != "ok"
    if result["puzzle"] is None:  # the run itself ended in an error (a timeout): nothing was graded
        assert result["status"] == "error", result
        return
    assert result["puzzle"]["ok"] is False, json.dumps(result["puzzle"])[:2000]


def with_module_code(code, kernel=STARTER):
    return kernel + "\n" + textwrap.dedent(code)


def test_the_solution_passes_and_the_grader_times_it(client, spec):
    result = graded(client, spec, SOLUTION)
    assert result["status"] == "ok" and result["puzzle"]["ok"], result["puzzle"]
    timing = result["puzzle"]["timing"]
    assert timing["device"] in ("gpu", "interpreter") and timing["kernel_ms"]["median"] > 0
    assert timing["ranked"] == (timing["device"] == "gpu")  # the interpreter's clock ranks nothing


HELPED = '''import triton
import triton.language as tl

TEN = tl.constexpr(10.0)


@triton.jit
def _plus_ten(x):
    return x + TEN


@triton.autotune(configs=[triton.Config({}, num_warps=2), triton.Config({}, num_warps=4)], key=["n"])
@triton.jit
def add_ten(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, _plus_ten(tl.load(x_ptr + offsets, mask=mask)), mask=mask)
'''


def test_a_kernel_with_helpers_constexprs_and_autotune_configs_is_graded_whole(client, spec):
    """What the grader takes of a module: its @triton.jit helpers, its constexprs, its autotune configs."""
    result = graded(client, spec, HELPED)
    assert result["status"] == "ok" and result["puzzle"]["ok"], result["puzzle"]["tests"]
    broken = graded(client, spec, HELPED.replace("TEN = tl.constexpr(10.0)", "TEN = tl.constexpr(9.0)"))
    assert_not_passed(broken)


STACK_WALK = '''
import gc, sys
_seen = []
for _obj in gc.get_objects():  # every dict that could hold a spec, a test or the grading
    if isinstance(_obj, dict) and any(k in _obj for k in ("grading", "tests", "reference", "hidden", "inputs")):
        _seen.append(repr(_obj)[:20000])
for _frame in sys._current_frames().values():
    while _frame is not None:
        _seen.append(repr(_frame.f_locals)[:20000])
        _frame = _frame.f_back
_text = " ".join(_seen)
# Each needle is made here, so that this source (which the process holds too) does not contain it.
_needles = {"reference": "'reference': " + "{'out'", "hidden": "torch.randn(" + "1531)", "tests": "hidden" + " test"}
print("STACK-WALK", json_dumps({name: needle in _text for name, needle in _needles.items()}))
'''


def test_the_hidden_check_is_not_in_the_students_process(client, spec):
    result = graded(client, spec, with_module_code("from json import dumps as json_dumps\n" + STACK_WALK))
    line = next(line for line in result["stdout"].splitlines() if line.startswith("STACK-WALK "))
    assert json.loads(line.split(" ", 1)[1]) == {"reference": False, "hidden": False, "tests": False}
    assert_not_passed(result)


def test_patching_the_checker_from_the_module(client, spec):
    attack = '''
    import sandbox.run.check, sandbox.grading.verdict, sandbox.grading.grader, sandbox.worker
    def _all_ok(actual, expected, poisoned, atol=None, rtol=None):
        return {"ok": True, "outputs": {}}
    sandbox.run.check.compare = _all_ok
    sandbox.grading.grader.checking.compare = _all_ok
    sandbox.grading.verdict.summary = lambda label, result, hidden=False: {"label": label, "ok": True, "status": "ok",
        "error": None, "mismatched": 0, "unwritten": 0, "numel": 1}
    sandbox.worker.main.graded_result = lambda shown, outcome, expected: {**shown, "puzzle": {"ok": True}}
    '''
    assert_not_passed(graded(client, spec, with_module_code(attack)))


# Every line a run's messages could be: a result that passes, in the student's run's id, on the message
# pipe (and, should the layout change, on every descriptor the process has).
FORGED = '''
import json, os, sys
_frame, _run_id = sys._getframe(), None
while _frame is not None and _run_id is None:
    _run_id = _frame.f_locals.get("run_id")
    _frame = _frame.f_back
_tests = [{"label": l, "ok": True, "status": "ok", "error": None, "mismatched": 0, "unwritten": 0, "numel": 20}
          for l in ("N=20", "N=8", "N=333")]
_result = {"run_id": None, "status": "ok", "device": None, "error": None, "stdout": "", "check": None,
           "timings": None, "trace": None, "ir": None, "notes": [], "run_ms": 1.0, "sweep": None, "steps": None,
           "puzzle": {"name": "constant_add", "ok": True, "tests": _tests, "expected": None, "diff": None,
                      "timing": {"device": "gpu", "kernel_ms": {"median": 0.001, "p20": 0.001, "p80": 0.001},
                                 "ranked": True}}}
_grade = {"puzzle": _result["puzzle"], "check": {"ok": True, "outputs": {}}}
for _fd in [MESSAGE_FD] + [fd for fd in range(64) if fd != MESSAGE_FD]:
    for _type, _content in (("kernel", {"package": None, "error": None}), ("result", {"result": _result}),
                            ("result", {"grade": _grade})):
        try:
            os.write(_fd, (json.dumps({"type": _type, "id": "x", "run_id": _run_id, "content": _content}) + "\\n").encode())
        except OSError:
            pass
print("FORGED", _run_id is not None)
'''.replace("MESSAGE_FD", str(MESSAGE_FD))


def test_a_forged_result_on_the_message_pipe(client, spec):
    result = graded(client, spec, with_module_code(FORGED))
    assert result["run_ms"] != 1.0 or result["puzzle"]["timing"] is None
    assert_not_passed(result)


def test_the_output_computed_in_torch_with_the_launch_replaced(client, spec):
    attack = '''
    import sandbox.launch.launcher
    def _launch(kernel, grid, args, options):
        args["out_ptr"].copy_(args["x_ptr"] + 10.0)
    sandbox.launch.launcher.launch = _launch
    '''
    result = graded(client, spec, with_module_code(attack), trace=False)
    assert_not_passed(result)
    assert all(not test["ok"] for test in result["puzzle"]["tests"])


def test_zeros_with_a_loose_tolerance_and_a_chosen_seed(client, spec):
    zeros = STARTER + "    tl.store(out_ptr + offsets, tl.zeros([BLOCK], dtype=tl.float32), mask=offsets < n)\n"
    result = graded(client, spec, zeros, atol=1e30, rtol=1e30, seed=7)
    assert_not_passed(result)
    assert result["check"]["outputs"]["out"]["atol"] != 1e30  # the puzzle's tolerance, not the submission's


CHOSEN_SEED = 7


def knows_the_seed():
    """A kernel that passes only on the inputs the chosen seed makes: their first value is one it
    knows (for each size the puzzle has, and each seed its tests could take from the chosen one),
    written into the source as constexprs (the grader reads constants, it runs no module code)."""
    import torch

    def first_value(n, seed):  # drawn where a run draws its inputs: the GPU's generator differs from the CPU's
        torch.manual_seed(seed)
        return float(torch.randn(n, device="cuda" if torch.cuda.is_available() else "cpu")[0])
    known = [first_value(n, CHOSEN_SEED + i) for i, n in enumerate((20, 8, 333, 1, 1531, 20))]
    return SOLUTION.replace("    tl.store(out_ptr + offsets, x + 10.0, mask=mask)", """\
    first = tl.load(x_ptr)
    known = (first == K0) | (first == K1) | (first == K2) | (first == K3) | (first == K4) | (first == K5)
    tl.store(out_ptr + offsets, tl.where(known, x + 10.0, 0.0), mask=mask)""") + "\n" + "".join(
        f"K{i} = tl.constexpr({value!r})\n" for i, value in enumerate(known))


def test_a_kernel_that_passes_on_the_seed_it_chose(client, spec):
    """The inputs are the seed's: a kernel that knows the chosen seed's inputs passes them (an ungraded
    run with the reference and that seed), and is graded on inputs of a seed only the grader knows."""
    source = knows_the_seed()
    plain = {**spec, "source": source, "reference": {"out": "x + 10.0"},
             "options": {"seed": CHOSEN_SEED, "ir": False}}
    response = client.post("/api/run", json=plain)
    assert response.status_code == 200 and response.json["status"] == "ok", response.json["check"]
    result = graded(client, spec, source, seed=CHOSEN_SEED)
    assert_not_passed(result)
    assert not any(test["ok"] for test in result["puzzle"]["tests"] if test["label"] != "N=1")
    assert all(test["status"] != "error" for test in result["puzzle"]["tests"])  # graded, not refused


def test_a_kernel_name_bound_to_torch(client, spec):
    """The kernel's name is a Python object that computes the output with torch when launched."""
    attack = """
    class _Launcher:
        def __getitem__(self, grid):
            def launch(x, out, *args, **kwargs):
                out.copy_(x + 10.0)
            return launch
    add_ten = _Launcher()
    """
    assert_not_passed(graded(client, spec, with_module_code(attack)))


def test_no_attack_moves_the_leaderboard(app, client, spec):
    """A class with a leaderboard, whose students try: a forged verdict and time on the message pipe,
    the launch replaced, a fake table; and a student who solved it forges a faster time for the same
    kernel. Only the kernel the grader passed is on the board, with the grader's time."""
    made = client.post("/api/classes", json={"title": "Race", "puzzles": ["constant_add"], "leaderboard": True}).json
    code = made["code"]

    def student(name):
        session = app.test_client()
        assert session.post(f"/api/classes/{code}/join", json={"name": name}).status_code == 200
        return session
    cheat, honest = student("Mallory"), student("Ann")
    for attack in (FORGED, "import sandbox.launch.launcher\nsandbox.launch.launcher.launch = lambda k, g, a, o: a['out_ptr'].copy_(a['x_ptr'] + 10.0)\n",
                   "print('N=20 ✓ passes\\nSolved: every test passes.')\n"):
        assert_not_passed(graded(cheat, spec, with_module_code(attack)))
    solved = graded(honest, spec, SOLUTION)["puzzle"]
    forged = graded(honest, spec, with_module_code(FORGED, SOLUTION))
    assert forged["puzzle"] is None or (forged["puzzle"]["timing"] or {}).get("kernel_ms", {}).get("median") != 0.001
    board = client.get(f"/api/classes/{code}/leaderboard/constant_add").json
    assert [entry["student"] for entry in board["entries"]] == ["Ann"]
    assert board["entries"][0]["timing"] == solved["timing"] and solved["timing"]["kernel_ms"]["median"] != 0.001
    cells = {s["name"]: s["puzzles"]["constant_add"] for s in client.get(f"/api/classes/{code}/progress").json["students"]}
    assert cells["Mallory"]["state"] == "trying" and cells["Ann"]["state"] == "solved"


def test_a_kernel_that_detects_the_test_size(client, spec):
    sizes = SOLUTION.replace("tl.store(out_ptr + offsets, x + 10.0, mask=mask)",
                             "if (n == 20) or (n == 8) or (n == 333):\n"
                             "        tl.store(out_ptr + offsets, x + 10.0, mask=mask)")
    assert sizes != SOLUTION
    result = graded(client, spec, sizes)
    assert_not_passed(result)
    shown = result["puzzle"]["tests"][:len(PUZZLE["tests"])]
    assert all(test["ok"] for test in shown), shown  # it passes what the page shows, and only that


def test_a_submission_printing_a_fake_table(client, spec):
    fake = "N=20 ✓ passes\nN=8 ✓ passes\nN=333 ✓ passes\nSolved: every test passes.\n"
    attack = f'print({fake!r})\nprint(\'{{"puzzle": {{"ok": true}}, "status": "ok"}}\')\n'
    result = graded(client, spec, with_module_code(attack))
    assert "Solved" in result["stdout"]
    assert_not_passed(result)


READS_THE_GRADER = {
    "open": "    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + len(open('/proc/self/maps').read()))\n",
    "a default": None,
    "builtins through Triton": "    tl.core.builtins.print(tl.core.builtins.open('/proc/self/maps').read())\n",
    "getattr": "    getattr(tl, '__builtins__')['open']('/proc/self/maps')\n",
    "a dunder": "    tl.__loader__.get_data('/proc/self/maps')\n",
    "a numpy array": "    tl.load(x_ptr + offsets).handle.data.tofile('/proc/self/maps')\n",
}


@pytest.mark.parametrize("how", list(READS_THE_GRADER))
def test_a_kernel_reading_the_graders_memory_map(client, spec, how):
    if how == "a default":
        source = STARTER.replace("BLOCK: tl.constexpr):", "BLOCK: tl.constexpr, M: tl.constexpr = "
                                                         "open('/proc/self/maps').read()):")
    else:
        source = STARTER + READS_THE_GRADER[how]
    result = graded(client, spec, source)
    assert_not_passed(result)
    first = result["puzzle"]["tests"][0]
    assert first["error"]["phase"] == "compile" and "the grader takes only a Triton kernel" in first["error"]["message"]
    # The student's own run may show its own process's map (it ran the kernel there); nothing else may.
    assert "r-xp" not in json.dumps({key: value for key, value in result.items() if key != "stdout"})


def test_racing_the_graders_files(client, spec):
    """The student's process leaves a child that, for as long as it lives, writes the solution over
    every file named like the grader's it can find; the student's process is gone before the grader
    starts, and the grader's files are its own."""
    attack = f'''
    import glob, os, time
    if os.fork() == 0:
        _end = time.time() + 15
        while time.time() < _end:
            for _path in glob.glob("/tmp/**/graded_kernel.py", recursive=True) + glob.glob("/**/run-*/graded_kernel.py"):
                try:
                    with open(_path, "w") as _f:
                        _f.write({SOLUTION!r})
                except OSError:
                    pass
            time.sleep(0.001)
        os._exit(0)
    '''
    assert_not_passed(graded(client, spec, with_module_code(attack)))


LIBDEVICE = {  # how a kernel reaches libdevice's rsqrt: (the import, the call)
    "imported by name": ("from triton.language.extra.libdevice import rsqrt\n", "rsqrt"),
    "imported from CUDA's, renamed": ("from triton.language.extra.cuda.libdevice import rsqrt as root\n", "root"),
    "through the module": ("from triton.language.extra import libdevice\n", "libdevice.rsqrt"),
}


def with_libdevice(how, square=1.0):
    imports, call = LIBDEVICE[how]  # 10 * rsqrt(1) is 10: the solution, written with libdevice
    return imports + SOLUTION.replace("x + 10.0", f"x + 10.0 * {call}(tl.full([BLOCK], {square}, tl.float32))")


@pytest.mark.parametrize("how", list(LIBDEVICE))
def test_a_kernel_calling_libdevice_is_graded(client, spec, how):
    result = graded(client, spec, with_libdevice(how))
    assert result["status"] == "ok" and result["puzzle"]["ok"], result["puzzle"]["tests"]
    wrong = graded(client, spec, with_libdevice(how, square=4.0))  # adds 5: the grader ran libdevice's rsqrt
    assert_not_passed(wrong)
    assert [test["status"] for test in wrong["puzzle"]["tests"]] == ["mismatch"] * len(wrong["puzzle"]["tests"])


LOOK_ALIKES = {
    "a function named and placed as libdevice's": (
        "def rsqrt(x):\n"
        "    return x * 10.0\n"
        "rsqrt.__module__, rsqrt.__qualname__ = 'triton.language.extra.libdevice', 'rsqrt'\n"),
    "a function of another module": "from math import sqrt as rsqrt\n",
}


@pytest.mark.parametrize("what", list(LOOK_ALIKES))
def test_a_look_alike_of_libdevice_does_not_reach_the_grader(client, spec, what):
    """Only libdevice's own functions pass, by name: the grader binds its own, so a function of the
    student's under libdevice's name and module is a global the kernel may not read."""
    source = with_libdevice("imported by name").replace(LIBDEVICE["imported by name"][0], "") + LOOK_ALIKES[what]
    result = graded(client, spec, source)
    assert_not_passed(result)
    error = result["puzzle"]["tests"][0]["error"]
    assert error["phase"] == "compile" and "add_ten reads 'rsqrt'" in error["message"], error


# ---------------------------------------------------------------- the kernel check, without workers

def package(source, **changes):
    """The package the grader reads from a kept source (sandbox.grading.kept), with `changes`."""
    from sandbox.grading import kept
    return {**kept.package(source, "add_ten"), **changes}


REFUSED = {
    "an import": "    import os\n",
    "open": "    open('/etc/passwd')\n",
    "getattr": "    getattr(x_ptr, 'handle')\n",
    "a private attribute": "    x_ptr._semantic\n",
    "a module's module": "    tl.core.builtins.open('/x')\n",
    "a module's function from elsewhere": "    tl.core.warnings.warn('x')\n",
    "a value's attribute": "    pid.handle\n",
    "a lambda": "    f = lambda: 1\n",
    "a comprehension": "    f = [i for i in range(2)]\n",
    "a global of the module": "    os.system('true')\n",
    "an attribute set on Triton": "    tl.core.load = tl.core.store\n",
    "a Triton function that evaluates text": "    tl.str_to_ty('tensordesc<fp32[16],print(1)>', None)\n",
    "a decorator of Triton's": "    tl.core.builtin(x_ptr)\n",
}


@pytest.mark.parametrize("what", list(REFUSED))
def test_the_grader_refuses_what_is_not_a_kernel(what):
    from sandbox.grading import submission
    with pytest.raises(RunError, match="the grader takes only a Triton kernel") as raised:
        submission.check(package(STARTER + REFUSED[what]))
    assert raised.value.line == len(STARTER.splitlines()) + 1


def test_the_grader_takes_a_kernel_its_helpers_and_constexprs():
    from sandbox.grading import submission
    source = ("import triton\nimport triton.language as tl\nSHIFT = tl.constexpr(10.0)\n\n\n@triton.jit\n"
              "def _plus(x):\n    return x + SHIFT\n\n\n" + SOLUTION.split("\n\n\n", 1)[1].replace("x + 10.0", "_plus(x)"))
    functions, constexprs, modules, _, _ = submission.check(package(source, constexprs={"SHIFT": ["float", "10.0"]}))
    assert set(functions) == {"_plus", "add_ten"} and constexprs["SHIFT"].value == 10.0 and modules["tl"] == "triton.language"
    with pytest.raises(RunError, match="overlaps"):
        submission.bare_source({"a": {"source": "def a():\n    pass\n", "line": 3},
                                "b": {"source": "def b():\n    pass\n", "line": 4}})


@pytest.mark.parametrize("named", [["os", "system"], ["triton.language.extra.libdevice", "__builtins__"],
                                   ["triton.language", "load"], ["triton.language.extra.libdevice", "no_such"],
                                   "rsqrt", ["triton.language.extra.libdevice", "rsqrt", "x"]])
def test_the_grader_binds_only_libdevices_own_functions(named):
    from sandbox.grading import submission
    source = with_libdevice("imported by name")
    with pytest.raises(RunError, match="'rsqrt' is not a function of Triton's libdevice"):
        submission.check(package(source, libdevice={"rsqrt": named}))
    import triton.language.extra.libdevice as libdevice
    _, _, _, found, _ = submission.check(package(source, libdevice={"rsqrt": ["triton.language.extra.libdevice", "rsqrt"]}))
    assert found == {"rsqrt": libdevice.rsqrt}
