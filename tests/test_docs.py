"""The documents as a reader meets them: the README is a door (short, every document of docs/ one
link away), every link of the README and of docs/ leads somewhere that exists, every file they name
is there, and where a document states a contract it is the code's: the generated tables (the
settings, the refusals) are what the code defines, and the result's fields, the run spec's fields
and options with their defaults, the Socket.IO events each way and the app's routes are those of
their one definition. (The error body's fields, in every document: tests/test_errors.py.)"""
import importlib.util
import json
import os
import re

import pytest

from tests.support import ROOT

DOCS = os.path.join(ROOT, "docs")
DOCUMENTS = ["README.md"] + sorted(os.path.join("docs", name) for name in os.listdir(DOCS) if name.endswith(".md"))
README_MAX_LINES = 250
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def without_code_blocks(text):
    return re.sub(r"```.*?```", "", text, flags=re.S)


def without_code(text):
    """The text outside fenced code blocks and inline code, where a link is a link."""
    return re.sub(r"`[^`\n]*`", "", without_code_blocks(text))


def anchors(text):
    """The anchors GitHub gives a document's headings."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", without_code_blocks(text), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def generator():
    spec = importlib.util.spec_from_file_location("docs_generate", os.path.join(DOCS, "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_tables_are_what_the_code_defines():
    assert generator().differing() == {}, "run `make docs`"


@pytest.mark.parametrize("part", ["settings", "refusals"])
def test_a_generated_table_that_the_code_no_longer_defines_differs(monkeypatch, part):
    """The check can fail: a table made otherwise than the document holds is found."""
    made = generator()
    document = next(doc for doc, parts in made.GENERATED.items() if part in parts)
    monkeypatch.setitem(made.GENERATED[document], part, lambda: "| a row the code does not define |")
    assert list(made.differing()) == [document]


def test_the_refusals_table_names_every_refusal_with_its_status_and_phase():
    from sandbox.errors import Refused
    made = generator()
    rows = table_rows(read("docs/interfaces.md"), "| `type` |")
    assert {row[0].strip("`"): (int(row[1]), row[2].strip("`")) for row in rows} == \
        {cls.kind(): (cls.status, cls.phase) for cls in made.refusals()}
    assert all(issubclass(cls, Refused) for cls in made.refusals()) and len(rows) >= 15


def test_the_readme_is_a_door():
    readme = read("README.md")
    assert len(readme.splitlines()) <= README_MAX_LINES, f"the README has {len(readme.splitlines())} lines"
    for command in ("make run", "make test"):
        assert command in readme
    linked = {os.path.normpath(target.split("#")[0]) for target in LINK.findall(without_code(readme))}
    unlinked = [path for path in DOCUMENTS[1:] if path not in linked]
    assert not unlinked, f"documents the README does not lead to: {unlinked}"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_link_leads_somewhere(document):
    text = read(document)
    broken = []
    for target in LINK.findall(without_code(text)):
        if re.match(r"[a-z]+:", target):  # a web address: not this repository's to check
            continue
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(document), path)) if path else document
        if not os.path.exists(os.path.join(ROOT, resolved)):
            broken.append(f"{target}: no {resolved}")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(read(resolved)):
            broken.append(f"{target}: no heading #{anchor} in {resolved}")
    assert not broken, f"{document}: {broken}"


# ---------------------------------------------------------------- contracts stated in tables and blocks

def table_rows(text, header):
    """The rows of the table whose header line starts with `header`: lists of their cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if (line + "\n").startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def fenced(text, opening):
    """The first fenced block of `text` whose first line starts with `opening`."""
    return next(block for block in re.findall(r"```\w*\n(.*?)```", text, flags=re.S) if block.startswith(opening))


