"""Which line of the user's source each line of a kernel's IR came from (TTIR, TTGIR, LLIR, PTX),
read from the locations the compiler writes into each stage; and the IR with the run's scratch
directory taken out of the paths it names."""
import functools
import os
import re


def shorten_paths(text, paths):
    """The IR with the user's file named by its base name (kernel.py), not by the run's scratch
    directory, which means nothing to the reader. Only the text changes: no line moves, so
    line_map (computed from the full paths) still holds."""
    for path in paths:
        directory = os.path.dirname(path or "")
        if directory:
            text = text.replace(directory + os.sep, "").replace(f'"{directory}"', '"."')
    return text


def line_map(asm, module_path, kernel_name):
    """{stage: {IR line index: source line}} for lines that came from the user's file."""
    # triton's on-disk cache is keyed by the source text, not its path: IR served from the cache
    # names the file the same source was first compiled from (an earlier job's scratch dir).
    user_files = {os.path.realpath(module_path)}
    if cached_path := kernel_file(asm["llir"], kernel_name):
        user_files.add(os.path.realpath(cached_path))

    @functools.lru_cache(maxsize=None)
    def is_user(path):
        return os.path.realpath(path) in user_files

    basenames = {os.path.basename(path) for path in user_files}
    return {"ttir": mlir_lines(asm["ttir"], is_user),
            "ttgir": mlir_lines(asm["ttgir"], is_user),
            "llir": llvm_lines(asm["llir"], is_user),
            "ptx": ptx_lines(asm["ptx"], is_user, basenames)}


_MLIR_ALIAS = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_MLIR_LOC = re.compile(r"(?<![\w#])loc\(")
_MLIR_FILE = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):\d+')
_MLIR_NAMED = re.compile(r'^"(?:[^"\\]|\\.)*"\((.*)\)$', re.S)
_MLIR_FUSED = re.compile(r"^fused(?:<.*?>)?\[(.*)\]$", re.S)


def mlir_lines(text, is_user):
    """TTIR/TTGIR: each op ends in loc(...), a file:line:col, or an alias #locN defined at the end,
    possibly named ("x"(...)), fused, or a callsite(callee at caller) for inlined calls."""
    lines = text.split("\n")
    aliases = {m.group(1): m.group(2) for m in map(_MLIR_ALIAS.match, lines) if m}
    cache = {}

    def resolve(loc):
        loc = loc.strip()
        if loc in aliases:
            if loc not in cache:
                cache[loc] = resolve(aliases[loc])
            return cache[loc]
        if m := _MLIR_FILE.match(loc):
            line = int(m.group(2))
            return line if line > 0 and is_user(m.group(1).replace('\\"', '"')) else None
        if loc.startswith("callsite(") and loc.endswith(")"):
            callee, _, caller = split_top(loc[len("callsite("):-1], " at ")
            return resolve(callee) or resolve(caller)  # the user's helper, else the user's call of triton's
        if m := _MLIR_NAMED.match(loc):
            return resolve(m.group(1))
        if m := _MLIR_FUSED.match(loc):
            return next(filter(None, map(resolve, split_all(m.group(1), ","))), None)
        return None

    result = {}
    # An op with regions (scf.for, scf.if, tt.reduce) prints its loc after the closing brace:
    # open_regions holds the lines that opened each region still open (`} else {` joins its `if`).
    open_regions = []
    for index, line in enumerate(lines):
        if _MLIR_ALIAS.match(line):
            continue
        stripped = line.strip()
        starts = [m.end() for m in _MLIR_LOC.finditer(line)]
        source_line = resolve(balanced(line, starts[-1])) if starts else None
        if source_line:
            result[index] = source_line
        openers = open_regions.pop() if stripped.startswith("}") and open_regions else []
        if stripped.endswith("{"):
            open_regions.append(openers + [index])
        elif source_line:
            for opener in openers:
                result.setdefault(opener, source_line)
    return result


def scan(text, start=0, depth=0):
    """(index, char, depth) for each character of `text` from `start` outside quoted strings;
    `depth` counts the brackets open around it (a closing bracket already counted out)."""
    quoted, i = False, start
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        else:
            depth -= c in ")]>"
            yield i, c, depth
            depth += c in "([<"
        i += 1


def balanced(text, start):
    """The text from `start` up to the parenthesis that closes the one just before it."""
    end = next((i for i, _, depth in scan(text, start, depth=1) if depth == 0), len(text))
    return text[start:end]


