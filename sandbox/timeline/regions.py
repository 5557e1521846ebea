"""The regions a timeline times, read from the source, and the source that times them.

A person marks a region with two comments, anywhere inside a @triton.jit function:

    # region: loads
    x = tl.load(x_ptr + offs, mask=mask)
    # endregion

Comments change nothing in a normal run (nor in the interpreter). For the timeline run each marker
becomes a call of Proton's `enter_scope` / `exit_scope` on the same line, so line numbers stay the
source's. A source without markers gets the kernel's body as one region, "kernel", and each of its
top-level loops as another (two records per warp each, outside the loop's body: the loop itself is
compiled as before).
"""
import ast
import re
from dataclasses import dataclass, field

PROTON = "_playground_proton"  # the name the instrumented source imports Proton's language as
IMPORT = f"\nimport triton.profiler.language as {PROTON}\n"
BEGIN = re.compile(r"^(?P<indent>[ \t]*)#\s*region\b\s*:?\s*(?P<name>.*?)\s*$")
END = re.compile(r"^(?P<indent>[ \t]*)#\s*endregion\b.*$")
MAX_NAME = 48
# What a region's name may hold: it is written into the instrumented source as a string literal and
# into the compiler's IR as Proton's scope name, so nothing that could end either.
NAME_CHARACTERS = re.compile(r"[^\w \-.:()/+*,=<>\[\]]")
MAX_REGIONS = 32


class RegionError(ValueError):
    """A region's markers that cannot be timed: the message names the line (the run goes on, and
    its notes say why there is no timeline)."""


@dataclass
class Region:
    name: str
    lines: list          # [first, last]: the source lines the region covers (1-based)
    marked: bool = True  # the person's markers; False: derived from the kernel's structure


@dataclass
class Instrumented:
    source: str                     # the source to compile for the timeline run
    regions: list = field(default_factory=list)


def instrument(source, kernel_name):
    """The source with its regions turned into Proton's scopes, and the regions (RegionError for
    markers that cannot be)."""
    lines = source.split("\n")
    tree = ast.parse(source)
    functions = jit_functions(tree)
    marked = marked_regions(lines, functions)
    if marked:
        rewritten = list(lines)
        for region, (begin, end) in marked:
            rewritten[begin - 1] = scope_call(lines[begin - 1], "enter", region.name, BEGIN)
            rewritten[end - 1] = scope_call(lines[end - 1], "exit", region.name, END)
        text = "\n".join(rewritten) + IMPORT
        check_blocks(text, [region for region, _ in marked], [marks for _, marks in marked])
        return Instrumented(text, [region for region, _ in marked])
    kernel = next((f for f in functions if f.name == kernel_name), None)
    if kernel is None:
        raise RegionError(f"no @triton.jit function named '{kernel_name}' to time")
    return derived(lines, kernel)


def jit_functions(tree):
    """The functions of the module decorated with something named `jit` (triton.jit, jit, ...)."""
    def is_jit(decorator):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return (isinstance(target, ast.Attribute) and target.attr == "jit") or \
            (isinstance(target, ast.Name) and target.id == "jit")
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and any(is_jit(d) for d in node.decorator_list)]


def marked_regions(lines, functions):
    """[(Region, (begin line, end line))] of the markers, innermost closed first."""
    spans = [(f.lineno + 1, extended_end(lines, f)) for f in functions]
    inside = lambda number: any(first <= number <= last for first, last in spans)  # noqa: E731
    open_regions, found, names = [], [], set()
    for number, text in enumerate(lines, 1):
        begin, end = BEGIN.match(text), END.match(text)
        if not (begin or end):
            continue
        if not inside(number):
            raise RegionError(f"the region marker on line {number} is outside a @triton.jit function: "
                              f"regions time a kernel's own lines")
        if begin:
            open_regions.append((unique(begin.group("name"), number, names), number))
        elif not open_regions:
            raise RegionError(f"'# endregion' on line {number} closes no region: begin one with '# region: NAME'")
        else:
            name, first = open_regions.pop()
            found.append((Region(name, [min(first + 1, number - 1), max(first + 1, number - 1)]), (first, number)))
    if open_regions:
        name, first = open_regions[-1]
        raise RegionError(f"the region '{name}' begun on line {first} has no '# endregion'")
    if len(found) > MAX_REGIONS:
        raise RegionError(f"{len(found)} regions are marked; a timeline times at most {MAX_REGIONS}")
    return found


