"""The editor page, opened empty (default example), on a gallery example or on a shared snippet."""
from flask import Blueprint, abort, current_app, render_template, request

from app import gallery
from app.web import share
from app.owners import current_owner
from app.web.security import allow_embedding

bp = Blueprint("editor", __name__)
DEFAULT_EXAMPLE = "vector_add"

# "New kernel" (GET /new): the smallest kernel that runs, to write one's own from, with its launch.
NEW_KERNEL = '''import triton
import triton.language as tl


@triton.jit
def my_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    # your code here: compute something from x
    tl.store(out_ptr + offsets, x, mask=mask)
'''


def new_kernel_spec():
    return {"version": 1, "source": NEW_KERNEL, "kernel": "my_kernel",
            "inputs": {"x": "torch.randn(1024)", "out": "torch.empty(1024)"},
            "args": {"x_ptr": "x", "out_ptr": "out", "n": "x.numel()", "BLOCK": 256},
            "grid": "(triton.cdiv(n, meta['BLOCK']),)", "reference": {"out": "x"}, "options": {}}


# What an embed (?embed=1) may show, as ?panes=a,b (the first output pane opens), and its default.
EMBED_PANES = ("editor", "lesson", "results", "diagram")
DEFAULT_EMBED_PANES = ("editor", "results", "diagram")


def embed_options(embeddable):
    """None for the full page; for ?embed=1 of a page meant to be embedded {"panes": [...],
    "readonly": bool} (?readonly=1: the source can be read and run, not edited), and the response
    may be framed by FRAME_ANCESTORS. An unknown pane is a 400 that names it."""
    if request.args.get("embed") != "1" or not embeddable:
        return None
    raw = request.args.get("panes")
    panes = list(DEFAULT_EMBED_PANES) if raw is None else [p.strip() for p in raw.split(",") if p.strip()]
    unknown = [p for p in panes if p not in EMBED_PANES]
    if unknown or not panes:
        abort(400, f"panes= lists what an embed shows, from {', '.join(EMBED_PANES)}; "
                   + (f"'{unknown[0]}' is not one of them" if unknown else "it is empty"))
    if panes == ["editor"]:
        panes.append("results")  # Run needs somewhere to show what happened
    allow_embedding()
    return {"panes": panes, "readonly": request.args.get("readonly") == "1"}


def server_device_kind():
    """Where runs go now ("gpu" or "interpreter"), for the page's estimate; None before a worker is up."""
    dispatcher = current_app.extensions.get("dispatcher")
    device = dispatcher.health().get("device") if dispatcher is not None else None
    return device.get("kind") if isinstance(device, dict) else None


def render_editor(spec, ui=None, snippet_id=None, example=None, fork_of=None, title=None, embeddable=False):
    """The editor's page. `embeddable`: meant to be embedded in other sites' pages (?embed=1): the
    editor's, the gallery's and a shared link's, never one whose runs count for something (a
    puzzle's, graded for a class) or that keeps edits (a fork)."""
    current_owner()  # the page's runs, over its socket, are this browser's
    initial = {"spec": spec, "ui": ui or {"pid": None, "pane": None}, "examples": gallery.list_examples(),
               "embed": embed_options(embeddable), "snippet_id": snippet_id, "example": example,
               "fork_of": fork_of, "title": title, "run_timeout_s": current_app.config["RUN_TIMEOUT_S"],
               "device_kind": server_device_kind(),
               "spec_schema": share.schema()}
    return render_template("editor.html", initial=initial)


@bp.get("/")
def index():
    found = gallery.load_example(DEFAULT_EXAMPLE)
    return render_editor(found["spec"], example=DEFAULT_EXAMPLE, title=found["title"], embeddable=True)


@bp.get("/new")
def new():
    return render_editor(new_kernel_spec(), title="New kernel", embeddable=True)


@bp.get("/examples/<name>")
def example(name):
    found = gallery.load_example(name)
    if found is None:
        abort(404, f"there is no example named '{name}'")
    return render_editor(found["spec"], example=name, title=found["title"], embeddable=True)


@bp.get("/s/<snippet_id>")
def snippet(snippet_id):
    found = share.load(snippet_id)
    if found is None:
        abort(404, f"there is no shared snippet '{snippet_id}': the link may be mistyped")
    return render_editor(found["spec"], found.get("ui"), snippet_id, title=found["ui"].get("title"), embeddable=True)


@bp.get("/fork/<snippet_id>")
def fork(snippet_id):
    """A shared snippet as an editable copy: no run prompt (its reader chose to take it), and the
    page's unsaved edits are kept under this address, apart from the shared link's."""
    found = share.load(snippet_id)
    if found is None:
        abort(404, f"there is no shared snippet '{snippet_id}' to fork: the link may be mistyped")
    return render_editor(found["spec"], found.get("ui"), fork_of=snippet_id)

