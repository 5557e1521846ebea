"""Writes the generated parts of the documents from their one definition in the code: the settings
table of docs/configuration.md from sandbox.settings.SETTINGS. `make docs` runs it; `--check`
only says whether a document differs (tests/test_docs.py fails when one does)."""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox.settings import SETTINGS  # noqa: E402

CONFIGURATION = ROOT / "docs" / "configuration.md"
BEGIN = "<!-- the settings table: generated from sandbox/settings.py by `make docs`; edit it there -->"
END = "<!-- end of the settings table -->"


def settings_table():
    rows = ["| Setting | Default | Workers | Meaning |", "|---|---|---|---|"]
    for s in SETTINGS:
        default = "unset" if s.default is None else f"`{s.default}`"
        rows.append(f"| `{s.name}` | {default} | {'yes' if s.worker else ''} | {s.help} |")
    return "\n".join(rows)


def generated(text):
    """`text` (docs/configuration.md) with the part between its markers made from the settings."""
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{settings_table()}\n{END}{tail}"


def main(argv):
    text = CONFIGURATION.read_text()
    made = generated(text)
    if "--check" in argv:
        if made != text:
            sys.exit(f"{CONFIGURATION.relative_to(ROOT)} differs from sandbox/settings.py: run `make docs`")
        return
    CONFIGURATION.write_text(made)


if __name__ == "__main__":
    main(sys.argv[1:])
