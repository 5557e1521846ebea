"""Socket.IO: `run` → ack {run_id}; run_status / run_stdout / run_result go to the requesting client only."""
from flask import current_app, request

from app.dispatcher import QueueFull
from app.owners import current_owner
from sandbox.spec import SpecError, normalize

EVENT_NAMES = {"status": "run_status", "stdout": "run_stdout", "result": "run_result"}


def register(socketio):
    @socketio.on("run")
    def run(data):
        try:
            spec = normalize(data.get("spec") if isinstance(data, dict) else None)
        except SpecError as e:
            return {"error": {"phase": "parse", "message": str(e)}}
        sid = request.sid

        def listener(run_id, type, content):
            # to=sid: the client's own room, so another tab never sees this run.
            socketio.emit(EVENT_NAMES[type], {"run_id": run_id, **content}, to=sid)

        try:
            return {"run_id": current_app.extensions["dispatcher"].submit(spec, listener, current_owner())}
        except QueueFull as e:
            return {"error": {"phase": "limit", "message": str(e)}}
