"""Edit → Run → see: what a person waits for, from pressing Run to the verdict and the diagram (the
first part) and to the whole result, this build beside another checkout's in one run.

    python -m benchmarks.edit_loop [--runs 10] [--other PATH] [--cases again,first,edit,...]

Starts this checkout's real server (`python -m app.serve`, default settings, a RUN_ROOT of its own)
and, with `--other`, the same for the checkout at PATH (an older build: `git archive <commit> | tar
-x -C PATH`), waits for their gallery warm-ups to finish, then runs each case on each server in
alternation, as one owner (one Socket.IO connection; a new student is a new one) with the page's own
options (the gallery's, as shipped: check, trace, bench and IR on) and `--think-s` between a result
and the next Run. The first part is the later of the `check` and `trace` parts (docs/events.md); a
server that sends no parts has its whole result as its first part. Prints median and p95 in ms.

Cases (`--cases`, default all; the matmul cases need a GPU, and are skipped in the interpreter). An
edit changes code the compiler sees (a constant of an operator: Triton compiles it anew), except the
comment case, which says so: a comment-only edit compiles nothing new.
  again     Run again, the vector add example unchanged
  first     a new student's first Run of each gallery example (`--examples`, default all)
  comment   add a comment line to the vector add kernel, Run at once (compiles nothing new)
  edit      change `x + y` to `x + y * c` (a new c each time), Run at once
  block     a BLOCK_SIZE the owner has not run (a new specialisation), Run at once: 9 runs at most
  ahead     the edit, the page's `compile` sent 0.4 s after the last keystroke, Run 1 s later: a
            server without the event says n/a
  matmul    a new person runs the gallery's matmul at 4096^3 in fp16 (128 x 128 x 64 tiles), edited
            (`acc += tl.dot(a, b) * c`), trace on
  autotune  a new person pastes a 16-config autotuned matmul (512^2), its first Run
  persistent  a new person pastes a persistent matmul (2048^3 fp16, 132 programs: benchmarks.big_kernels)
  attention   a new person pastes a fused attention forward (16 heads x 1024 x 64, fp16)
"""
import argparse
import contextlib
import copy
import itertools
import os
import statistics
import tempfile
import time

from benchmarks import big_kernels
from benchmarks.client import Tab
from benchmarks.first_run import examples, wait_warmed
from benchmarks.latency import percentile
from benchmarks.server import ROOT, Server

FIRST_PARTS = ("check", "trace")  # the verdict and the diagram
AUTOTUNED_MATMUL = '''import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": 32}, num_warps=w, num_stages=s)
           for m in (64, 128) for n in (64, 128) for w in (4, 8) for s in (2, 3)]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    # EDIT
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))
'''


def autotune_spec(n=512):
    return {"version": 1, "source": AUTOTUNED_MATMUL, "kernel": "matmul_kernel",
            "inputs": {"a": f"torch.randn({n}, {n}, dtype=torch.float16)", "b": f"torch.randn({n}, {n}, dtype=torch.float16)",
                       "c": f"torch.empty({n}, {n}, dtype=torch.float16)"},
            "args": {"a_ptr": "a", "b_ptr": "b", "c_ptr": "c", "M": n, "N": n, "K": n},
            "grid": "lambda meta: (triton.cdiv(M, meta['BLOCK_M']), triton.cdiv(N, meta['BLOCK_N']))",
            "reference": {"c": "a @ b"}, "options": {"atol": 0.1, "rtol": 0.05}}


EDITS = itertools.count(1)  # every edit's constant is new: nothing a server kept compiles it


def edited(spec, code, to):
    """`spec` with `code` in its source replaced by `to(c)`, c a constant no edit used before: one
    edit of a person's, which the compiler sees."""
    assert code in spec["source"], code
    spec = copy.deepcopy(spec)
    spec["source"] = spec["source"].replace(code, to(f"{1 + next(EDITS) * 1e-7:.7f}"), 1)
    return spec


def matmul_4096(gallery_matmul, n=4096):
    """The gallery's matmul at a GPU's size: fp16 n x n x n, 128 x 128 x 64 tiles, 8 warps, 3 stages."""
    spec = copy.deepcopy(gallery_matmul)
    spec["inputs"] = {name: f"torch.{init}({n}, {n}, dtype=torch.float16)"
                      for name, init in (("a", "randn"), ("b", "randn"), ("c", "empty"))}
    spec["args"].update({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64})
    spec["options"].update({"num_stages": 3, "num_warps": 8, "atol": 0.5, "rtol": 0.05})
    return spec


