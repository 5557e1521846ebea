"""The house's import rules, read from the source with ast (every import: at a module's top and
inside functions alike, since a function-level import is still a dependency, only a later one).

sandbox/: no import cycle among its modules, no module over MAX_LINES, and each part imports only
what lies below it (the layers its package docstrings state). app/: the same walk, its rules
written out below (and in its packages' docstrings)."""
import ast
import pathlib

import pytest

pytestmark = pytest.mark.unit

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_LINES = 500

# sandbox/'s contracts, shared with the web process: pure Python, importing one another only.
SANDBOX_CONTRACTS = {"sandbox", "sandbox.errors", "sandbox.gpus", "sandbox.launch_form", "sandbox.protocol",
                     "sandbox.result", "sandbox.settings", "sandbox.spec", "sandbox.tritons"}
# A part of sandbox/ -> the parts it may import besides the contracts (each package's docstring).
SANDBOX_LAYERS = {
    "sandbox.jail": set(),
    "sandbox.launch": set(),
    "sandbox.trace": {"sandbox.launch"},
    "sandbox.timeline": {"sandbox.launch"},
    "sandbox.run": {"sandbox.launch", "sandbox.trace", "sandbox.timeline"},
    "sandbox.grading": {"sandbox.launch", "sandbox.trace", "sandbox.timeline", "sandbox.run"},
    "sandbox.worker": {"sandbox.jail", "sandbox.launch", "sandbox.trace", "sandbox.timeline", "sandbox.run",
                       "sandbox.grading"},
}

# app/'s rules: the web side calls down into dispatch; teaching registers its hooks at start (the
# web side never imports it, and it imports nothing of the web side: what it uses of it is lent,
# app.web.hooks); dispatch imports neither; none of them reaches up into the factory (`app`, the
# package that wires them, and its socketio); the modules they share (owners, fairness, the
# database, the settings, a request's body, the gallery) import none of them; all of app/ sees
# sandbox/ through its contracts only.
APP_PACKAGES = ("app.web", "app.course", "app.dispatch")
APP_SHARED = ("app.body", "app.config", "app.db", "app.fairness", "app.gallery", "app.literate", "app.owners")
APP_FORBIDDEN = [
    ("app.dispatch", "app.web"),
    ("app.dispatch", "app.course"),
    ("app.web", "app.course"),
    ("app.course", "app.web"),
    ("app.web", "app"),
    ("app.course", "app"),
    ("app.dispatch", "app"),
    *((shared, imported) for shared in APP_SHARED for imported in (*APP_PACKAGES, "app")),
]


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package):
    """{module name: path} of every module of a top-level package."""
    return {module_name(path): path for path in sorted((ROOT / package).rglob("*.py"))}


def imported_modules(node, importer, is_package, known):
    """The modules of `known` an import statement imports, a relative one resolved against
    `importer`: `from a.b import c` is a.b.c where that is a module, else (a name a.b defines) a.b."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = importer.split(".") if is_package else importer.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join(package + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    found = set()
    for dotted in names:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        if dotted:
            found.add(dotted)
    return found


def imports(known):
    """{module: the modules of `known` it imports}, from every import anywhere in its text."""
    graph = {}
    for name, path in known.items():
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name] |= imported_modules(node, name, path.name == "__init__.py", known) - {name}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter[0]
                    counter[0] += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def within(module, package):
    return module == package or module.startswith(package + ".")


SANDBOX = modules("sandbox")
APP = modules("app")
EVERYTHING = imports({**SANDBOX, **APP})


def test_the_walk_sees_imports_inside_functions():
    tree = ast.parse("def f():\n    from sandbox.run import pipeline\n    from . import spec\n")
    found = set().union(*(imported_modules(node, "sandbox.result", False, SANDBOX) for node in ast.walk(tree)
                          if isinstance(node, ast.ImportFrom)))
    assert found == {"sandbox.run.pipeline", "sandbox.spec"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_modules_of_sandbox():
    graph = {name: {d for d in EVERYTHING[name] if d in SANDBOX} for name in SANDBOX}
    assert cycles(graph) == []


def test_no_module_of_sandbox_is_over_the_line_limit():
    long = {name: n for name, path in SANDBOX.items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these by what their parts are for (at most {MAX_LINES} lines each)"


def test_each_part_of_sandbox_imports_only_what_lies_below_it():
    wrong = []
    for name in SANDBOX:
        if name in SANDBOX_CONTRACTS:
            allowed = SANDBOX_CONTRACTS
        else:
            part = ".".join(name.split(".")[:2])
            if part not in SANDBOX_LAYERS:
                wrong.append((name, "neither a contract (SANDBOX_CONTRACTS) nor in a part SANDBOX_LAYERS names"))
                continue
            allowed = SANDBOX_CONTRACTS | {m for m in SANDBOX if within(m, part)
                                           or any(within(m, below) for below in SANDBOX_LAYERS[part])}
        wrong += [(name, d) for d in EVERYTHING[name] if d not in allowed]
    assert wrong == []


def test_app_sees_sandbox_through_its_contracts_only():
    """User code runs only in sandbox/: the web process imports the pure contracts, nothing that
    loads a kernel or imports torch or triton."""
    wrong = [(name, d) for name in APP for d in EVERYTHING[name] if d in SANDBOX and d not in SANDBOX_CONTRACTS]
    assert wrong == []


def app_violations():
    """The imports of app/ against APP_FORBIDDEN, and the cycles among app/'s modules."""
    graph = {name: {d for d in EVERYTHING[name] if d in APP} for name in APP}
    forbidden = {(name, d) for name, deps in graph.items() for d in deps
                 for importer, imported in APP_FORBIDDEN
                 if within(name, importer) and (d == imported if imported == "app" else within(d, imported))}
    return forbidden, cycles(graph)


def test_app_keeps_its_import_rules():
    assert app_violations() == (set(), [])


def test_the_rules_of_app_are_read_from_its_imports():
    """The walk sees app/'s imports: the factory imports each package, and a rule, broken, is found."""
    assert {"app.web.api", "app.course", "app.dispatch.interface"} <= EVERYTHING["app"]
    assert "app.owners" in EVERYTHING["app.dispatch.jobs"] and set(APP_SHARED) <= set(APP)
    assert all(within(name, "app") for name in APP) and set(APP_PACKAGES) <= set(APP)


def test_no_module_of_app_is_over_the_line_limit():
    long = {name: n for name, path in APP.items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these by what their parts are for (at most {MAX_LINES} lines each)"
