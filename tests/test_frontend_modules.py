"""How the front-end's modules (static/js) hang together, read from their source: each in the folder
of what it serves (the editor and its form, a run's panes, teaching, the shared pieces), none over
400 lines; the shared pieces import nothing of the others; panes never import each other; every
event on the hub is listed in hub.js with its detail; numbers are formatted in one module; errors
are read as fields."""
import os
import posixpath
import re

from tests.support import ROOT

JS = os.path.join(ROOT, "static", "js")
FOLDERS = {"shared", "editor", "run", "teach"}
ENTRIES = {"main.js"}  # the editor page's; a folder holds the other pages' (teach/class.js, ...)
PANES = {"editor/editor.js", "editor/form.js", "run/results.js", "run/timings.js", "run/ir.js", "run/diagram.js"}
MAX_LINES = 400


def source(name):
    with open(os.path.join(JS, name), encoding="utf-8") as f:
        return f.read()


def modules():
    """Every module's path under static/js, as "run/ir.js"."""
    found = []
    for folder, _, files in os.walk(JS):
        found += [os.path.relpath(os.path.join(folder, f), JS).replace(os.sep, "/") for f in files if f.endswith(".js")]
    return sorted(found)


def imports(name):
    """The page's own modules `name` imports, statically or with import(), as paths under static/js."""
    found = re.findall(r"""(?:from|import\()\s*["'](\.\.?/[\w./-]+\.js)["']""", source(name))
    return {posixpath.normpath(posixpath.join(posixpath.dirname(name), path)) for path in found}


def test_every_module_is_in_the_folder_of_what_it_serves_and_imports_what_is_there():
    for name in modules():
        assert name in ENTRIES or name.split("/")[0] in FOLDERS and name.count("/") == 1, name
        assert imports(name) <= set(modules()), (name, imports(name) - set(modules()))


def test_no_module_is_over_400_lines():
    long = {name: lines for name in modules() if (lines := source(name).count("\n")) > MAX_LINES}
    assert long == {}


def test_the_shared_pieces_import_only_one_another_and_no_module_imports_the_entry():
    for name in modules():
        assert not imports(name) & ENTRIES, name
        if name.startswith("shared/"):
            assert all(path.startswith("shared/") for path in imports(name)), (name, imports(name))


def test_panes_never_import_each_other():
    for pane in PANES:
        assert not imports(pane) & (PANES - {pane}), pane


def test_every_event_emitted_is_listed_in_the_hub_and_every_listed_one_is_emitted():
    listed = set(re.findall(r"^//\s+([a-z]+(?:-[a-z]+)+)\s+\{", source("shared/hub.js"), re.M))
    emitted = set()
    for name in modules():
        text = source(name)
        emitted |= set(re.findall(r"""(?<![.\w])emit\(\s*["']([\w-]+)["']""", text))
        emitted |= set(re.findall(r"""\breceive\(\s*["']([\w-]+)["']\)""", text))  # the server's events, relayed
    assert emitted == listed


# Every way JavaScript writes a number or a moment as text for a person.
NUMBER_TO_TEXT = re.compile(r"\.(toLocale\w*String|toFixed|toPrecision|toExponential)\(|\bIntl\.")


def test_numbers_sizes_and_times_are_formatted_in_one_module():
    for name in modules():
        if name != "shared/format.js":
            assert not NUMBER_TO_TEXT.search(source(name)), (name, NUMBER_TO_TEXT.search(source(name)).group())
            assert not re.search(r"function format[A-Z]", source(name)), name


def test_errors_are_read_as_fields_not_parsed_from_their_message():
    for name in ("run/results.js", "run/error-card.js", "editor/form.js", "editor/editor.js"):
        text = source(name)
        assert not re.search(r"message\.(match|replace|split\(\"\\n\\n\"\))", text), name
        assert not re.search(r"message\.match|\.exec\(message\)|/\^(argument|input)", text), name
    assert "error.field" in source("editor/form.js") and "error.hint" in source("run/error-card.js")


def test_the_options_defaults_are_not_restated_in_the_page():
    form = source("editor/form.js")
    assert "[1, 2, 4, 8, 16, 32]" not in form and "?? 4" not in form and "?? 3" not in form