def commented(spec, kernel, mark):
    """`spec` with a comment line added after its kernel's signature: a new source, the same code."""
    spec = copy.deepcopy(spec)
    lines = spec["source"].split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"def {kernel}("))
    while not lines[at].rstrip().endswith(":"):  # a signature over several lines
        at += 1
    lines.insert(at + 1, f"    # edit {mark}")
    spec["source"] = "\n".join(lines)
    return spec


def add_edited(spec):
    return edited(spec, "x + y,", lambda c: f"x + y * {c},")


BLOCKS = (64, 128, 256, 512, 2048, 4096, 8192, 16384, 32)  # powers of two (tl.arange's), 1024 the example's


def new_block(spec, i):
    """The vector add with its i-th BLOCK_SIZE, one its owner has not run (None past the last)."""
    if i >= len(BLOCKS):
        return None
    spec = copy.deepcopy(spec)
    spec["args"]["BLOCK_SIZE"] = BLOCKS[i]
    return spec


class Build:
    """One checkout's server, and its owner's tab (a new student gets a tab of their own)."""

    def __init__(self, name, root, log_dir):
        self.name = name
        self.server = Server(open(os.path.join(log_dir, f"server-{name}.log"), "ab"), root=root,
                             RUN_ROOT=tempfile.mkdtemp(prefix=f"edit-loop-{name}-"))
        self.tab = None

    def start(self):
        self.server.start()
        self.tab = Tab(self.server.url)
        return self

    def stop(self):
        with contextlib.suppress(Exception):
            self.tab.close()
        self.server.stop()


@contextlib.contextmanager
def side_by_side(other, log_dir, prefix):
    """This checkout's server and, with `other` (a path), that checkout's, started and warmed up: yields
    ({name: root}, [Build], the log dir); stops them at the end."""
    logs = log_dir or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(logs, exist_ok=True)
    roots = {"this": ROOT, **({"other": os.path.abspath(other)} if other else {})}
    builds = [Build(name, root, logs) for name, root in roots.items()]
    try:
        for build in builds:
            build.start()
        for build in builds:
            wait_warmed(build.server)
        yield roots, builds, logs
    finally:
        for build in builds:
            build.stop()


def sample(tab, spec):
    """(first part ms, whole result ms, status, {phase: ms spent in it}) of one run on `tab`."""
    whole, result = tab.run(spec)
    first = [tab.parts[part] for part in FIRST_PARTS if part in tab.parts]
    return (max(first) if first else whole), whole, result["status"], phase_times(tab.phases, whole)


def phase_times(phases, whole):
    """{phase: ms from its first run_status to the next phase's (the last one's to the result)}."""
    starts = sorted((ms, phase) for phase, ms in phases.items())
    ends = [ms for ms, _ in starts[1:]] + [whole]
    return {phase: end - ms for (ms, phase), end in zip(starts, ends)}


def run_case(case, build, i, specs):
    """One sample of `case` on `build` (its i-th), or None where the case does not apply."""
    vector_add = specs["vector_add"]
    if case == "again":
        return sample(build.tab, vector_add)
    if case == "first":
        names = build.first_examples
        tab = Tab(build.server.url)  # a new connection: a new owner, nothing of theirs compiled
        try:
            return sample(tab, specs[names[i % len(names)]])
        finally:
            tab.close()
    if case == "comment":
        return sample(build.tab, commented(vector_add, "add_kernel", f"{build.name} {i} {time.time()}"))
    if case == "edit":
        return sample(build.tab, add_edited(vector_add))
    if case == "block":
        spec = new_block(vector_add, i)
        return spec and sample(build.tab, spec)
    if case == "ahead":
        spec = add_edited(vector_add)
        time.sleep(0.4)  # the page sends `compile` once the person pauses
        if not build.tab.compile(spec):
            return None
        time.sleep(1.0)  # the person reads the editor's marks, then presses Run
        return sample(build.tab, spec)
    pasted = {"matmul": lambda: edited(matmul_4096(specs["matmul"]), "acc += tl.dot(a, b)",
                                       lambda c: f"acc += tl.dot(a, b) * {c}"),
              "autotune": lambda: edited(autotune_spec(), "acc += tl.dot(a, b)", lambda c: f"acc += tl.dot(a, b) * {c}"),
              "persistent": lambda: edited(big_kernels.persistent_matmul_spec(), "acc.to(tl.float16)",
                                           lambda c: f"(acc * {c}).to(tl.float16)"),
              "attention": lambda: edited(big_kernels.attention_spec(), "out = acc / total[:, None]",
                                          lambda c: f"out = acc / total[:, None] * {c}")}
    if case in pasted:  # a new person: a connection of their own, nothing of theirs compiled
        spec = pasted[case]()
        spec["options"]["trace"] = True
        tab = Tab(build.server.url)
        try:
            return sample(tab, spec)
        finally:
            tab.close()
    raise ValueError(f"unknown case {case!r}")


