"""The documents as a reader meets them: the README is a door (short, every document of docs/ one
link away), every link of the README and of docs/ leads somewhere that exists, and what a document
generates from the code (docs/configuration.md's settings table) is what the code defines."""
import importlib.util
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


def without_code(text):
    """The text outside fenced code blocks and inline code, where a link is a link."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def anchors(text):
    """The anchors GitHub gives a document's headings."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", without_code_blocks(text), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def without_code_blocks(text):
    return re.sub(r"```.*?```", "", text, flags=re.S)


def generator():
    spec = importlib.util.spec_from_file_location("docs_generate", os.path.join(DOCS, "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_configuration_table_is_the_settings_as_the_code_defines_them():
    text = read("docs/configuration.md")
    assert generator().generated(text) == text, "docs/configuration.md differs from sandbox/settings.py: run `make docs`"


def test_the_generated_table_changes_with_a_setting(monkeypatch):
    """The check can fail: a setting's meaning changed in the code is a table that differs."""
    from sandbox import settings
    made = generator()
    changed = [settings.Setting(s.name, s.default, s.help + " Changed.", s.worker) for s in settings.SETTINGS]
    monkeypatch.setattr(made, "SETTINGS", changed)
    text = read("docs/configuration.md")
    assert made.generated(text) != text and "Changed." in made.generated(text)


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