def split_all(text, sep):
    parts = []
    while True:
        head, found, text = split_top(text, sep)
        parts.append(head)
        if not found:
            return parts


def split_top(text, sep):
    """str.partition at the first `sep` outside quotes and brackets."""
    for i, _, depth in scan(text):
        if depth == 0 and text.startswith(sep, i):
            return text[:i], sep, text[i + len(sep):]
    return text, "", ""


_LLVM_METADATA = re.compile(r"^(!\d+) = (?:distinct )?!(\w+)\((.*)\)\s*$")
_LLVM_FIELD = re.compile(r'(\w+): ("(?:[^"\\]|\\.)*"|[^,]+)')
_LLVM_DBG = re.compile(r"!dbg (!\d+)")


def llvm_metadata(lines):
    """{"!12": ("DILocation", {"line": "7", "scope": "!4", ...})} from the metadata at the end of LLIR."""
    nodes = {}
    for line in lines:
        if m := _LLVM_METADATA.match(line):
            fields = {k: v.strip().strip('"') for k, v in _LLVM_FIELD.findall(m.group(3))}
            nodes[m.group(1)] = (m.group(2), fields)
    return nodes


def llvm_file(nodes, ref):
    """The path of the DIFile that a scope, subprogram or file node leads to."""
    kind, fields = nodes.get(ref, ("", {}))
    if kind == "DIFile":
        return os.path.join(fields.get("directory", ""), fields.get("filename", ""))
    parent = fields.get("file") or fields.get("scope")
    return llvm_file(nodes, parent) if parent else None


def kernel_file(llir, kernel_name):
    """The file the IR names for the kernel itself (its DISubprogram), or None without line info."""
    nodes = llvm_metadata(llir.split("\n"))
    for ref, (kind, fields) in nodes.items():
        if kind == "DISubprogram" and fields.get("name") == kernel_name:
            return llvm_file(nodes, ref)
    return None


def llvm_lines(text, is_user):
    """LLIR: instructions carry `!dbg !N`; !N is a DILocation (line, scope, inlinedAt) or the kernel's
    DISubprogram; scopes lead to a DIFile."""
    lines = text.split("\n")
    nodes = llvm_metadata(lines)

    def resolve(ref):
        kind, fields = nodes.get(ref, ("", {}))
        line = int(fields.get("line", 0))
        owner = fields.get("scope") if kind == "DILocation" else ref
        if line > 0 and owner and (path := llvm_file(nodes, owner)) and is_user(path):
            return line
        return resolve(fields["inlinedAt"]) if "inlinedAt" in fields else None

    result = {}
    for index, line in enumerate(lines):
        if (m := _LLVM_DBG.search(line)) and not line.startswith("!"):
            if source_line := resolve(m.group(1)):
                result[index] = source_line
    return result


_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,?\s*"([^"]*)")?')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(.*)$")
_PTX_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)")
_PTX_CALLER = re.compile(r"@\[\s*([^:\s]+):(\d+):\d+")


def ptx_lines(text, is_user, user_basenames):
    """PTX: a `.loc FILE LINE COL` applies to the instructions after it; `.file N "path"` names the
    files. Code inlined from triton's library keeps the user's call site in `inlined_at` or, in
    older PTX, only in the comment `// standard.py:43:17 @[ kernel.py:15:33 ]` (file base names)."""
    lines = text.split("\n")
    files = {}
    for line in lines:
        if m := _PTX_FILE.match(line):
            files[m.group(1)] = os.path.join(m.group(2), m.group(3)) if m.group(3) else m.group(2)

    def resolve(file_id, line, rest):
        if line > 0 and is_user(files.get(file_id, "")):
            return line
        if (m := _PTX_INLINED_AT.search(rest)) and is_user(files.get(m.group(1), "")):
            return int(m.group(2))
        for name, caller_line in _PTX_CALLER.findall(rest):
            if name in user_basenames and int(caller_line) > 0:
                return int(caller_line)
        return None

    result, current = {}, None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if m := _PTX_LOC.match(line):
            current = resolve(m.group(1), int(m.group(2)), m.group(3))
            if current:
                result[index] = current
        elif stripped == "}":
            current = None
        elif current and stripped and not stripped.startswith((".", "//", "$", "{")):
            result[index] = current
    return result