GPU_ONLY = ("matmul", "autotune", "persistent", "attention")
TITLES = {"again": "Run again, vector add unchanged (warm owner)", "first": "a new student's first Run",
          "comment": "a comment added, Run at once (compiles nothing new)",
          "edit": "`x + y` → `x + y * c`, Run at once", "block": "a new BLOCK_SIZE, Run at once",
          "ahead": "the edit, compiled ahead, Run 1 s later",
          "matmul": "a new person's 4096^3 fp16 matmul, edited, trace on",
          "autotune": "paste a 16-config autotuned matmul (512^2)", "persistent": "paste a persistent matmul (2048^3)",
          "attention": "paste a fused attention forward (16 x 1024 x 64)"}


def cell(rows):
    if not rows:
        return "n/a"
    first, whole = [r[0] for r in rows], [r[1] for r in rows]
    bad = sorted({r[2] for r in rows} - {"ok", "mismatch"})
    flag = f" {bad}" if bad else ""
    return (f"{statistics.median(first):.0f} / {percentile(first, 0.95):.0f} | "
            f"{statistics.median(whole):.0f} / {percentile(whole, 0.95):.0f}{flag}")


def ratio(rows, other):
    """This build's median whole result over the other's."""
    if not rows or not other:
        return "n/a"
    return f"{statistics.median(r[1] for r in rows) / statistics.median(r[1] for r in other):.2f}×"


def where(rows):
    """Median ms per phase (run_status), the phases that took 20 ms or more."""
    phases = {phase for r in rows for phase in r[3]}
    spent = {phase: statistics.median(r[3].get(phase, 0.0) for r in rows) for phase in phases}
    return ", ".join(f"{phase} {ms:.0f}" for phase, ms in sorted(spent.items(), key=lambda kv: -kv[1]) if ms >= 20)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="samples per case and build (at least 10 for a p95)")
    parser.add_argument("--other", default=None, help="another checkout, run side by side")
    parser.add_argument("--cases", default=",".join(TITLES), help="comma-separated, of: " + ", ".join(TITLES))
    parser.add_argument("--examples", default=None, help="the first-run case's gallery examples (default: all)")
    parser.add_argument("--think-s", type=float, default=1.0)
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args()
    say = lambda text: print(text, flush=True)  # noqa: E731
    with side_by_side(args.other, args.log_dir, "edit-loop-") as (roots, builds, logs):
        device = builds[0].server.health()["device"]
        specs = examples(builds[0].server.url)
        interpreted = device["kind"] == "interpreter"
        cases = [c for c in args.cases.split(",") if c]
        for build in builds:
            build.first_examples = args.examples.split(",") if args.examples else list(specs)
            for _ in range(2):  # the owner's first runs: what "again" and "edit" find compiled
                build.tab.run(specs["vector_add"])
        say(f"Edit → Run → see on {device['name']} (triton {device['triton']}, torch {device['torch']}), "
            f"{args.runs} runs per case and build, {args.think_s:g} s think, page-default options; logs in {logs}")
        say("ms, median / p95: first part (verdict + diagram) | whole result; the ratio of whole results' medians; "
            "where this build's time goes (median ms per run_status phase)")
        say("| case | " + " | ".join(f"{b.name} ({roots[b.name]})" for b in builds)
            + (" | this ÷ other" if len(builds) > 1 else "") + " | where the time goes |")
        say("|---|" + "---|" * (len(builds) + (len(builds) > 1) + 1))
        for case in cases:
            if case in GPU_ONLY and interpreted:
                say(f"| {TITLES[case]} | " + " | ".join("skipped: needs a GPU" for _ in builds)
                    + " | n/a" * (len(builds) > 1) + " | |")
                continue
            rows = {b.name: [] for b in builds}
            for i, build in itertools.product(range(args.runs), builds):  # alternating: the same conditions
                found = run_case(case, build, i, specs)
                if found is not None:
                    rows[build.name].append(found)
                time.sleep(args.think_s)
            this = rows[builds[0].name]
            compared = f" | {ratio(this, rows[builds[1].name])}" if len(builds) > 1 else ""
            say(f"| {TITLES[case]} | " + " | ".join(cell(rows[b.name]) for b in builds) + f"{compared} | {where(this)} |")


if __name__ == "__main__":
    main()
