"""Writes the generated parts of the documents from their one definition in the code: the settings
table of docs/configuration.md (sandbox.settings.SETTINGS) and the refusals table of
docs/interfaces.md (the classes of sandbox.errors.Refused). `make docs` runs it; `--check` only
says whether a document differs (tests/test_docs.py fails when one does).

A generated part sits between `<!-- generated: NAME -->` and `<!-- end of generated: NAME -->`;
the text around it is written by hand."""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def settings_table():
    from sandbox.settings import SETTINGS
    rows = ["| Setting | Default | Workers | Meaning |", "|---|---|---|---|"]
    for s in SETTINGS:
        default = "unset" if s.default is None else f"`{s.default}`"
        rows.append(f"| `{s.name}` | {default} | {'yes' if s.worker else ''} | {s.help} |")
    return "\n".join(rows)


def refusals():
    """Every refusal class the app answers with (those its modules define once it is made)."""
    from app import create_app
    from sandbox.errors import Refused
    create_app({"START_WORKERS": False, "DATABASE": ":memory:", "PUZZLE_WARMUP": 0})

    def below(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)
    return sorted(set(below(Refused)), key=lambda cls: (cls.status, cls.kind()))


def refusals_table():
    rows = ["| `type` | HTTP | `phase` | when |", "|---|---|---|---|"]
    for cls in refusals():
        when = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        rows.append(f"| `{cls.kind()}` | {cls.status} | `{cls.phase}` | {when} |")
    return "\n".join(rows)


GENERATED = {"docs/configuration.md": {"settings": settings_table}, "docs/interfaces.md": {"refusals": refusals_table}}


def generated(text, parts):
    """`text` with each part between its markers made anew by `parts[name]()`."""
    for name, make in parts.items():
        begin, end = f"<!-- generated: {name} -->", f"<!-- end of generated: {name} -->"
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{make()}\n{end}{tail}"
    return text


def differing():
    """{document: its text as generated} for each document that differs from what the code defines."""
    found = {}
    for document, parts in GENERATED.items():
        path = ROOT / document
        text = path.read_text()
        made = generated(text, parts)
        if made != text:
            found[document] = made
    return found


def main(argv):
    found = differing()
    if "--check" in argv:
        if found:
            sys.exit(f"{', '.join(found)} differ from the code: run `make docs`")
        return
    for document, made in found.items():
        (ROOT / document).write_text(made)


if __name__ == "__main__":
    main(sys.argv[1:])
