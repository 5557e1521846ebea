// Taking the work away: Share saves the spec (and the selected program and tab) as a short link,
// Export .py downloads a standalone script that runs the same launch. Opening a link: the prompt
// that stands in for the output until the reader chooses to run someone else's code.
import { h } from "../shared/dom.js";
import { formatPid } from "../shared/format.js";

// The ids of the links this browser saved: opening one of those is opening our own code.
const OWN_KEY = "playground.ownSnippets";
const OWN_MAX = 500;

function ownSnippets() {
  try {
    const ids = JSON.parse(localStorage.getItem(OWN_KEY) || "[]");
    return Array.isArray(ids) ? ids.filter((id) => typeof id === "string") : [];
  } catch {
    return [];   // no storage (a private window's policy) or a value not ours: nothing is ours
  }
}

function rememberOwnSnippet(id) {
  try {
    const ids = [id, ...ownSnippets().filter((other) => other !== id)].slice(0, OWN_MAX);
    localStorage.setItem(OWN_KEY, JSON.stringify(ids));
  } catch {
    // without storage the link opens as anyone's would: with the prompt, its runs marked from_link
  }
}

export function isOwnSnippet(id) {
  return ownSnippets().includes(id);
}

const PANE_NAMES = { diagram: "Diagram", timings: "Timings", ir: "IR" };

// What a shared link shows instead of its output until Run: its title and description when the
// sharer gave them, whose code it is, and one button.
export function linkPrompt({ own, pane, pid, onRun, title = null, description = null }) {
  const program = pane === "diagram" && pid ? ` on program ${formatPid(pid)}` : "";
  const then = PANE_NAMES[pane] ? h("p", { class: "link-prompt-then" }, `Once it has run, the ${PANE_NAMES[pane]} tab opens${program}, as it was shared.`) : null;
  return h("div", { class: "link-prompt", id: "link-prompt", role: "region", "aria-label": "Shared kernel" },
    h("div", { class: "link-prompt-card" },
      h("div", { class: "link-prompt-title" }, title || (own ? "A kernel you shared" : "A shared kernel"), h("span", { class: "link-prompt-badge" }, "not run yet")),
      description ? h("p", { class: "link-prompt-description" }, description) : null,
      h("p", { class: "link-prompt-what" }, own
        ? "You saved this link from this browser. Nothing runs until you ask."
        : "Running it executes Python that someone else wrote, in a sandbox on the server."),
      own ? null : h("p", { class: "link-prompt-hint" }, "Read the kernel before you run it."),
      h("button", { type: "button", class: "button primary link-prompt-run", onclick: onRun },
        h("span", { class: "run-icon", "aria-hidden": "true" }), "Run this shared kernel"),
      then));
}

async function errorMessage(response) {
  try {
    const body = await response.json();
    return (body.error && body.error.message) || `${response.status} ${response.statusText}`;
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;   // no clipboard without a secure context or permission: the link is still shown
  }
}

// isOurs(spec): whether a link to `spec` is this browser's own (not a page opened from someone else's link).
// The HTML that embeds a link in another page: compact (?embed=1), in a frame of a size where the
// source and the output both fit (tests/test_page_embed.py checks it at 700 x 600).
export const EMBED_SIZE = { width: 700, height: 600 };

export function embedSnippet(url, kernel) {
  const title = `Triton Playground: ${kernel || "kernel"}`.replace(/[<>&"]/g, "");
  return `<iframe src="${url}?embed=1" width="${EMBED_SIZE.width}" height="${EMBED_SIZE.height}" `
    + `style="border: 0" title="${title}" loading="lazy"></iframe>`;
}

// onShared(): the page's address is now the link's. embedInput: where the embed snippet goes.
// about: the popover's form of a title and description the link carries ({form, title, description}).
export function initShare({ button, popover, urlInput, note, embedInput, about, getSpec, getUi, isOurs = () => true, onShared = () => {} }) {
  if (!button) return;
  const show = (text, bad = false) => {
    popover.hidden = false;
    urlInput.hidden = !urlInput.value;   // a failed share has no link to show
    note.textContent = text;
    note.classList.toggle("bad", bad);
  };
  const described = () => {
    const title = about?.title.value.trim(), description = about?.description.value.trim();
    return { ...(title ? { title } : {}), ...(description ? { description } : {}) };
  };
  const save = async () => {
    button.disabled = true;
    const spec = getSpec();
    try {
      const response = await fetch("/api/snippets", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ spec, ui: { ...getUi(), ...described() } }),
      });
      if (!response.ok) {
        urlInput.value = "";
        show(`Could not share: ${await errorMessage(response)}`, true);
        return;
      }
      const { id, url } = await response.json();
      // A link to someone else's unedited code stays theirs, even when saved again from here.
      if (isOurs(spec)) rememberOwnSnippet(id);
      const absolute = new URL(url, location.origin).href;
      urlInput.value = absolute;
      history.replaceState(null, "", new URL(absolute).pathname);
      onShared();
      if (embedInput) {
        embedInput.value = embedSnippet(absolute, spec.kernel);
        embedInput.closest("label").hidden = false;
      }
      show(await copyText(absolute) ? "Link copied to the clipboard." : "Copy the link above.");
      urlInput.select();
    } catch (error) {
      show(`Could not share: ${error.message}`, true);
    } finally {
      button.disabled = false;
    }
  };
  button.addEventListener("click", save);
  // A title or description makes another link (links are content-addressed): saved again on request.
  about?.form.addEventListener("submit", (event) => { event.preventDefault(); save(); });
  // Opened on request: folded, the popover keeps clear of the run's verdict under the top bar.
  about?.toggle.addEventListener("click", () => {
    about.form.hidden = !about.form.hidden;
    about.toggle.setAttribute("aria-expanded", String(!about.form.hidden));
    if (!about.form.hidden) about.title.focus();
  });
  embedInput?.addEventListener("focus", () => embedInput.select());
  document.addEventListener("pointerdown", (event) => {
    if (!popover.hidden && !popover.contains(event.target) && event.target !== button) popover.hidden = true;
  });
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") popover.hidden = true; });
}

function fileName(response, spec) {
  const match = /filename="?([^";]+)"?/.exec(response.headers.get("Content-Disposition") || "");
  return match ? match[1] : `${spec.kernel || (spec.mode === "script" ? "program" : "kernel")}.py`;
}

export function initExport({ button, getSpec, onError }) {
  if (!button) return;
  button.addEventListener("click", async () => {
    const spec = getSpec();
    const response = await fetch("/api/export", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ spec }),
    });
    if (!response.ok) {
      onError(`Could not export: ${await errorMessage(response)}`);
      return;
    }
    const link = document.createElement("a");
    link.href = URL.createObjectURL(await response.blob());
    link.download = fileName(response, spec);
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  });
}
