"""Shared snippets: content-addressed run specs (+ UI state) in SQLite. `/s/<id>` reopens one.

The UI state has one schema (UI_FIELDS): a save with a field outside it is refused, naming the field;
a stored snippet is loaded with only its valid fields (rows saved before the schema may hold others).
"""
import hashlib
import json

from flask import current_app, has_app_context

from app import db as database
from app.db import get_db
from sandbox import result
from sandbox.errors import Refused, unknown_fields
from sandbox.result import IR_STAGES
from sandbox.spec import PROGRAM_ID, is_program_id
from sandbox.spec import schema as spec_schema

class SnippetError(Refused, ValueError):
    """A snippet that cannot be stored (400)."""


class SnippetTooLarge(SnippetError):
    """Past MAX_SNIPPET_BYTES (413)."""

    status, phase = 413, "limit"


class UiError(SnippetError):
    """A UI state outside the schema; `field` names the bad field ("ui.pane")."""

    def __init__(self, field, message):
        super().__init__(message, field)


# The page's panes (templates/editor.html's data-tab names); null: the page's default, Results.
PANES = ("lesson", "puzzle", "results", "diagram", "timings", "ir", "compare", "step")


def _pane_error(value):
    if value is None or (isinstance(value, str) and value in PANES):
        return None
    return f"ui.pane must be one of {', '.join(PANES)} (or null)"


def _pid_error(value):
    if value is None or is_program_id(value):
        return None
    return "ui.pid must be null or a list of 1 to 3 non-negative integers (a program id)"


MAX_ROW_WIDTH = 65536  # the diagram's row width field: elements per row of a 1-D tensor


def _row_width_error(value):
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ROW_WIDTH):
        return None
    return f"ui.row_width must be null or an integer from 1 to {MAX_ROW_WIDTH} (elements per row of the diagram)"


def _ir_stage_error(value):
    if value is None or (isinstance(value, str) and value in IR_STAGES):
        return None
    return f"ui.ir_stage must be one of {', '.join(IR_STAGES)} (or null)"


MAX_TITLE, MAX_DESCRIPTION = 120, 2000  # characters


def _text_error(name, limit):
    def check(value):
        if value is None or (isinstance(value, str) and len(value) <= limit):
            return None
        return f"ui.{name} must be null or a text of at most {limit} characters"
    return check


# What the page saves as its UI state (main.js, getUi): the tab on screen, the selected program,
# the diagram's row width, the IR tab's stage, and the title and description the sharer gave.
UI_FIELDS = {"pane": _pane_error, "pid": _pid_error, "row_width": _row_width_error, "ir_stage": _ir_stage_error,
             "title": _text_error("title", MAX_TITLE), "description": _text_error("description", MAX_DESCRIPTION)}


def schema():
    """GET /api/spec and the editor page's `spec_schema`: the spec's (sandbox.spec.schema); as `ui`,
    the UI state's rules above; and of the result (sandbox.result), its shape before a run
    (`empty_result`) and the words of a puzzle test's failures. The page applies these instead of copies."""
    ui = {"pane": {"choices": list(PANES)}, "pid": PROGRAM_ID, "row_width": {"min": 1, "max": MAX_ROW_WIDTH},
          "ir_stage": {"choices": list(IR_STAGES)}, "title": {"max_length": MAX_TITLE},
          "description": {"max_length": MAX_DESCRIPTION}}
    return with_tritons({**spec_schema(), "ui": ui, "empty_result": result.new(),
                         "failure_words": result.FAILURE_WORDS})


def with_tritons(schema):
    """The schema with the Triton versions this server runs (`tritons`: each one's release date,
    whether it is the default and whether a worker of it is live), which options.triton may name.
    Outside a server (the page modules' tests read the schema from Python alone): none."""
    dispatcher = current_app.extensions.get("dispatcher") if has_app_context() else None
    versions = dispatcher.tritons() if dispatcher is not None else []
    options = {**schema["options"], "triton": {**schema["options"]["triton"],
                                               "choices": [v["version"] for v in versions]}}
    return {**schema, "options": options, "tritons": versions}


def field_name(key):
    """How a message names a UI field: "ui.pane"; an unknown key, however long, in 40 characters."""
    return "ui." + (key if len(key) <= 40 else key[:40] + "…")


def ui_errors(ui):
    """{key: message} for every field of the dict `ui` outside the schema; {} when `ui` is valid."""
    errors = {}
    for key, value in ui.items():
        check = UI_FIELDS.get(key)
        if check is None:
            errors[key] = f"{field_name(key)} is not a UI field; the fields are {', '.join(UI_FIELDS)}"
        elif (message := check(value)) is not None:
            errors[key] = message
    return errors


def validate_ui(ui):
    """The UI state to save: None is {}; anything outside the schema raises UiError naming the first bad field."""
    if ui is None:
        return {}
    if not isinstance(ui, dict):
        raise UiError("ui", f"ui must be an object with the fields {', '.join(UI_FIELDS)}")
    unknown_fields(ui, UI_FIELDS, "in the UI state", lambda message, field: UiError(field, message), "ui.")
    errors = ui_errors(ui)
    if errors:
        key = next(iter(errors))
        raise UiError(field_name(key), errors[key])
    return ui


def clean_ui(ui):
    """The valid fields of a stored UI state, the others dropped (one bad field costs only itself)."""
    if not isinstance(ui, dict):
        return {}
    errors = ui_errors(ui)
    return {key: value for key, value in ui.items() if key not in errors}


def canonical(spec, ui):
    """The text that is hashed: keys sorted, so equal content gets one id whatever its key order,
    except the inputs', whose order is content (later inputs may use earlier ones; it orders the
    random draws)."""
    ordered = {**spec, "inputs": list(spec.get("inputs", {}).items())}
    return json.dumps({"spec": ordered, "ui": ui or {}}, sort_keys=True, separators=(",", ":"))


def save(spec, ui, max_bytes, charge=None):
    """Store a snippet; the same content always gets the same id. Returns the id.
    Raises UiError for a UI state outside the schema, SnippetTooLarge beyond `max_bytes`.
    `charge(nbytes)` is called once before a new row is written (it may refuse: a rate, the
    database's size); saving a snippet that is stored already costs nothing."""
    ui = validate_ui(ui)
    body = json.dumps({"spec": spec, "ui": ui})  # stored as given: input order matters
    if len(body.encode()) > max_bytes:
        raise SnippetTooLarge(f"the snippet is {len(body.encode()) // 1024} KB; the limit is {max_bytes // 1024} KB")
    digest = hashlib.sha256(canonical(spec, ui).encode()).hexdigest()
    snippet_id = database.store_by_content(get_db(), "snippet", digest, body, charge)
    if snippet_id is None:
        raise SnippetError("could not store the snippet; try again")
    return snippet_id


def load(snippet_id):
    """The stored {"spec", "ui"} (None if there is none), its UI state cleaned: `/s/<id>` and the API read it here."""
    row = get_db().execute("SELECT body FROM snippet WHERE id = ?", (snippet_id,)).fetchone()
    if row is None:
        return None
    found = json.loads(row["body"])
    return {**found, "ui": clean_ui(found.get("ui"))}
