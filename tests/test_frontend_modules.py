"""How the front-end's modules (static/js) hang together, read from their source: panes never import
each other, every event on the hub is listed in hub.js with its detail, numbers are formatted in
one module, and errors are read as fields."""
import os
import re

from tests.support import ROOT

JS = os.path.join(ROOT, "static", "js")
PANES = {"editor.js", "form.js", "results.js", "timings.js", "ir.js", "diagram.js"}


def source(name):
    with open(os.path.join(JS, name), encoding="utf-8") as f:
        return f.read()


def modules():
    return sorted(name for name in os.listdir(JS) if name.endswith(".js"))


def imports(name):
    """The page's own modules `name` imports, statically or with import()."""
    return set(re.findall(r"""(?:from|import\()\s*["']\./([\w.-]+\.js)["']""", source(name)))


def test_panes_never_import_each_other():
    for pane in PANES:
        assert not imports(pane) & (PANES - {pane}), pane


def test_every_event_emitted_is_listed_in_the_hub_and_every_listed_one_is_emitted():
    listed = set(re.findall(r"^//\s+([a-z]+(?:-[a-z]+)+)\s+\{", source("hub.js"), re.M))
    emitted = set()
    for name in modules():
        text = source(name)
        emitted |= set(re.findall(r"""(?<![.\w])emit\(\s*["']([\w-]+)["']""", text))
        emitted |= set(re.findall(r"""\breceive\(\s*["']([\w-]+)["']\)""", text))  # the server's events, relayed by main.js
    assert emitted == listed


# Every way JavaScript writes a number or a moment as text for a person.
NUMBER_TO_TEXT = re.compile(r"\.(toLocale\w*String|toFixed|toPrecision|toExponential)\(|\bIntl\.")


def test_numbers_sizes_and_times_are_formatted_in_one_module():
    for name in modules():
        if name != "format.js":
            assert not NUMBER_TO_TEXT.search(source(name)), (name, NUMBER_TO_TEXT.search(source(name)).group())
            assert not re.search(r"function format[A-Z]", source(name)), name


def test_errors_are_read_as_fields_not_parsed_from_their_message():
    for name in ("results.js", "error-card.js", "form.js", "editor.js"):
        text = source(name)
        assert not re.search(r"message\.(match|replace|split\(\"\\n\\n\"\))", text), name
        assert not re.search(r"message\.match|\.exec\(message\)|/\^(argument|input)", text), name
    assert "error.field" in source("form.js") and "error.hint" in source("error-card.js")


def test_the_options_defaults_are_not_restated_in_the_page():
    form = source("form.js")
    assert "[1, 2, 4, 8, 16, 32]" not in form and "?? 4" not in form and "?? 3" not in form
