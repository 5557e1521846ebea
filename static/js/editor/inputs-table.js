// The launch form's inputs table: one row per input tensor, its name, shape and dtype and how it is
// made (an init of pysource.js's, or a free torch expression), and the reference it is checked against.
import { h, replaceChildren } from "../shared/dom.js";
import { parseInputExpression, inputExpression, parseShape, INITS, DTYPES } from "./pysource.js";

const EXPRESSION = "expr";         // the init select's entry for a free torch expression
let rows = [];                     // the rows, each {name, mode, init, dtype, shape, low, high, expr, reference, el}
let tbody = null;
let namesChanged = () => {};       // an input was added, removed or renamed

function rowFromSpec(name, expr, reference) {
  const parsed = parseInputExpression(expr);
  const row = { name, reference: reference || "", expr, mode: parsed ? "init" : EXPRESSION, original: null,
                init: "randn", dtype: "float32", shape: "1024", low: 0, high: 16 };
  if (parsed) {
    Object.assign(row, parsed, { shape: parsed.dims.join(", ") });
    row.original = { expr, key: fieldsKey(row) };
  }
  return row;
}

function rowFields(row) {
  const dims = parseShape(row.shape);
  return dims ? { init: row.init, dtype: row.dtype, dims, low: row.low, high: row.high } : null;
}

function fieldsKey(row) {
  return JSON.stringify(rowFields(row));
}

// The row's torch expression; a spec's own text is kept while the fields still say the same.
export function rowExpression(row) {
  if (row.mode === EXPRESSION) return row.expr.trim();
  if (row.original && row.original.key === fieldsKey(row)) return row.original.expr;
  const fields = rowFields(row);
  return fields ? inputExpression(fields) : "";
}

function selectOf(values, current, attrs) {
  const options = values.includes(current) || current === undefined ? values : [...values, current];
  return h("select", attrs, options.map((v) => h("option", { value: v, selected: v === current }, String(v))));
}

function initSelect(row) {
  const select = selectOf(INITS, row.mode === EXPRESSION ? undefined : row.init, {
    "aria-label": `init of ${row.name}`,
    onchange: (event) => switchInit(row, event.target.value),
  });
  select.append(h("option", { value: EXPRESSION, selected: row.mode === EXPRESSION }, "expression…"));
  return select;
}

function switchInit(row, init) {
  if (init === EXPRESSION) {
    row.expr = rowExpression(row);
    row.mode = EXPRESSION;
  } else {
    if (row.mode === EXPRESSION) {
      const parsed = parseInputExpression(row.expr);
      if (parsed) Object.assign(row, parsed, { shape: parsed.dims.join(", ") });
    }
    row.mode = "init";
    row.init = init;
    if ((init === "randn" || init === "rand") && row.dtype.startsWith("int")) row.dtype = "float32";
  }
  renderRow(row);
}

function validateNames() {
  const seen = new Set();
  for (const row of rows) {
    const ok = /^[A-Za-z_]\w*$/.test(row.name) && !seen.has(row.name);
    seen.add(row.name);
    row.el.querySelector(".cell-name input").classList.toggle("invalid", !ok);
  }
}

function renderRow(row) {
  const text = (field, attrs = {}) => h("input", {
    spellcheck: false, value: row[field], ...attrs,
    oninput: (event) => {
      row[field] = event.target.value;
      if (field === "name") {
        row.el.dataset.input = row.name;
        relabel(row);
        validateNames();
        namesChanged();
      }
      if (field === "shape") event.target.classList.toggle("invalid", !parseShape(row.shape));
    },
  });
  const cells = row.mode === EXPRESSION
    ? [h("td", { class: "cell-expr", colspan: 2 }, text("expr", { placeholder: "torch expression, e.g. torch.randn(4096, device='cpu')", "aria-label": `expression of ${row.name}` }))]
    : [
        h("td", { class: "cell-shape" }, text("shape", { placeholder: "e.g. 1024 or 64, 128", "aria-label": `shape of ${row.name}` })),
        h("td", { class: "cell-dtype" }, selectOf(DTYPES, row.dtype, { "aria-label": `dtype of ${row.name}`, onchange: (e) => { row.dtype = e.target.value; } })),
      ];
  const tr = h("tr", { dataset: { input: row.name } },
    h("td", { class: "cell-name" }, text("name", { "aria-label": "input name" })),
    cells,
    h("td", { class: "cell-init" }, initSelect(row)),
    h("td", { class: "cell-ref" }, text("reference", { placeholder: "not checked", "aria-label": `reference for ${row.name}` })),
    h("td", {}, h("button", { type: "button", class: "button ghost small remove", title: "Remove this input", onclick: () => removeRow(row) }, "×")),
  );
  if (row.el) row.el.replaceWith(tr);
  row.el = tr;
  relabel(row);
}

// The row's controls are named after its input ("shape of x"): a rename renames them.
function relabel(row) {
  const labels = { ".cell-shape input": "shape", ".cell-expr input": "expression", ".cell-dtype select": "dtype",
                   ".cell-init select": "init", ".cell-ref input": "reference" };
  for (const [selector, what] of Object.entries(labels)) row.el.querySelector(selector)?.setAttribute("aria-label", `${what} of ${row.name}`);
  row.el.querySelector(".cell-name input").setAttribute("aria-label", `name of input ${row.name}`);
  row.el.querySelector(".remove").setAttribute("aria-label", `Remove input ${row.name}`);
}

function renderRows() {
  rows.forEach((row) => { row.el = null; renderRow(row); });
  replaceChildren(tbody, rows.map((row) => row.el));
  validateNames();
}

function unusedName() {
  const names = new Set(rows.map((r) => r.name));
  for (const candidate of ["x", "y", "z", "w", "out"]) if (!names.has(candidate)) return candidate;
  let n = 1;
  while (names.has(`t${n}`)) n += 1;
  return `t${n}`;
}

// name: the input a pointer argument asked for (an output, empty, when its name says out); else a
// free name for a new random input.
export function addRow(name = null) {
  const last = rows[rows.length - 1];
  const shape = last && last.mode === "init" ? last.shape : "1024";
  const init = name && /^out|out$|^o$|^y$|^result/.test(name) ? "empty" : "randn";
  const row = rowFromSpec(name || unusedName(), `torch.${init}(${shape})`, "");
  row.original = null;
  rows.push(row);
  renderRow(row);
  tbody.append(row.el);
  validateNames();
  namesChanged();
  if (!name) row.el.querySelector(".cell-name input").select();
}

function removeRow(row) {
  rows = rows.filter((r) => r !== row);
  row.el.remove();
  validateNames();
  namesChanged();
}

// The rows as the form reads them (the launch's inputs, the estimate's sizes, the checks).
export function inputRows() {
  return rows;
}

// A spec's inputs and references as rows, in its order.
export function loadInputs(inputs, reference) {
  rows = Object.entries(inputs).map(([name, expr]) => rowFromSpec(name, expr, reference[name]));
  renderRows();
}

// body: the table's tbody; onNamesChanged(): the inputs' names changed (the arguments suggest them).
export function initInputsTable(body, onNamesChanged) {
  tbody = body;
  namesChanged = onNamesChanged;
}
