"""Socket.IO: `run` → ack {run_id}; run_status / run_stdout / run_partial (a section of the result as soon
as it is ready) / run_result go to the requesting client only. `compile` → ack {compile_id}, then
compile_result: the spec compiled ahead of a run, or the error a run would meet compiling.
`stop` {run_id} → ack {stopped}: ends that client's run, waiting or running. A client that disconnects
takes its waiting runs with it."""
import functools

from flask import current_app, request
from flask_socketio import join_room

from app.course import classes
from app.db import get_db
from app.course.views import graded
from app.dispatch.interface import QueueFull
from app.web.errors import error_body
from app.web.owners import current_address, current_owner
from sandbox.spec import SCRIPT_NOT_AHEAD, SpecError, check_size, is_script, normalize

# What a `run` or `compile` event carries: the spec, and whether the page shows someone else's code
# (a shared link's), from which with the spec the dispatch decides whose code it is (app.dispatch.jobs).
RUN_FIELDS = ("spec", "from_link")

EVENT_NAMES = {"status": "run_status", "stdout": "run_stdout", "partial": "run_partial", "result": "run_result",
               "compiled": "compile_result"}


def deliver(emit, client, run_id, type, content):
    """One event of a run (or a compile ahead's answer, with its compile_id) to its client's own room,
    so another tab never sees it: `emit` is this web process's Socket.IO server, or, on a Celery
    worker, the message queue's (app.dispatch.celery_worker)."""
    if client is not None:
        emit(EVENT_NAMES[type], {"compile_id" if type == "compiled" else "run_id": run_id, **content}, to=client)


def spec_of(data, event):
    """The normalized spec an event carries (`spec` and the fields of RUN_FIELDS); raises SpecError."""
    check_size(data, f"the {event} event")
    unknown = [key for key in data if key not in RUN_FIELDS] if isinstance(data, dict) else []
    if unknown:
        raise SpecError(f"unknown field{'s' if len(unknown) > 1 else ''} in the {event} event: "
                        f"{', '.join(repr(str(k)[:40]) for k in unknown[:5])}; it carries only "
                        f"{', '.join(RUN_FIELDS)}", str(unknown[0])[:40])
    return normalize(data.get("spec") if isinstance(data, dict) else None)


def keeping(dispatcher, spec):
    """For a graded run of a class's student: a listener that delivers as usual and, with the result,
    keeps the grader's verdict (app.course.classes). With Celery workers only the result comes back
    to this process for it (app.dispatch.remote); the other events go from the worker to the client."""
    member = classes.counted(spec)
    if member is None:
        return {}
    keep, send = classes.recorder(member, spec), functools.partial(dispatcher.deliver, request.sid)

    def listener(run_id, type, content):
        if type == "result":  # kept before the student sees it: the dashboard is never behind the page
            keep(content["result"])
        send(run_id, type, content)
    return {"listener": listener}


def register(socketio):
    @socketio.on("run")
    def run(data):
        try:
            spec = graded(spec_of(data, "run"))
        except SpecError as e:
            return {"error": error_body(str(e), phase="parse", type="SpecError", field=e.field)}
        dispatcher = current_app.extensions["dispatcher"]
        try:
            return {"run_id": dispatcher.submit(spec, current_owner(), client=request.sid, from_link=bool(data.get("from_link")),
                                                address=current_address(), **keeping(dispatcher, spec))}
        except QueueFull as e:  # the whole queue, or this owner's or this address's share of it
            return {"error": error_body(str(e), phase="limit", type=type(e).__name__)}

    @socketio.on("compile")
    def compile_ahead(data):
        """Compile ahead of a Run (the page asks as its person types): ack {compile_id}, then
        `compile_result` {compile_id, ok, error}; the owner's next Run of the spec finds it compiled.
        Never before anyone's run; the newest of an owner replaces a waiting older one."""
        try:
            spec = spec_of(data, "compile")
            if is_script(spec):
                raise SpecError(SCRIPT_NOT_AHEAD, "mode")
        except SpecError as e:
            return {"error": error_body(str(e), phase="parse", type="SpecError", field=e.field)}
        try:
            compile_id = current_app.extensions["dispatcher"].compile_ahead(
                spec, current_owner(), request.sid, current_address(), from_link=bool(data.get("from_link")))
        except QueueFull as e:
            return {"error": error_body(str(e), phase="limit", type=type(e).__name__)}
        if compile_id is None:  # remote workers, or code not the person's own: nothing compiled ahead is kept for it
            return {"error": error_body("this is compiled when you run it, not ahead: this server's workers compile "
                                        "at run time, or the code is not yours (a puzzle's, a shared link's)",
                                        phase="limit", type="NotCompiledAhead")}
        return {"compile_id": compile_id}

    @socketio.on("connect")
    def connect(*_auth):
        """A class's student's page hears what the teacher pushes (app.course.classes), while the
        student is in the class: a removed one's cookie names a student no push goes to."""
        member = classes.membership()
        if member is not None and classes.in_class(get_db(), member.code, member):
            join_room(classes.room("student", member.student))

    @socketio.on("watch_class")
    def watch_class(data):
        """A teacher's dashboard: `class_progress` {code} each time a submission of the class is kept.
        Ack {"watching": true}, or false for a session that does not teach the class."""
        code = data.get("code") if isinstance(data, dict) else None
        if not (isinstance(code, str) and classes.teaching(code)):
            return {"watching": False}
        join_room(classes.room("teachers", code))
        return {"watching": True}

    @socketio.on("stop")
    def stop(data):
        """Stop: the client's run `run_id` ends now, queued or running; its run_result says so.
        Ack {"stopped": true}, or {"stopped": false} when this client has no such run (it ended)."""
        run_id = data.get("run_id") if isinstance(data, dict) else None
        if not isinstance(run_id, str):
            return {"stopped": False, "error": error_body("stop needs the run_id of a run", phase="parse", type="SpecError",
                                                          field="run_id")}
        return {"stopped": current_app.extensions["dispatcher"].stop_run(run_id, request.sid)}

    @socketio.on("disconnect")
    def disconnect(*_reason):
        # No one is left to see the runs it queued: a worker would spend time on them for nothing.
        current_app.extensions["dispatcher"].withdraw_client(request.sid)
