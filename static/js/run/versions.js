// Versions, in the Compare tab: the page's spec run once on each Triton version the server runs
// (options.triton), side by side: the verdict, the kernel time (a GPU's; the interpreter's wall
// clock is no speed to compare), registers, spills and shared memory, PTX and SASS size, the
// warnings each raised, and a diff of one IR stage between two versions. The runs go through
// POST /api/run (provenance.js says whose code it is, as for every run), apart from the page's own.
import { h, replaceChildren } from "../shared/dom.js";
import { formatBytes, formatMs } from "../shared/format.js";
import { postRun } from "../shared/provenance.js";
import { RESOURCES, unifiedDiff, withoutRenumbering } from "./compare-model.js";

const DIFF_STAGES = ["ttir", "ttgir", "llir", "ptx", "sass"];
let versions = [];   // GET /api/spec's tritons: [{version, released, default, live}]
let getSpec = null;
let panel = null;
let runs = null;     // {version: result | {pending: true}} of the last comparison
let pair = null;     // [version, version]: the IR diff's two
let stage = "ttgir";

function live() {
  return versions.filter((v) => v.live).map((v) => v.version);
}

// A run's verdict in a few words: ok, its check's mismatch, or its error's message.
export function verdictOf(result) {
  if (!result) return { kind: "none", words: "—" };
  if (result.pending) return { kind: "pending", words: "running…" };
  if (result.status === "ok") return { kind: "ok", words: "✓ ran" + (result.check ? ", matches the reference" : "") };
  if (result.status === "mismatch") return { kind: "bad", words: "✗ differs from the reference" };
  return { kind: "bad", words: `✗ ${result.error?.message ?? "failed"}` };
}

// The kernel's time, or why there is none to compare.
export function timeOf(result) {
  const ms = result?.timings?.kernel_ms;
  if (result?.device?.kind === "interpreter") return "interpreter: no speed to compare (a GPU times it)";
  return ms?.median ? formatMs(ms.median) : "—";
}

function irOf(result) {
  return result?.ir && !result.ir.error ? result.ir : null;
}

// The size of an IR stage's text, in bytes and lines; "—" where the run has none.
export function sizeOf(result, key) {
  const text = irOf(result)?.[key];
  if (typeof text !== "string" || !text) return "—";
  return `${formatBytes(new TextEncoder().encode(text).length)}, ${text.split("\n").length} lines`;
}

function warningsOf(result) {
  const warnings = result?.warnings;
  if (!Array.isArray(warnings) || result.pending) return "—";
  if (!warnings.length) return "none";
  return h("ul", { class: "versions-warnings" }, warnings.map((w) => h("li", {},
    `${w.category}: ${w.message}${w.line ? ` (line ${w.line})` : w.where ? ` (${w.where})` : ""}${w.count > 1 ? ` ×${w.count}` : ""}`)));
}

function table(shown) {
  const cell = (version, content, cls = "") => h("td", { class: cls, dataset: { version } }, content);
  const row = (label, id, each) => h("tr", { dataset: { row: id } }, h("th", {}, label), shown.map((v) => each(v, runs[v])));
  return h("table", { class: "compare-table versions-table", id: "versions-table" },
    h("thead", {}, h("tr", {}, h("th", {}), shown.map((v) => h("th", { class: "mono" }, `Triton ${v}`)))),
    h("tbody", {},
      row("verdict", "verdict", (v, r) => { const verdict = verdictOf(r); return cell(v, verdict.words, `verdict-${verdict.kind}`); }),
      row("kernel time (median)", "time", (v, r) => cell(v, r?.pending ? "…" : timeOf(r))),
      RESOURCES.map(([key, label]) => row(label, key, (v, r) => cell(v, irOf(r)?.[key] ?? "—"))),
      row("PTX size", "ptx", (v, r) => cell(v, sizeOf(r, "ptx"))),
      row("SASS size", "sass", (v, r) => cell(v, sizeOf(r, "sass"))),
      row("warnings", "warnings", (v, r) => cell(v, warningsOf(r)))));
}

