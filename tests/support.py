"""What tests share besides fixtures: the project's paths, the vector-add spec most tests run, the
browser's launch settings and pages, waiting for an app's workers, serving an app over HTTP. Tests import from here, never from conftest."""
import contextlib
import os
import re
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

VECTOR_ADD = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
'''


def vector_add_spec(n=98432, block=1024, source=VECTOR_ADD, **options):
    return {
        "version": 1, "source": source, "kernel": "add_kernel",
        "inputs": {"x": f"torch.randn({n})", "y": f"torch.randn({n})", "out": f"torch.empty({n})"},
        "args": {"x_ptr": "x", "y_ptr": "y", "out_ptr": "out", "n": "x.numel()", "BLOCK_SIZE": block},
        "grid": "(triton.cdiv(n, meta['BLOCK_SIZE']),)",
        "reference": {"out": "x + y"},
        "options": {"ir": False, **options},
    }


ENDLESS = VECTOR_ADD + "\nwhile True:\n    pass\n"  # a run that only its timeout (or Stop) ends


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def wait_until_ready(app, timeout_s=180):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(w["state"] == "ready" for w in app.extensions["dispatcher"].health()["workers"]):
            return
        time.sleep(0.2)
    raise RuntimeError("workers did not start")


def first_worker_busy(app):
    return app.extensions["dispatcher"].health()["workers"][0]["state"] == "busy"


def wait_until_busy(app, timeout_s=20):
    """Until the first worker has taken a run."""
    deadline = time.monotonic() + timeout_s
    while not first_worker_busy(app):
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.05)


@contextlib.contextmanager
def running_app(directory, **config):
    """A real app (its workers ready) with its database in `directory`, stopped afterwards: for a
    module's own app (make_app is a test's)."""
    from app import create_app
    app = create_app({"TESTING": True, "DATABASE": str(directory / "t.sqlite"), **config})
    wait_until_ready(app)
    yield app
    app.extensions["dispatcher"].stop()


def wait_until_warmed(app, timeout_s=300):
    """Until every worker's warm-up (the gallery compiled into the shared kernels) has finished;
    returns the workers' warm-up reports."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reports = [w.get("shared_kernels") or {} for w in app.extensions["dispatcher"].health()["workers"]]
        if all(r.get("state") == "ready" for r in reports):
            return reports
        time.sleep(0.3)
    raise RuntimeError(f"the workers' warm-up did not finish: {reports}")


# ---- browser pages -----------------------------------------------------------------------------

_FUNCTION = re.compile(r"^\s*(async\s+)?(function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)")


def predicates_as_functions():
    """Make wait_for_function(expression) poll a function. The pages' Content-Security-Policy allows
    no eval ('unsafe-eval'), and Playwright polls a plain expression by eval'ing it in the page (its
    first check is not): an expression such as "window.playground !== undefined" becomes
    "() => (window.playground !== undefined)", which it calls instead."""
    from playwright._impl.frame import Frame
    if getattr(Frame.wait_for_function, "as_function", False):
        return
    original = Frame.wait_for_function

    async def wait_for_function(self, expression, *args, **kwargs):
        if not _FUNCTION.match(expression):
            expression = f"() => ({expression})"
        return await original(self, expression, *args, **kwargs)

    wait_for_function.as_function = True
    Frame.wait_for_function = wait_for_function


def new_page(browser, width=1440, height=900, console=True, **context_options):
    """A page in its own context (no shared storage), recording script errors (and, with `console`,
    console errors) in `page.errors`."""
    page = browser.new_context(viewport={"width": width, "height": height}, **context_options).new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    if console:
        page.on("console", lambda message: message.type == "error" and page.errors.append(message.text))
    return page


@contextlib.contextmanager
def page_without_errors(browser, **page_options):
    """new_page(...) for a test, which fails on any error it recorded once the page is closed."""
    page = new_page(browser, **page_options)
    yield page
    errors = page.errors
    page.context.close()
    assert not errors, errors


def set_source(page, source):
    """Replace the editor's whole text, as typing would."""
    page.evaluate("""(source) => { const v = window.playground.editorView;
        v.dispatch({changes: {from: 0, to: v.state.doc.length, insert: source}}); }""", source)


@contextlib.contextmanager
def served(app):
    """`app` over real HTTP and Socket.IO in a background thread; yields its base URL."""
    from werkzeug.serving import make_server
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