def extended_end(lines, function):
    """The function's last line, comments indented under it after its last statement included (a
    closing '# endregion' there is the function's)."""
    last = function.end_lineno
    while last < len(lines):
        text = lines[last]
        indent = len(text) - len(text.lstrip())
        if text.strip() and not (text.lstrip().startswith("#") and indent > function.col_offset):
            break
        last += 1
    return last


def unique(name, line, names):
    """The region's name: the marker's, short, each character outside NAME_CHARACTERS an "_"
    (else "region at line N"); a name
    already used gets its line added (Proton tells scopes apart by name)."""
    name = NAME_CHARACTERS.sub("_", name)[:MAX_NAME].strip() or f"region at line {line}"
    if name in names:
        name = f"{name} (line {line})"
    names.add(name)
    return name


def scope_call(text, which, name, pattern):
    indent = pattern.match(text).group("indent")
    return f"{indent}{PROTON}.{which}_scope({name!r})"


def check_blocks(text, regions, marks):
    """Each region must begin and end in one block (the same body of statements): Proton pairs a
    scope's records in order, and a region left inside a loop or a branch would not pair."""
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise RegionError(f"the region marker on line {e.lineno} must be indented like the statement after it") \
            from None
    block_of = {}
    for node in ast.walk(tree):
        for body in (getattr(node, name, None) for name in ("body", "orelse", "finalbody")):
            if isinstance(body, list):
                for statement in body:
                    block_of[statement.lineno] = id(body)
    for region, (begin, end) in zip(regions, marks):
        if block_of.get(begin) is None or block_of.get(begin) != block_of.get(end):
            raise RegionError(f"the region '{region.name}' (lines {begin} to {end}) must end in the block it "
                              f"begins in: move '# endregion' to the indentation of '# region'")


def derived(lines, kernel):
    """The kernel's body as "kernel", each top-level loop as "loop at line N": calls on lines of their
    own (the regions' lines are still the source's). Proton pairs a scope's records only where they
    are structured, so an early `return` (in a branch) stays outside: "kernel" begins after the last
    statement that holds one, and ends before a final `return`."""
    body = kernel.body
    if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) and len(body) > 1:
        body = body[1:]  # a docstring stays first
    final = body[-1] if isinstance(body[-1], ast.Return) else None
    returning = [i for i, statement in enumerate(body) if statement is not final
                 and any(isinstance(node, ast.Return) for node in ast.walk(statement))]
    body = body[returning[-1] + 1:] if returning else body
    if not body or body[0] is final:
        raise RegionError(f"'{kernel.name}' returns before any work to time: mark its regions with "
                          f"'# region: NAME' and '# endregion'")
    indent = re.match(r"[ \t]*", lines[body[0].lineno - 1]).group(0)
    before, after = {}, {}  # line -> statements inserted before / after it
    last = (final.lineno - 1) if final else kernel.end_lineno
    regions = [Region("kernel", [body[0].lineno, last], marked=False)]
    before.setdefault(body[0].lineno, []).append(f"{indent}{PROTON}.enter_scope('kernel')")
    for statement in body:
        if isinstance(statement, (ast.For, ast.While)):
            name = f"loop at line {statement.lineno}"
            regions.append(Region(name, [statement.lineno, statement.end_lineno], marked=False))
            before.setdefault(statement.lineno, []).append(f"{indent}{PROTON}.enter_scope({name!r})")
            after.setdefault(statement.end_lineno, []).append(f"{indent}{PROTON}.exit_scope({name!r})")
    if final:
        before.setdefault(final.lineno, []).append(f"{indent}{PROTON}.exit_scope('kernel')")
    else:
        after.setdefault(kernel.end_lineno, []).append(f"{indent}{PROTON}.exit_scope('kernel')")
    out = []
    for number, text in enumerate(lines, 1):
        out += before.get(number, [])
        out.append(text)
        out += after.get(number, [])
    return Instrumented("\n".join(out) + IMPORT, regions)