def fields_of_parts(block):
    """{top-level field: the names in its first braces, or None}, for a block written as the
    result's: `{"field": null | {"name", "name": "a" | "b", "name": {...}}, ...}`. A name is a
    quoted word after `{` or `,`; a quoted word after `:` or `|` is a value."""
    found, field, level, previous, done = {}, None, 0, ",", set()
    for token in re.finditer(r'"\w+"|[{}()\[\],:|]', block):
        word = token.group(0)
        if word in ("{", "[", "("):
            level += 1
        elif word in ("}", "]", ")"):
            if level == 2:
                done.add(field)  # its first braces closed: what follows (`| {...}`) is another shape
            level -= 1
        elif previous in ("{", ","):
            if level == 1:
                field = word.strip('"')
                found[field] = None
            elif level == 2 and field not in done:
                found[field] = (found[field] or []) + [word.strip('"')]
        previous = "name" if word.startswith('"') else word
    return found


def test_the_result_document_has_the_results_fields_and_each_parts():
    from sandbox import result
    block = fenced(read("docs/result.md"), "{")
    found = fields_of_parts(block)
    assert list(found) == list(result.RESULT), "the result's top-level fields, in order"
    parts = {"device": result.DEVICE, "error": result.ERROR, "check": result.CHECK, "timings": result.TIMINGS,
             "trace": result.TRACE, "puzzle": result.PUZZLE, "sweep": result.SWEEP, "steps": result.STEPS,
             "launches": result.LAUNCHES, "server_check": result.SERVER_CHECK, "timeline": result.TIMELINE}
    wrong = {part: (found[part], list(fields)) for part, fields in parts.items() if set(found[part] or ()) != set(fields)}
    assert not wrong, f"documented vs defined: {wrong}"
    warnings = next(line for line in block.splitlines() if line.lstrip().startswith('"warnings"'))  # a list of them
    assert re.findall(r'"(\w+)"', warnings)[1:] == list(result.WARNING)


def test_the_run_spec_document_has_the_specs_fields_and_options_with_their_defaults():
    from sandbox import spec
    text = read("docs/run-spec.md")
    fields = [row[0].strip("`") for row in table_rows(text, "| field |")]
    assert fields == list(spec.FIELDS)
    options = {}
    for row in table_rows(text, "| option |"):
        for name in row[0].split(", "):
            options[name.strip("`")] = json.loads(row[1].strip("`"))
    assert options == spec.DEFAULT_OPTIONS


def test_the_events_document_has_the_events_each_way():
    from app import create_app, socketio
    from app.dispatch.interface import EVENT_NAMES
    create_app({"START_WORKERS": False, "DATABASE": ":memory:", "PUZZLE_WARMUP": 0})
    text = read("docs/events.md")
    from_page = {row[0].strip("`") for row in table_rows(text, "| event | payload | ack |")}
    assert from_page == set(socketio.server.handlers["/"]) - {"connect", "disconnect"}
    sent = set(EVENT_NAMES.values())
    for path in sorted(os.listdir(os.path.join(ROOT, "app", "course"))):
        if path.endswith(".py"):
            sent |= set(re.findall(r'\.emit\(\s*"(\w+)"', read(os.path.join("app", "course", path))))
    from_server = {row[0].strip("`") for row in table_rows(text, "| event | payload |\n")}
    assert from_server == sent



def test_the_interfaces_document_names_every_route_of_the_app():
    """Every route the app serves is in docs/interfaces.md (its parameters named as it likes), but
    the static files."""
    from app import create_app
    app = create_app({"START_WORKERS": False, "DATABASE": ":memory:", "PUZZLE_WARMUP": 0})
    with_holes = lambda text: re.sub(r"<[^>]+>", "<>", text)  # noqa: E731
    documented = with_holes(read("docs/interfaces.md"))
    routes = {rule.rule for rule in app.url_map.iter_rules() if rule.endpoint != "static"}
    missing = sorted(route for route in routes if not re.search(re.escape(with_holes(route)) + r"[`,\s?]", documented))
    assert not missing, f"routes docs/interfaces.md does not name: {missing}"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_file_a_document_names_exists(document):
    """A path of the repository written in a document (`sandbox/result.py`, `tests/support/`) is
    there: a document does not send its reader to a file that moved."""
    named = re.findall(r"`((?:app|sandbox|tests|static|templates|benchmarks|kernels|docs)/[\w./-]*)`", read(document))
    missing = sorted({path for path in named if not os.path.exists(os.path.join(ROOT, path))})
    assert not missing, f"{document} names files that are not there: {missing}"
