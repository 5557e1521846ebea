// Reading just enough Python in the page: the @triton.jit functions of a source and their
// parameters, and the torch expressions the inputs table writes (`torch.randn(98432, dtype=...)`).

const OPEN = "([{";
const CLOSE = ")]}";

// Index just past the string literal that starts at `start` (handles triple quotes and escapes).
function stringEnd(text, start) {
  const quote = text.startsWith(text[start].repeat(3), start) ? text[start].repeat(3) : text[start];
  let i = start + quote.length;
  while (i < text.length) {
    if (text[i] === "\\") { i += 2; continue; }
    if (text.startsWith(quote, i)) return i + quote.length;
    if (quote.length === 1 && text[i] === "\n") return i;
    i += 1;
  }
  return text.length;
}

// Splits at top-level `sep` (outside brackets and strings); drops empty trailing parts.
export function splitTopLevel(text, sep = ",") {
  const parts = [];
  let depth = 0, start = 0, i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"' || c === "'") { i = stringEnd(text, i); continue; }
    if (OPEN.includes(c)) depth += 1;
    else if (CLOSE.includes(c)) depth -= 1;
    else if (c === sep && depth === 0) { parts.push(text.slice(start, i).trim()); start = i + 1; }
    i += 1;
  }
  parts.push(text.slice(start).trim());
  while (parts.length && parts[parts.length - 1] === "") parts.pop();
  return parts;
}

// Index of the bracket closing the one at `open`, or -1.
function matchingBracket(text, open) {
  let depth = 0, i = open;
  while (i < text.length) {
    const c = text[i];
    if (c === '"' || c === "'") { i = stringEnd(text, i); continue; }
    if (c === "#") { const eol = text.indexOf("\n", i); i = eol < 0 ? text.length : eol; continue; }
    if (OPEN.includes(c)) depth += 1;
    else if (CLOSE.includes(c) && --depth === 0) return i;
    i += 1;
  }
  return -1;
}

// Net bracket depth a line opens (a decorator whose arguments continue on the next lines).
function openBrackets(line) {
  let depth = 0, i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === '"' || c === "'") { i = stringEnd(line, i); continue; }
    if (c === "#") break;
    if (OPEN.includes(c)) depth += 1;
    else if (CLOSE.includes(c)) depth -= 1;
    i += 1;
  }
  return depth;
}

// ---- @triton.jit functions ----

const JIT = /^@\s*(triton\s*\.\s*)?jit\b/;
const TUNERS = /^@\s*(triton\s*\.\s*)?(autotune|heuristics)\b/;

// "x_ptr: tl.tensor = None" → {name, annotation, default}
function parseParam(text) {
  const parts = splitTopLevel(text, "=");
  const [head, ...rest] = text.includes("=") ? [parts[0], parts.slice(1).join("=")] : [text];
  const [name, ...annotation] = splitTopLevel(head, ":");
  if (!/^[A-Za-z_]\w*$/.test(name || "")) return null;   // `*`, `/`, `*args`, `**kwargs`
  const ann = annotation.join(":").trim();
  return { name, annotation: ann, default: rest.length ? rest[0].trim() : null, constexpr: /constexpr/.test(ann), comment: "", tuned: null };
}

// The parameters of the def whose "(" is at `open`, with the comments written beside them.
function parseParams(source, open) {
  const params = [];
  let current = "", depth = 0, pendingComments = [], i = open + 1;
  const finish = () => {
    const param = parseParam(current.trim());
    if (param) {
      param.comment = pendingComments.join(" ");
      params.push(param);
    } else if (pendingComments.length && params.length) {
      params[params.length - 1].comment += " " + pendingComments.join(" ");
    }
    current = "";
    pendingComments = [];
  };
  while (i < source.length) {
    const c = source[i];
    if (c === "#") {
      const eol = source.indexOf("\n", i);
      const comment = source.slice(i + 1, eol < 0 ? undefined : eol).trim();
      // A comment after a comma describes the parameter before it (Triton's tutorial style).
      if (current.trim()) pendingComments.push(comment);
      else if (params.length) params[params.length - 1].comment = `${params[params.length - 1].comment} ${comment}`.trim();
      i = eol < 0 ? source.length : eol;
      continue;
    }
    if (c === '"' || c === "'") { const end = stringEnd(source, i); current += source.slice(i, end); i = end; continue; }
    if (OPEN.includes(c)) depth += 1;
    if (CLOSE.includes(c)) {
      if (depth === 0) { finish(); break; }
      depth -= 1;
    }
    if (c === "," && depth === 0) finish();
    else current += c;
    i += 1;
  }
  return params;
}

