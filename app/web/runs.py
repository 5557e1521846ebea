"""How a run is asked for, whichever way it comes: POST /api/run and the Socket.IO `run` event go
through submit(), the `compile` event through compile_ahead(). What another package adds to a run
(a puzzle's hidden check, a class's kept verdict) comes from the hooks it registered at start
(app.web.hooks), never from an import of it."""
import functools

from flask import current_app

from app.owners import current_address, current_owner
from app.web.hooks import hooks
from sandbox.errors import Refused
from sandbox.spec import SCRIPT_NOT_AHEAD, SpecError, is_script


class NotCompiledAhead(Refused):
    """This server compiles at run time only (remote workers), or the code is not the person's own."""

    status, phase = 409, "limit"


def dispatcher():
    return current_app.extensions["dispatcher"]


def submit(spec, from_link, client=None):
    """A run of the normalized `spec` for this request's owner, prepared by the registered hooks.
    Over HTTP (`client` None) its result, waited for; over Socket.IO its run_id, its events going to
    `client`. Each registered keeper gets the result before its client does."""
    for prepare in hooks().prepare:
        spec = prepare(spec)
    keeps = [keep for keep in (keeper(spec) for keeper in hooks().keepers) if keep is not None]
    runs, owner, address = dispatcher(), current_owner(), current_address()
    if client is None:
        result = runs.run(spec, owner, from_link=from_link, address=address)
        for keep in keeps:
            keep(result)
        return result
    return runs.submit(spec, owner, client=client, from_link=from_link, address=address,
                       **listening(runs, client, keeps))


def listening(runs, client, keeps):
    """A listener that gives the result to `keeps` and then delivers every event to `client` as
    usual (with Celery workers only the result comes back to this process for it: app.dispatch.remote;
    the other events go from the worker to the client); none where nothing keeps the result."""
    if not keeps:
        return {}
    send = functools.partial(runs.deliver, client)

    def listener(run_id, type, content):
        if type == "result":  # kept before its client sees it: a dashboard is never behind the page
            for keep in keeps:
                keep(content["result"])
        send(run_id, type, content)
    return {"listener": listener}


def compile_ahead(spec, from_link, client):
    """A compile ahead of the owner's next run of `spec`; its compile_id, whose answer goes to `client`."""
    if is_script(spec):
        raise SpecError(SCRIPT_NOT_AHEAD, "mode")
    compile_id = dispatcher().compile_ahead(spec, current_owner(), client, current_address(), from_link=from_link)
    if compile_id is None:
        raise NotCompiledAhead("this is compiled when you run it, not ahead: this server's workers compile at run "
                               "time, or the code is not yours (a puzzle's, a shared link's)")
    return compile_id
