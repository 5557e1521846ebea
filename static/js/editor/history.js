// The last runs of this browser (source, spec, verdict), newest first, each one click from coming
// back: the History menu of the top bar. Kept in localStorage, never sent anywhere.
import { on } from "../shared/hub.js";
import { h, replaceChildren } from "../shared/dom.js";
import { phaseWords, timeAgo } from "../shared/format.js";

const KEY = "playground.runs";
export const MAX_RUNS = 25;

export function readRuns() {
  try {
    const runs = JSON.parse(localStorage.getItem(KEY) || "[]");
    return Array.isArray(runs) ? runs.filter((run) => run && run.spec && typeof run.spec.source === "string") : [];
  } catch {
    return [];
  }
}

// A run of the same spec as the newest replaces it (pressing Run again is not a new version).
function remember(entry) {
  const runs = readRuns();
  const same = runs.length && JSON.stringify(runs[0].spec) === JSON.stringify(entry.spec);
  try {
    localStorage.setItem(KEY, JSON.stringify([entry, ...runs.slice(same ? 1 : 0)].slice(0, MAX_RUNS)));
  } catch {
    // no storage: no history, the page works
  }
}

const VERDICTS = { ok: ["ok", "ok"], mismatch: ["mismatch", "bad"], error: ["error", "bad"] };

function verdict(run) {
  const [word, tone] = VERDICTS[run.status] || [run.status, ""];
  return h("span", { class: `badge ${tone}` }, run.status === "error" && run.phase ? phaseWords(run.phase) : word);
}

// button: opens the menu; menu: its popover; getSpec: the spec a run sends; onPick(run): load it.
// fromLink(): whether the page's code is someone else's (a run of it comes back marked so).
export function initHistory({ button, menu, getSpec, fromLink, onPick }) {
  if (!button) return;
  let sent = null;
  on("run-requested", () => { sent = { spec: getSpec(), page: location.pathname, fromLink: fromLink() }; });
  on("run-result", ({ result }) => {
    if (!sent) return;
    remember({ ...sent, at: Date.now(), status: result.status, phase: result.error?.phase ?? null });
    sent = null;
  });

  const close = () => { menu.hidden = true; button.setAttribute("aria-expanded", "false"); };
  const open = () => {
    const runs = readRuns();
    replaceChildren(menu, runs.length
      ? h("ol", { class: "history-list" }, runs.map((run, i) => h("li", {},
          h("button", { type: "button", class: "history-entry", dataset: { index: String(i) },
                        onclick: () => { close(); onPick(run); } },
            h("span", { class: "history-kernel" }, run.spec.kernel || (run.spec.mode === "script" ? "(program)" : "(no kernel)")), verdict(run),
            h("span", { class: "history-when" }, timeAgo(run.at)),
            h("span", { class: "history-page" }, run.page)))))
      : h("p", { class: "history-empty" }, "No runs yet in this browser. Each run is kept here, with its source and launch, to come back to."));
    menu.hidden = false;
    button.setAttribute("aria-expanded", "true");
    menu.querySelector("button")?.focus();
  };
  button.addEventListener("click", () => (menu.hidden ? open() : close()));
  document.addEventListener("pointerdown", (event) => {
    if (!menu.hidden && !menu.contains(event.target) && !button.contains(event.target)) close();
  });
  document.addEventListener("keydown", (event) => { if (event.key === "Escape" && !menu.hidden) { close(); button.focus(); } });
}
