// The Triton version picker beside num_warps and num_stages: the versions the server runs
// (GET /api/spec's `tritons`: release date, the default, whether a worker of it is live), the
// chosen one's release date, and a note when a run's error says the kernel uses something the
// chosen version lacks (its field is options.triton: the compile's own error, naming the version).
import { on } from "../shared/hub.js";
import { h, replaceChildren } from "../shared/dom.js";

let versions = [];   // [{version, released, default, live}]
let els = null;
let named = null;    // the version the loaded spec named (null: the server's default), kept as it was

function defaultVersion() {
  return versions.find((v) => v.default)?.version ?? null;
}

function label(v) {
  return `${v.version}${v.default ? " (default)" : ""}${v.live ? "" : " — no worker"}`;
}

// The form's picker and the script's show one choice: a change in either is the other's too.
function chosen(value) {
  for (const select of els.selects) select.value = value;
  showReleased();
}

function showReleased() {
  const chosen = versions.find((v) => v.version === els.select.value);
  els.released.textContent = chosen?.released ? `released ${chosen.released}` : "";
}

// options.triton of a loaded spec: the version it names (one the server lacks is shown as such).
export function setTriton(options) {
  named = options.triton ?? null;
  const current = named ?? defaultVersion();
  const known = versions.some((v) => v.version === current);
  const shown = known || current === null ? versions : [...versions, { version: current, released: null, live: false }];
  for (const select of els.selects) {
    replaceChildren(select, shown.map((v) => h("option", { value: v.version, selected: v.version === current },
      known || v.version !== current ? label(v) : `${v.version} — not on this server`)));
  }
  if (current !== null) chosen(current);
  showNote(null);
}

// The chosen version as options.triton: null (the server's default) unless the spec named one or a
// version other than the default is chosen.
export function readTriton() {
  const chosen = els.select.value || null;
  return named === null && chosen === defaultVersion() ? null : chosen;
}

function showNote(error) {
  const lacking = error?.field === "options.triton" ? error.message : null;
  const others = versions.filter((v) => v.live && v.version !== els.select.value).map((v) => v.version);
  els.note.hidden = !lacking;
  els.note.textContent = lacking ? `${lacking.replace(/\.?$/, ".")}${others.length ? ` Try ${others.join(" or ")}.` : ""}` : "";
}

// root: the launch pane (the form's picker and the script's); specSchema: the server's schema (its `tritons`).
export function initTritonPicker(root, specSchema) {
  versions = specSchema.tritons || [];
  els = { select: root.querySelector("#opt-triton"), selects: [...root.querySelectorAll(".triton-select")],
          released: root.querySelector("#triton-released"), note: root.querySelector("#triton-note") };
  for (const select of els.selects) {
    select.closest("label").hidden = versions.length === 0;
    select.addEventListener("change", () => chosen(select.value));
  }
  on("run-result", ({ result }) => showNote(result.error));
  on("run-started", () => showNote(null));
  return els.select;
}
