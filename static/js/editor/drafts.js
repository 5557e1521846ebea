// Work is never lost without a word: the page's state is saved in this browser as it is edited, one
// draft per address (so Back, a reload, or a link saved by Share each find their own), offered back
// with a Restore / Discard choice on return; anything that would replace unsaved edits asks first.
import { on } from "../shared/hub.js";
import { h, debounce } from "../shared/dom.js";
import { timeAgo } from "../shared/format.js";

const PREFIX = "playground.draft:";
const MAX_DRAFTS = 30;   // the oldest beyond this are dropped

function keyOf(path) {
  return PREFIX + path;
}

export function readDraft(path) {
  try {
    const draft = JSON.parse(localStorage.getItem(keyOf(path)) || "null");
    return draft && typeof draft === "object" && draft.spec && typeof draft.spec.source === "string" ? draft : null;
  } catch {
    return null;
  }
}

function writeDraft(path, draft) {
  try {
    localStorage.setItem(keyOf(path), JSON.stringify(draft));
    const drafts = Object.keys(localStorage).filter((key) => key.startsWith(PREFIX))
      .map((key) => [key, readDraft(key.slice(PREFIX.length))?.savedAt ?? 0]).sort((a, b) => b[1] - a[1]);
    for (const [key] of drafts.slice(MAX_DRAFTS)) localStorage.removeItem(key);
  } catch {
    // no storage (a private window's policy, or full): the page works, unsaved
  }
}

function dropDraft(path) {
  try { localStorage.removeItem(keyOf(path)); } catch { /* nothing was saved */ }
}

// getSpec/getUi: the page's state now; setSpec(spec, ui): load one. banner: where the restore offer goes.
export function initDrafts({ getSpec, getUi, setSpec, banner, form }) {
  let clean = null;     // the spec as this address gives it: edits are what differs from it
  let address = null;   // the address the state on screen belongs to (Back changes location first)

  const current = () => JSON.stringify(getSpec());
  const isDirty = () => clean !== null && current() !== clean;
  const save = () => {
    if (clean === null) return;
    if (isDirty()) writeDraft(address, { spec: getSpec(), ui: getUi(), savedAt: Date.now() });
    else dropDraft(address);
  };
  const saveSoon = debounce(save, 400);

  on("source-changed", saveSoon);
  form.addEventListener("input", saveSoon);
  form.addEventListener("change", saveSoon);
  on("run-requested", save);
  window.addEventListener("pagehide", save);

  const offer = (draft) => {
    const close = () => banner.replaceChildren();
    banner.replaceChildren(h("div", { class: "draft-offer", role: "status" },
      h("span", {}, h("b", {}, "Unsaved edits"), ` from ${timeAgo(draft.savedAt)} on this page.`),
      h("button", { type: "button", class: "button small primary", onclick: () => { close(); setSpec(draft.spec, draft.ui); save(); } }, "Restore"),
      h("button", { type: "button", class: "button small", onclick: () => { close(); dropDraft(address); } }, "Discard")));
  };

  return {
    isDirty,
    // The page now shows what its address gives (just opened, or just shared): no edits yet.
    markClean() { clean = current(); address = location.pathname; },
    // The same state now lives at another address that gives the same spec (a fork of a link).
    moved() { dropDraft(address); address = location.pathname; save(); },
    // On opening: this address's draft, if it differs from what the address gives, is offered back.
    offerRestore() {
      const draft = readDraft(address);
      if (draft && JSON.stringify(draft.spec) !== clean) offer(draft);
    },
    // Before `what` replaces the page's state: true to go on (no edits, or the reader agreed).
    // The edits stay saved under this address, where Back finds them.
    confirmReplace(what) {
      save();
      return !isDirty() || window.confirm(`Replace your edits with ${what}?\n\nThey stay saved in this browser: going Back to this page offers them again.`);
    },
    save,
  };
}