function versionSelect(index, shown) {
  return h("select", { class: "mono", dataset: { side: String(index) }, "aria-label": index ? "to version" : "from version",
                       onchange: (event) => { pair[index] = event.target.value; render(); } },
    shown.map((v) => h("option", { value: v, selected: v === pair[index] }, v)));
}

function irDiff(shown) {
  const [a, b] = pair.map((v) => irOf(runs[v]));
  const present = DIFF_STAGES.filter((s) => a?.[s] || b?.[s]);
  const head = h("div", { class: "compare-stages" }, versionSelect(0, shown), " → ", versionSelect(1, shown),
    present.map((s) => h("button", { type: "button", class: `button small ${s === stage ? "primary" : ""}`, dataset: { stage: s },
                                     onclick: () => { stage = s; render(); } }, s.toUpperCase())));
  if (!a || !b) return h("div", {}, head, h("p", { class: "hint" }, "No IR of both versions to compare (a run failed, or is under way)."));
  if (!present.includes(stage)) stage = present[0];
  const diff = unifiedDiff(a[stage] || "", b[stage] || "", 3, withoutRenumbering);
  const body = diff.tooLarge ? h("p", { class: "hint" }, "The two IRs differ in too many lines to show as a diff.")
    : !diff.hunks.length ? h("p", { class: "hint", id: "versions-ir-same" }, `The ${stage.toUpperCase()} is the same on both versions.`)
    : h("pre", { class: "compare-diff", id: "versions-ir-diff" }, diff.hunks.flatMap((hunk) => [h("div", { class: "hunk" }, hunk.header),
        ...hunk.lines.map((l) => h("div", { class: `diff-line ${{ "+": "add", "-": "del", " ": "same" }[l.kind]}` }, `${l.kind} ${l.text}`))]));
  return h("div", {}, head, h("p", { class: "hint" }, diff.tooLarge ? "" : `${stage.toUpperCase()} of ${pair[0]} → ${pair[1]}: `
    + `${diff.removed} line(s) removed, ${diff.added} added (not counting renumbered #loc ids and %value_N names).`), body);
}

async function compare() {
  const spec = getSpec();
  const shown = live();
  runs = Object.fromEntries(shown.map((v) => [v, { pending: true }]));
  pair = [shown[0], shown[shown.length - 1]];
  render();
  await Promise.all(shown.map(async (version) => {
    // The IR on: each version's compile is what the comparison is about.
    const asked = { ...spec, options: { ...spec.options, triton: version, ir: true, sweep: null } };
    try {
      const response = await postRun(asked);
      const body = await response.json();
      runs[version] = body.error && !body.status ? { status: "error", error: body.error } : body;
    } catch (e) {
      runs[version] = { status: "error", error: { message: `the run could not be sent (${e.message})` } };
    }
    render();
  }));
}

function render() {
  const shown = live();
  const pending = runs && Object.values(runs).some((r) => r.pending);
  const button = h("button", { type: "button", class: "button small primary", id: "versions-button",
                               disabled: shown.length < 2 || pending || getSpec().mode === "script", onclick: compare },
    pending ? "Running on each version…" : `Run on each version (${shown.join(", ")})`);
  const hint = shown.length < 2
    ? `This server runs one Triton version${shown.length ? ` (${shown[0]})` : ""}: its operator adds others with TRITON_VERSIONS.`
    : getSpec().mode === "script" ? "A script's launches compare across versions from a form run of one (its Form button)."
    : "The same spec, once on each version the server runs, side by side; the IR's diff between two of them.";
  const sections = [h("div", { class: "compare-head" }, button, h("span", { class: "hint", id: "versions-hint" }, hint))];
  const ran = runs ? Object.keys(runs) : [];
  if (ran.length) sections.push(table(ran), h("h4", {}, "IR diff"), irDiff(ran));
  replaceChildren(panel, h("div", { class: "compare versions" }, sections));
}

// host: where the comparison shows (the Compare tab's); spec: () => the page's spec; tritons: GET /api/spec's.
export function initVersions({ host, spec, tritons }) {
  panel = host;
  getSpec = spec;
  versions = tritons || [];
  render();
}
