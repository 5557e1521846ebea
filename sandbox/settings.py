"""Every setting of the server and its workers, as data: name, default, meaning, and whether the
workers need it. Read from the environment. The one definition: the web process (app.config), the
dispatcher, a Celery worker and the sandbox's workers and run processes all read it here.

A setting marked `worker` reaches a worker through its environment (app.dispatch.slot.worker_env puts
the server's values there; a `make worker` host reads its own environment): the sandbox reads it
with `value(name)`, whose default is the one below. docs/configuration.md's table is generated from
SETTINGS (`make docs`), and a test fails when it differs.
"""
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    name: str
    default: object
    help: str
    worker: bool = False  # the workers need it: the dispatcher passes it in their environment

    def read(self, environ=os.environ):
        raw = environ.get(self.name)
        if raw is None or raw == "":
            return self.default
        return type(self.default)(raw) if self.default is not None else raw


SETTINGS = [
    Setting("HOST", "127.0.0.1", "Address the server listens on (`make run`)."),
    Setting("PORT", 8000, "Port the server listens on (`make run`)."),
    Setting("CONNECTIONS", 4096, "Connections the one web process holds at once (gunicorn's gevent worker: each is a greenlet, not a thread); a long-polling Socket.IO client may hold two."),
    Setting("WORKERS", 0, "Worker processes; each runs one job at a time in a fresh forked run process. 0: one per GPU of the host (2 on a host without one); on a GPU host each worker is pinned to one GPU, round-robin, and its runs see only that GPU."),
    Setting("RUN_TIMEOUT_S", 30.0, "Wall-clock limit of one run, in seconds; the run's process is then killed.", worker=True),
    Setting("QUEUE_LIMIT", 64, "Runs waiting for a worker beyond which new runs are refused."),
    Setting("QUEUE_PER_OWNER", 4, "Runs one owner (a browser session, an API client's cookie) may have waiting; one more is refused (HTTP 429), so one tab cannot fill the queue for everyone. The server's own work (puzzle solutions) is one owner too."),
    Setting("QUEUE_PER_ADDRESS", 16, "Runs one client address (an IPv6 address by its /64) may have waiting, whatever its cookies and connections; one more is refused (HTTP 429). A classroom behind one NAT address shares it: raise it there. Behind a proxy set `TRUSTED_PROXY_HOPS`, or every client is the proxy's address."),
    Setting("METRICS_ALLOW", "127.0.0.1,::1", "Who may read `GET /metrics` (the operator's view, Prometheus' text format): a comma-separated list of addresses and networks (`127.0.0.1,::1,10.0.0.0/8`); anyone else is answered 403. Loopback only by default. Behind a proxy set `TRUSTED_PROXY_HOPS`, or every client is the proxy's address."),
    Setting("CONNECTIONS_PER_ADDRESS", 256, "Socket.IO connections one client address may hold at once (each tab holds one); one more is refused at its handshake."),
    Setting("TRUSTED_PROXY_HOPS", 0, "Proxies in front of the server whose `X-Forwarded-For` (and `X-Forwarded-Proto`, `-Host`) it trusts: 0 for none (the TCP peer is the client); 1 behind one proxy (nginx, a load balancer), which must set those headers. Decides the client address of the per-address limits and whether a request came over https (the session cookie's `Secure`)."),
    Setting("QUEUE_WAIT_S", 120.0, "Longest a run may wait in the queue; a run that waited longer is dropped when its turn comes, with an error saying so. 120 s is four runs of the default timeout: a person has given up or pressed Run again by then, and running the old run would only delay the runs behind it."),
    Setting("SCRIPT_STEPS_S", 20.0, "Script mode: what the page's own steps after a program has ended, or after a selected launch replayed alone (timing, the timeline and compiling the launch it shows), may take, apart from `RUN_TIMEOUT_S`, which bounds the program itself; a step still running then is stopped and the program's result delivered whole, saying which step was cut short. The server's check of the shown launch has 10 s more of its own.", worker=True),
    Setting("SCRIPT_KEPT_INPUTS_MB", 64, "Script mode: megabytes of launch inputs one run of a person's own program keeps (the tensors each listed launch received, as it received them), so that selecting another of its launches replays that launch alone, the program not run again. A launch past them, or a program not the person's own, re-runs the whole program, and the page says so before the click. Kept on the worker host's disk for the owner's latest script run only, beside the owner's compiled kernels and dropped with them.", worker=True),
    Setting("OUTPUT_LIMIT_BYTES", 1 << 20, "What a run may print before it is stopped.", worker=True),
    Setting("RUN_MEMORY_MB", 8192, "Memory of one run, all its processes together (a cgroup; where none applies, address space per process on a CPU). At start, lowered where every run at once (each worker's run and its 2 compiles or checks ahead) would not fit in 75% of the host's memory; `/healthz` says so (`run_memory`).", worker=True),
    Setting("TRACE_MAX_PROGRAMS", 4096, "Programs traced in full; beyond, a stated sample.", worker=True),
    Setting("TRACE_MAX_BYTES", 2_000_000, "Bound on the trace part of a result.", worker=True),
    Setting("TRACE_BUDGET_S", 10.0, "GPU runs the GPU tracer cannot instrument: time for the trace and bounds check in the interpreter on CPU copies; a bigger launch runs untraced, with a note.", worker=True),
    Setting("TRACE_ON_CPU_FIRST", 256, "On a GPU, a launch of at most this many programs is traced and bounds-checked first by Triton's interpreter on CPU copies, the real launch's compile beside it: a small launch is traced there in ~0.1 s, sooner than the GPU tracer's instrumented build compiles (~0.5 s after each edit). One the interpreter cannot run, or not within 0.25 s, goes to the GPU tracer; one compiled ahead too (its instrumented build is ready). 0: the GPU tracer always.", worker=True),
    Setting("GPU_TRACER", 1, "1: on a GPU the trace and bounds check come from an instrumented launch of the kernel on the GPU itself; 0: from Triton's interpreter on CPU copies (slower by far; for comparison).", worker=True),
    Setting("SANDBOX", "auto", "Isolation of runs: `auto` (the jail of the security model: PID, network, IPC and mount namespaces, a minimal read-only root, its own uid, seccomp, a cgroup: each step where the host allows it) or `none` (rlimits only).", worker=True),
    Setting("DATABASE", None, "SQLite file for shared snippets, teachers' puzzles, the outcomes of puzzle solutions, and classes (rosters, submissions, verdicts); default: `instance/playground.sqlite`. Not read where `DATABASE_URL` is set."),
    Setting("DATABASE_URL", None, "PostgreSQL instead of the SQLite file (`postgresql://user:password@db-host:5432/playground`): one database for every web process, on any host (with `REDIS_URL` and web processes on several hosts, set it). Its schema is made and migrated when a web process starts. Needs `requirements-scale.txt` (`make run` installs it when `DATABASE_URL` is set)."),
    Setting("REQUEST_MAX_VALUES", 20_000, "Most values (numbers, strings, lists, objects) in one request's JSON body or Socket.IO event (a run spec holds a few hundred); one with more is refused (HTTP 400, field `size`) before anything walks it, so what the web process does with a request is bounded by its size, whatever its shape.", worker=True),
    Setting("MAX_SNIPPET_BYTES", 256 * 1024, "Largest snippet (run spec and UI state) that can be shared; a kernel's source is at most 128 KB in any spec."),
    Setting("DATABASE_MAX_MB", 1024, "Size the database may grow to (its file and write-ahead log); a write past it is refused (HTTP 507) with a message saying the server's storage is full. Saving what is stored already (the same content, the same id) costs nothing."),
    Setting("WRITES_PER_MINUTE", 30, "New snippets and puzzles one client address may store per minute (a burst of as many, then one every 60/N s); one more is refused (HTTP 429, with `Retry-After`). Saving content that is stored already does not count."),
    Setting("JOINS_PER_MINUTE", 60, "Joins of classes one client address may make per minute (a burst of as many, then one every 60/N s: a classroom behind one address joins at once); one more is refused (HTTP 429, with `Retry-After`)."),
    Setting("CLASS_SEATS_PER_ADDRESS", 60, "Students of one class that joined from one client address and are still in it; one more join from there is refused (HTTP 429), so no client fills a roster. A lecture behind one NAT address: raise it."),
    Setting("CLASS_LOOKUPS_PER_MINUTE", 20, "Look-ups of class codes that name no class, per client address and minute; past them every look-up of a code from there is refused (HTTP 429, with `Retry-After`) until the bucket refills, so codes cannot be guessed."),
    Setting("STUDENT_SUBMISSIONS_MB", 2, "Bytes of graded runs kept per student (and `CLASS_SUBMISSIONS_MB` per class): past them the oldest superseded ones are pruned (each student's latest, first solving and fastest kernel of each puzzle are kept), and a run that still does not fit is not kept, its result saying so."),
    Setting("CLASS_SUBMISSIONS_MB", 64, "Bytes of graded runs kept per class: see `STUDENT_SUBMISSIONS_MB`."),
    Setting("PUZZLE_WARMUP", 1, "1: when the server starts, each built-in puzzle's solution whose outcome the database does not hold yet runs once, one at a time while the queue is empty; 0: on the first graded run of the puzzle instead. A teacher's puzzle's solution runs when it is saved. Each outcome, failure included, is kept in the database."),
    Setting("MESSAGE_MAX_BYTES", 16 * 1024 * 1024, "Largest message line a web process reads from a worker, and a worker from a run (a result with its trace and IR); a longer one is not parsed and the run fails.", worker=True),
    Setting("MESSAGE_MAX_DEPTH", 64, "Deepest nesting of a message line from a worker or a run (a result nests 10 deep); a deeper one is not parsed.", worker=True),
    Setting("MESSAGE_MAX_ELEMENTS", 2_000_000, "Most values (numbers, strings, lists, objects) in one message line from a worker or a run (a trace of `TRACE_MAX_BYTES` holds about 600,000); a line with more is not parsed, so no line makes the web process build more objects than a real result needs.", worker=True),
    Setting("SHARED_KERNELS", 1, "1: each worker host compiles the gallery's examples (as shipped, with their own options) when it starts, off the runs' path, into a cache every run reads and none can write, so a new browser's first run of an example compiles nothing; 0: off (each owner compiles its own). On a host without a GPU only the IR tab's compile is shared: the interpreter compiles no kernel.", worker=True),
    Setting("RUN_ROOT", None, "Directory of the runs' scratch dirs and the owners' kernel caches, hidden from runs and never inside a run's root; default: `playground-runs` under the temp dir.", worker=True),
    Setting("SECRET_KEY", None, "Key that signs the session cookie, which names a run's owner. Unset: a random key made on the first start and kept in the instance folder (`instance/secret_key`, mode 0600), shared by the web processes of one host; **set it (the same everywhere) when web processes run on several hosts**. `dev` is refused outside tests."),
    Setting("FRAME_ANCESTORS", "*", "Who may put the embed (`?embed=1`) of the pages meant to be embedded (the editor `/`, `/new`, a gallery example `/examples/<name>`, a shared link `/s/<id>`) in a frame: the CSP `frame-ancestors` sources, e.g. `'self' https://course.example.edu`; `*` is any site. Every other page (a class's, a teacher's, a puzzle's, a fork, `?embed=1` or not) may be framed only by the playground itself."),
    Setting("TRITON_VERSIONS", None, "Triton releases the server runs beside its default (the one `requirements.txt` installs): space- or comma-separated, e.g. `3.8.0 3.7.1`. Each is installed on its own into `TRITONS_DIR`/<version> (`make run TRITON_VERSIONS=\"3.8.0 3.7.1\"` does it, once) and has a worker of its own; a run names its version in `options.triton` (`GET /api/spec` lists them). On a GPU host pair each with the CUDA its driver takes."),
    Setting("TRITONS_DIR", None, "Directory of the added Triton versions, one directory per version (`pip install --no-deps --target TRITONS_DIR/3.8.0 triton==3.8.0`); a run of a version sees its directory read-only and no other. Default: `instance/tritons` in the project."),
    Setting("WORKER_TRITON", None, "The Triton version a Celery worker (`make worker`) runs: one installed in `TRITONS_DIR`; unset, the default (its own environment's). It takes the runs that name its version, and those that name none where it runs the default; run one `make worker` per version."),
    Setting("REDIS_URL", None, "Scale out: a Redis URL (`redis://host:6379/0`) shared by every web process and Celery worker. Set, runs go to Celery workers (`make worker`, on any host) through it, and Socket.IO events through its message queue; unset, the web process runs its own workers."),
    # The jail's limits of one run (sandbox.jail.isolation.Limits), all its processes together.
    Setting("RUN_TASKS", 512, "Processes and threads of one run (a cgroup's `pids.max`; where none applies, RLIMIT_NPROC of the run's own uid).", worker=True),
    Setting("RUN_TASKS_WITHOUT_CPU_SHARE", 64, "Processes and threads of one run where no cgroup shares the CPU out (RLIMIT_NPROC of the run's uid): torch starts a thread per core.", worker=True),
    Setting("RUN_SCRATCH_MB", 512, "Size of a run's `/tmp` (a tmpfs: the source, the run's Triton cache, compiler temp files).", worker=True),
    Setting("RUN_SCRATCH_FILES", 8192, "Files a run's `/tmp` may hold (the tmpfs's inodes).", worker=True),
    Setting("RUN_FILE_MB", 64, "Largest file a run may write (RLIMIT_FSIZE).", worker=True),
    Setting("RUN_OPEN_FILES", 256, "Descriptors a run process may hold open (RLIMIT_NOFILE).", worker=True),
    # The dispatcher's clocks (read when the server starts).
    Setting("WORKER_START_TIMEOUT_S", 180.0, "Longest a worker may take from its start to warm (torch and triton imported, its first run process ready); past it the worker is replaced."),
    Setting("RUN_GRACE_S", 10.0, "A worker enforces `RUN_TIMEOUT_S` itself; a worker still silent this much later is killed and replaced."),
    Setting("STUCK_MARGIN_S", 15.0, "A worker busy for longer than `RUN_TIMEOUT_S` + `RUN_GRACE_S` + this (the kill and the error result take less) is stuck: `/healthz` answers 503."),
    Setting("COMPILE_INTERVAL_S", 0.25, "Compile ahead (the page asks ~0.4 s after the last keystroke): one owner's requests are taken at most one per this; a faster one is refused, and Run compiles what it needs."),
    Setting("COMPILE_STALE_S", 10.0, "A compile ahead no worker took within this is dropped: its person has typed on or run it."),
    Setting("COMPILE_KEEP_MB_PER_S", 16, "What one worker's compiles ahead, all together, may write into the host's kernel caches: megabytes a second, after a burst of four times as many; what is past it is not kept (the run compiles it). A person's compile keeps a few hundred KB.", worker=True),
    Setting("WAIT_MARGIN_S", 5.0, "`POST /api/run` waits at most `QUEUE_WAIT_S` + `RUN_TIMEOUT_S` + `RUN_GRACE_S` + this for its result, then answers 503: the run was lost."),
]

BY_NAME = {s.name: s for s in SETTINGS}
WORKER_SETTINGS = tuple(s.name for s in SETTINGS if s.worker)


def from_environment(environ=os.environ):
    return {s.name: s.read(environ) for s in SETTINGS}


def value(name, environ=os.environ):
    """One setting's value in this process's environment (a worker's: what its server set), else its default."""
    return BY_NAME[name].read(environ)


def default(name):
    return BY_NAME[name].default