// Names that @triton.autotune configs or @triton.heuristics supply, so the launch must not.
function tunedNames(decorators) {
  const tuned = new Map();
  for (const decorator of decorators) {
    const match = TUNERS.exec(decorator);
    if (!match) continue;
    for (const key of decorator.matchAll(/['"]([A-Za-z_]\w*)['"]\s*:/g)) tuned.set(key[1], match[2]);
  }
  return tuned;
}

// [{name, line, params: [{name, annotation, default, constexpr, comment, tuned}]}]
export function findJitFunctions(source) {
  const lines = source.split("\n");
  const lineStarts = [0];
  for (const line of lines) lineStarts.push(lineStarts[lineStarts.length - 1] + line.length + 1);
  const functions = [];
  let decorators = [];
  for (let i = 0; i < lines.length; i += 1) {
    const text = lines[i].trim();
    if (text.startsWith("@")) {
      let decorator = text, depth = openBrackets(lines[i]);
      while (depth > 0 && i + 1 < lines.length) {
        i += 1;
        decorator += "\n" + lines[i];
        depth += openBrackets(lines[i]);
      }
      decorators.push(decorator);
      continue;
    }
    const def = /^\s*def\s+([A-Za-z_]\w*)\s*\(/.exec(lines[i]);
    if (def && decorators.some((d) => JIT.test(d))) {
      const tuned = tunedNames(decorators);
      const params = parseParams(source, lineStarts[i] + def[0].length - 1);
      for (const param of params) param.tuned = tuned.get(param.name) || null;
      functions.push({ name: def[1], line: i + 1, params });
    }
    if (text && !text.startsWith("#")) decorators = [];
  }
  return functions;
}

// ---- input expressions ----

export const INITS = ["randn", "rand", "randint", "arange", "zeros", "ones", "empty"];
export const DTYPES = ["float32", "float16", "bfloat16", "float64", "float8_e4m3fn", "float8_e5m2",
                       "int8", "int16", "int32", "int64", "uint8", "bool"];
const SIMPLE_DIM = /^[\w.]+(\s*[-+*/]\s*[\w.]+)*$/;

// "64, 128", "(64, 128)", "64x128" → ["64", "128"]; null when it is not a shape.
export function parseShape(text) {
  let inner = text.trim();
  if (/^[([].*[)\]]$/s.test(inner)) inner = inner.slice(1, -1);
  if (/^\d+(\s*[x×]\s*\d+)+$/.test(inner)) inner = inner.replace(/\s*[x×]\s*/g, ",");
  const dims = splitTopLevel(inner);
  return dims.length && dims.every((d) => SIMPLE_DIM.test(d)) ? dims : null;
}

// (10,) for one dimension, so a tuple stays a tuple.
function shapeTuple(dims) {
  return dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(", ")})`;
}

// `torch.randn(98432, dtype=torch.float32)` → {init, dtype, dims, low, high}; null if not of that form.
export function parseInputExpression(expr) {
  const text = expr.trim();
  const head = /^torch\.([a-z]+)\(/.exec(text);
  if (!head || !INITS.includes(head[1])) return null;
  const init = head[1];
  const close = matchingBracket(text, head[0].length - 1);
  if (close < 0) return null;
  let reshape = null;
  const tail = text.slice(close + 1).trim();
  if (tail) {
    const call = /^\.reshape\(/.exec(tail);
    if (!call || init !== "arange" || matchingBracket(tail, call[0].length - 1) !== tail.length - 1) return null;
    reshape = parseShape(tail.slice(call[0].length, -1));
    if (!reshape) return null;
  }
  const positional = [];
  let dtype = init === "arange" || init === "randint" ? "int64" : "float32";
  for (const part of splitTopLevel(text.slice(head[0].length, close))) {
    const keyword = /^([A-Za-z_]\w*)\s*=(?!=)\s*(.+)$/s.exec(part);
    if (!keyword) { positional.push(part); continue; }
    const dt = /^torch\.(\w+)$/.exec(keyword[2].trim());
    if (keyword[1] !== "dtype" || !dt || !DTYPES.includes(dt[1])) return null;
    dtype = dt[1];
  }
  if (init === "arange") {
    if (positional.length !== 1 || !SIMPLE_DIM.test(positional[0])) return null;
    return { init, dtype, dims: reshape || [positional[0]] };
  }
  if (init === "randint") {
    const [low, high, size] = positional;
    if (positional.length !== 3 || !/^-?\d+$/.test(low) || !/^-?\d+$/.test(high)) return null;
    const dims = parseShape(size);
    return dims ? { init, dtype, dims, low: Number(low), high: Number(high) } : null;
  }
  const dims = positional.length === 1 ? parseShape(positional[0]) : parseShape(positional.join(","));
  return dims ? { init, dtype, dims } : null;
}

function product(dims) {
  return dims.map((d) => (/^[\w.]+$/.test(d) ? d : `(${d})`)).join(" * ");
}

export function inputExpression({ init, dtype, dims, low = 0, high = 16 }) {
  const dt = `dtype=torch.${dtype}`;
  if (init === "arange") {
    return dims.length === 1 ? `torch.arange(${dims[0]}, ${dt})` : `torch.arange(${product(dims)}, ${dt}).reshape(${dims.join(", ")})`;
  }
  if (init === "randint") return `torch.randint(${low}, ${high}, ${shapeTuple(dims)}, ${dt})`;
  return `torch.${init}(${dims.join(", ")}, ${dt})`;
}

// The logical lines of a source (a bracket or a string may run over several): each one's leading
// whitespace and whether it opens a block (ends in ":", a comment aside).
function logicalLines(source) {
  const lines = [];
  let depth = 0, start = 0, i = 0, code = "";
  const end = (at) => {
    const text = source.slice(start, at);
    if (code.trim()) lines.push({ indent: /^[ \t]*/.exec(text)[0], opens: /:\s*$/.test(code) });
    start = at + 1;
    code = "";
  };
  while (i < source.length) {
    const c = source[i];
    if (c === '"' || c === "'") { const j = stringEnd(source, i); code += "s"; i = j; continue; }
    if (c === "#") { while (i < source.length && source[i] !== "\n") i += 1; continue; }
    if (c === "\n") { if (depth <= 0 && !code.endsWith("\\")) end(i); i += 1; continue; }
    if (OPEN.includes(c)) depth += 1;
    else if (CLOSE.includes(c)) depth -= 1;
    code += c;
    i += 1;
  }
  end(source.length);
  return lines;
}

// One level of the indentation a source uses: the step most of its blocks take in from the line that
// opens them, "\t" for a tab; Python's four spaces where no block is indented yet.
export function indentationOf(source) {
  const lines = logicalLines(source);
  const steps = new Map();
  for (let i = 0; i + 1 < lines.length; i++) {
    const [outer, inner] = [lines[i].indent, lines[i + 1].indent];
    if (!lines[i].opens || inner.length <= outer.length || !inner.startsWith(outer)) continue;
    const step = inner.slice(outer.length);
    if (/^( +|\t)$/.test(step)) steps.set(step, (steps.get(step) || 0) + 1);
  }
  let best = "    ";
  for (const [step, count] of steps) if (count > (steps.get(best) || 0)) best = step;
  return best;
}
