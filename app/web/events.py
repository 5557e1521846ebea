"""Socket.IO: `run` → ack {run_id}; run_status / run_stdout / run_partial (a section of the result as soon
as it is ready) / run_result go to the requesting client only. `compile` → ack {compile_id}, then
compile_result: the spec compiled ahead of a run, or the error a run would meet compiling.
`stop` {run_id} → ack {stopped}: ends that client's run, waiting or running. A client that disconnects
takes its waiting runs with it. A refusal is the ack {"error": the one body} (app.web.errors.acked).
Events and rooms another package registered (app.web.hooks) are served here too."""
from flask import current_app, request
from flask_socketio import join_room

from app.web import runs
from app.web.errors import acked
from app.web.hooks import hooks
from sandbox.errors import unknown_fields
from sandbox.spec import SpecError, check_size, normalize

# What a `run` or `compile` event carries: the spec, and whether the page shows someone else's code
# (a shared link's), from which with the spec the dispatch decides whose code it is (app.dispatch.jobs).
RUN_FIELDS = ("spec", "from_link")


def spec_of(data, event):
    """The normalized spec an event carries (`spec` and the fields of RUN_FIELDS); raises SpecError."""
    check_size(data, f"the {event} event", current_app.config["REQUEST_MAX_VALUES"])
    if isinstance(data, dict):
        unknown_fields(data, RUN_FIELDS, f"in the {event} event", SpecError)
    return normalize(data.get("spec") if isinstance(data, dict) else None)


def register(socketio, app):
    @socketio.on("run")
    @acked
    def run(data):
        spec = spec_of(data, "run")
        return {"run_id": runs.submit(spec, bool(data.get("from_link")), client=request.sid)}

    @socketio.on("compile")
    @acked
    def compile_ahead(data):
        """Compile ahead of a Run (the page asks as its person types): ack {compile_id}, then
        `compile_result` {compile_id, ok, error}; the owner's next Run of the spec finds it compiled.
        Never before anyone's run; the newest of an owner replaces a waiting older one."""
        spec = spec_of(data, "compile")
        return {"compile_id": runs.compile_ahead(spec, bool(data.get("from_link")), request.sid)}

    @socketio.on("connect")
    def connect(*_auth):
        for rooms in hooks().rooms:
            for room in rooms():
                join_room(room)

    @socketio.on("stop")
    def stop(data):
        """Stop: the client's run `run_id` ends now, queued or running; its run_result says so.
        Ack {"stopped": true}, or {"stopped": false} when this client has no such run (it ended)."""
        run_id = data.get("run_id") if isinstance(data, dict) else None
        if not isinstance(run_id, str):
            return {"stopped": False, "error": SpecError("stop needs the run_id of a run", "run_id").error().to_dict()}
        return {"stopped": current_app.extensions["dispatcher"].stop_run(run_id, request.sid)}

    @socketio.on("disconnect")
    def disconnect(*_reason):
        # No one is left to see the runs it queued: a worker would spend time on them for nothing.
        current_app.extensions["dispatcher"].withdraw_client(request.sid)

    for name, handler in app.extensions["hooks"].events.items():
        socketio.on(name)(acked(handler))
