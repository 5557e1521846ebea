// What the launch form can tell before a run, all at once: arguments without a value or naming an
// input that does not exist, a grid or a reference that names what is gone, a dtype its init cannot
// make. Pure: the form (form.js) gives it the launch, the kernel's parameters and the source, and
// puts each problem on its field. The server checks everything again: this only saves round trips.
import { splitTopLevel } from "./pysource.js";

const FLOAT_DTYPES = ["float32", "float16", "bfloat16", "float64"];

// The identifiers an expression reads at its top level: not attributes (x.numel → x), not inside
// strings (meta['BLOCK'] → meta), not keyword argument names (dtype=...).
export function namesIn(expression) {
  const text = String(expression).replace(/(["'])(?:\\.|(?!\1).)*\1/g, '""');
  const names = [];
  for (const match of text.matchAll(/[A-Za-z_]\w*/g)) {
    const before = text.slice(0, match.index).trimEnd();
    const after = text.slice(match.index + match[0].length).trimStart();
    if (before.endsWith(".") || /[\d.]$/.test(text.slice(0, match.index))) continue;   // an attribute, or 1e-5's e
    if (after.startsWith("=") && !after.startsWith("==")) continue;
    names.push(match[0]);
  }
  return names;
}

// Names a lambda binds: "lambda meta: ..." → ["meta"].
function lambdaNames(expression) {
  return [...String(expression).matchAll(/lambda\s+([^:]*):/g)].flatMap((m) => splitTopLevel(m[1]).map((s) => s.trim()));
}

// Top-level names of the source a run may use in its expressions: functions, classes, assignments, imports.
export function sourceNames(source) {
  const names = new Set();
  for (const m of source.matchAll(/^(?:def|class)\s+([A-Za-z_]\w*)/gm)) names.add(m[1]);
  for (const m of source.matchAll(/^([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)/gm)) names.add(m[1]);
  for (const m of source.matchAll(/^(?:import\s+([\w.]+)(?:\s+as\s+(\w+))?|from\s+\S+\s+import\s+(.+))$/gm)) {
    if (m[2]) names.add(m[2]);
    else if (m[1]) names.add(m[1].split(".")[0]);
    else for (const part of m[3].replace(/[()]/g, "").split(",")) names.add(part.trim().split(/\s+as\s+/).pop());
  }
  return names;
}

// A dtype the init cannot make (torch refuses it, in its own words): a sentence, or null.
export function initDtypeProblem(init, dtype) {
  const float8 = dtype.startsWith("float8");
  if ((init === "randn" || init === "rand") && !FLOAT_DTYPES.includes(dtype)) {
    return `${init} draws floating-point numbers, not ${dtype}: pick a float dtype (${FLOAT_DTYPES.join(", ")}), `
      + `or the init randint for whole numbers`;
  }
  if (float8 && init !== "zeros" && init !== "ones" && init !== "empty") {
    return `${init} cannot make ${dtype} on the CPU: make it float16 or float32 here, or use zeros, ones or empty`;
  }
  if (dtype === "bool" && (init === "randint" || init === "arange")) {
    return `${init} cannot make bool: use randint with int8, or zeros / ones`;
  }
  return null;
}

// launch: {args: {name: text}, grid, inputs: [{name, init, dtype, mode, reference}]}; params: the
// kernel's parameters; source: the kernel's source; expressionNames: what else an expression may
// read (the server's schema: spec_schema.expression_names). → [{field, message}] in the form's order.
export function launchProblems({ args, grid, inputs }, params, source, expressionNames) {
  const problems = [];
  const inputNames = inputs.map((input) => input.name);
  const known = new Set([...expressionNames, ...inputNames, ...params.map((p) => p.name), ...sourceNames(source)]);
  const unknownIn = (expression) => [...new Set(namesIn(expression))].filter((n) => !known.has(n) && !lambdaNames(expression).includes(n));
  const inputList = inputNames.length ? ` (the inputs are ${inputNames.join(", ")})` : " (there are no inputs yet)";

  for (const param of params) {
    if (param.tuned) continue;
    const text = (args[param.name] ?? "").trim();
    if (!text) {
      problems.push({ field: `args.${param.name}`, message: `argument '${param.name}' has no value: give it an input, an expression or a literal` });
      continue;
    }
    const missing = unknownIn(text);
    if (missing.length) {
      problems.push({ field: `args.${param.name}`, message: `argument '${param.name}' is '${text}', but nothing is named ${missing.join(", ")}${inputList}`, missing });
    }
  }
  if (!grid.trim()) problems.push({ field: "grid", message: "the grid is empty: give the programs per axis, e.g. (triton.cdiv(n, meta['BLOCK']),)" });
  else {
    const missing = unknownIn(grid);
    if (missing.length) problems.push({ field: "grid", message: `the grid uses ${missing.join(", ")}, which is neither an input nor an argument of ${params.length ? "this kernel" : "the kernel"}` });
  }
  const seen = new Set();
  for (const input of inputs) {
    if (!/^[A-Za-z_]\w*$/.test(input.name)) problems.push({ field: `inputs.${input.name}`, part: "name", message: `'${input.name}' is not a Python name: letters, digits and _, not starting with a digit` });
    else if (seen.has(input.name)) problems.push({ field: `inputs.${input.name}`, part: "name", message: `two inputs are named ${input.name}` });
    seen.add(input.name);
    if (input.mode === "init") {
      const problem = initDtypeProblem(input.init, input.dtype);
      if (problem) problems.push({ field: `inputs.${input.name}`, part: "dtype", message: `${input.name}: ${problem}` });
    }
    if (input.reference.trim()) {
      const missing = unknownIn(input.reference);
      if (missing.length) problems.push({ field: `reference.${input.name}`, message: `the reference of ${input.name} uses ${missing.join(", ")}, which is not an input${inputList}` });
    }
  }
  return problems;
}
