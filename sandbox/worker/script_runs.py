"""A worker's part in script mode: a selected launch replayed alone where its inputs were kept
(sandbox.run.replay, sandbox.worker.kept_launches), the program's result kept through the page's
own steps after it (SCRIPT_STEPS_S), and the result marked as its program's word beside the
server's own check of the launch it shows (sandbox.grading.recheck)."""
import itertools
import time

from sandbox import protocol
from sandbox import result as results
from sandbox.protocol import RECHECK_BUDGET_S
from sandbox.worker.checks_ahead import check_key
from sandbox.worker.verdicts import recheck_ok, shown_launch

RECHECKS_KEPT = 256  # the server's checks of script launches a worker remembers, the least recently used forgotten
# result.launches.replay of a program that is not its owner's own: nothing of it is kept.
FOREIGN_REPLAY = {"kept": [], "as_ran": [], "why": "this program is not your own (a shared link's, say): nothing of "
                  "its run is kept", "replayed": False}


REPLAYED_AHEAD = ("This replay was made ahead, while you read the program's result: the server replays a script's "
                  "other kept launches as soon as its program has run (on a GPU with the GPU to itself; in the "
                  "interpreter at low CPU priority).")


class ScriptRuns:
    """The Worker's methods for scripts (sandbox.worker.main.Worker): it has `kept_launches`, `ahead`,
    `checks_ahead`, `settings`, `finished` and `step`, `send` and `run_checker`."""
    rechecked = None  # check_key(source, launch record) -> the server's check of it, made on this worker

    def replay_or_run(self, run_id, job, store):
        """A script's job asking for a launch (`options.launch`): that launch alone, replayed from the
        inputs kept from the run that listed it where they are here; else the whole program, said
        before it runs, with why. Returns (the job, a replay's kept result.launches and .benchmarks,
        or None)."""
        options = job.spec.get("options") if isinstance(job.spec.get("options"), dict) else {}
        index = options.get("launch")
        if type(index) is not int or store is None:
            return job, None
        found, why = self.kept_launches.find(store, job.spec, index)
        if found is None:
            self.send(protocol.message("status", run_id, phase="running",
                                       message=f"re-running the whole program to show launch {index}: {why}"))
            return job, None
        listing, benchmarks, record = found
        return job.replace(replay={"launch": record}), {"launches": listing, "benchmarks": benchmarks}

    def show_replayed_ahead(self, run_id, spec, listing, result):
        """A click's result as the replay of its launch made ahead found it (sandbox.worker.ahead): its
        parts at once (a script's has no check of its own), then the whole with the server's check of
        that launch, made now or before."""
        index = spec["options"]["launch"]
        self.send(protocol.message("status", run_id, phase="running",
                                   message=f"launch {index} was replayed while you read the program's result"))
        for part in results.PARTS:
            if result.get(part) is not None and not results.part_problems(part, result[part]):
                self.send_part(run_id, part, result[part])
        result["notes"].append(REPLAYED_AHEAD)
        self.send_line(self.checked_script(run_id, protocol.message("result", run_id, result=result), spec, listing))

    def send_part(self, run_id, part, content):
        """A part of a click's result made ahead, as a run's is relayed: each at most once, a script's
        check never."""
        if part not in self.parts.names:
            self.relay_part(part, protocol.encode(protocol.message("partial", run_id, part=part, content=content),
                                                  nan_to_null=True).rstrip(b"\n"))

    def compile_kept_launches(self, owner, spec, result):
        """After a program's run (`result`, as sent): its kept launches but the one it showed compiled
        ahead, as a click on one replays it (sandbox.worker.ahead)."""
        launches = result.get("launches") or {}
        others = [i for i in (launches.get("replay") or {}).get("kept") or [] if i != launches.get("selected")]
        found = [self.kept_launches.find(owner, spec, index)[0] for index in others]
        records = [record for _, _, record in filter(None, found)]
        self.ahead.request_launches(owner, spec, records)
        self.checks_ahead.request(owner, spec["source"], records)

    def checks_as_launched(self, owner, source):
        """What a run of the owner's program `source` is given each launch it says it is making, the first
        SAID_AS_LAUNCHED: the server checks it meanwhile (sandbox.worker.checks_ahead), so that the run's
        own check of the launch it shows, and a click on another, find its verdict made."""
        self.checks_ahead.request(owner, source, [])  # its checks of an older program: stale
        said = itertools.count()

        def launched(record):
            if next(said) < protocol.SAID_AS_LAUNCHED:  # the program's word: no more than an honest one says
                self.checks_ahead.request(owner, source, [record], replacing=False)
        return launched

    def steps_cut_short(self, run_id):
        """The result a script's program ended with, when a step of the page's after it (timing, IR)
        ran past SCRIPT_STEPS_S: delivered whole, saying which step was stopped."""
        result = protocol.decode(self.finished[0], protocol.RUN_TYPES)["content"]["result"]
        result["notes"].append(f"The program ran to its end; the page's own step after it ({self.step or 'its steps'}) "
                               f"took longer than its {self.settings.script_steps_s:g} s (SCRIPT_STEPS_S) and was "
                               f"stopped: what the steps had not finished is missing, the program's result is whole.")
        return protocol.encode(protocol.message("result", run_id, result=result), nan_to_null=True)

    def checked_script(self, run_id, msg, spec, listing=None, replay=None):
        """A script's result (its run's `result` message) as a line, marked as its program's word, with
        the server's own check of the launch it shows: a fresh run process given the source the server
        kept and that launch's record, within RECHECK_BUDGET_S (sandbox.grading.recheck). A replayed
        launch's result lists the launches kept from the run that listed them (`listing`); `replay`
        is which launches a later selection replays (result.launches.replay)."""
        result = msg["content"]["result"]
        if listing is not None:  # the program's own report, from the run that listed the launches
            result["launches"] = {**listing["launches"], "selected": spec["options"]["launch"]}
            result["launches"]["replay"] = {**result["launches"]["replay"], "replayed": True}
            result["benchmarks"] = listing["benchmarks"]
        elif isinstance(result.get("launches"), dict):
            result["launches"]["replay"] = replay
        launch = shown_launch(result)
        verdict = self.server_check(run_id, spec["source"], launch) if launch is not None else None
        results.claimed_by_program(result, verdict)
        return protocol.encode(msg, nan_to_null=True)

    def server_check(self, run_id, source, launch):
        """The server's check of `launch` (a record) of the program `source`: made once per source and
        record on this worker, or ahead on this host (sandbox.worker.checks_ahead: its verdict depends on
        nothing else), within RECHECK_BUDGET_S; a check that could not finish is made again."""
        key = check_key(source, launch)
        verdict = self.rechecked.get(key) or self.checks_ahead.checked.get(key)
        if verdict is None:
            self.send(protocol.message("status", run_id, phase="checking",
                                       message=f"the server checks launch {launch['index']} again, without the program"))
            verdict = self.checks_ahead.verdict(key, RECHECK_BUDGET_S)  # under way while its person read
        if verdict is None:
            budget = time.monotonic() + RECHECK_BUDGET_S  # its own bound, after the program's and its steps'
            verdict, error = self.run_checker(run_id, "recheck", {"source": source, "launch": launch}, recheck_ok,
                                              budget)
            if error is not None:
                return {"launch": launch["index"] if isinstance(launch["index"], int) else None, "bounds": "unchecked",
                        "message": f"the server could not check it: {error.message}"}
        self.rechecked.pop(key, None)
        self.rechecked[key] = verdict
        while len(self.rechecked) > RECHECKS_KEPT:
            self.rechecked.popitem(last=False)
        return verdict
