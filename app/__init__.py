"""The Triton Playground web app: create_app() wires config, database, dispatcher, views and sockets.

Layers, each importing only those below it (tests/test_import_rules.py walks them): this factory,
the one module that knows every package; app.web and app.course side by side, the course plugging
into the web side through the hooks it registers at start (app.web.hooks), neither importing the
other; app.dispatch; the shared modules (config, db, owners, fairness, body, gallery, literate);
sandbox/'s contracts. Settings are the app's config, read from the environment once, here (or by a
process's entry point: app.serve, app.dispatch.celery_worker), and passed down."""
import functools
import os
import sys

from flask import Flask
from flask_socketio import SocketIO

from app import config as settings

socketio = SocketIO()


def async_mode():
    """gevent where gevent has patched the standard library (gunicorn's gevent worker does, before it
    imports the app: app.serve), threading otherwise (the tests' werkzeug server, a threaded gunicorn).
    Never chosen by what is installed: gevent's mode in an unpatched process would mix real threads
    with gevent's hub."""
    monkey = sys.modules.get("gevent.monkey")
    return "gevent" if monkey is not None and monkey.is_module_patched("threading") else "threading"


def create_app(test_config=None):
    app = Flask(__name__, instance_relative_config=True,
                static_folder="../static", template_folder="../templates")
    app.config.update(settings.from_environment())
    app.config["MAX_CONTENT_LENGTH"] = 4 * app.config["MAX_SNIPPET_BYTES"]
    if test_config:
        app.config.update(test_config)
    # The instance folder (the database, the generated SECRET_KEY): a test may give its own.
    app.instance_path = app.config.setdefault("INSTANCE_PATH", app.instance_path)
    app.config["DATABASE"] = app.config["DATABASE"] or os.path.join(app.instance_path, "playground.sqlite")
    # A spec's inputs are ordered (later ones may use earlier ones): never sort keys on the way out.
    app.json.sort_keys = False
    app.jinja_env.policies["json.dumps_kwargs"] = {"sort_keys": False}

    from app import course, db, fairness
    from app.dispatch.interface import deliver
    from app.web import api, assets, editor, errors, events, metrics, security
    from app.web.hooks import Hooks, Notifier

    security.init_app(app)  # before anything that signs or reads a session
    db.init_app(app)
    assets.init_app(app)
    app.register_blueprint(editor.bp)
    app.register_blueprint(api.bp)
    errors.init_app(app)
    app.extensions["write_limiter"] = fairness.WriteLimiter(app.config["WRITES_PER_MINUTE"])

    app.extensions["dispatcher"] = dispatcher = make_dispatcher(app.config, functools.partial(deliver, socketio.emit))
    # The course plugs into the web side through its hooks; the web side never imports it.
    app.extensions["hooks"] = hooks = Hooks(Notifier(socketio), editor.render_editor)
    course.init_app(app, hooks)
    if app.config.get("START_WORKERS", True):
        dispatcher.start()
        course.start(app)

    socketio.init_app(app, async_mode=async_mode(), max_http_buffer_size=app.config["MAX_CONTENT_LENGTH"],
                      **message_queue(app.config))
    events.register(socketio, app)
    metrics.init_app(app, dispatcher, socketio)
    fairness.limit_connections(socketio.server, app.config["CONNECTIONS_PER_ADDRESS"])
    security.trust_proxies(app)  # last: it wraps Socket.IO's handshake too
    return app


def make_dispatcher(config, deliver):
    """The one seam to the runs: Celery workers through Redis where REDIS_URL is set, else this
    process's own pool of workers."""
    if config["REDIS_URL"]:
        try:
            from app.dispatch.remote import CeleryDispatcher
        except ImportError as e:
            raise RuntimeError(f"REDIS_URL is set, and scale-out needs celery and redis ({e}): "
                               "pip install -r requirements-scale.txt (make run does when REDIS_URL is set)") from e
        return CeleryDispatcher(config, deliver)
    from app.dispatch.pool import Pool
    return Pool(config, deliver)


def message_queue(config):
    """Scale out: Socket.IO through Redis, so that a worker or another web process can reach a client
    connected here."""
    if not config["REDIS_URL"]:
        return {}
    from app.dispatch.runstate import SOCKETIO_CHANNEL
    return {"message_queue": config["REDIS_URL"], "channel": SOCKETIO_CHANNEL}
