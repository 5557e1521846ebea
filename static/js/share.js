// Taking the work away: Share saves the spec (and the selected program and tab) as a short link,
// Export .py downloads a standalone script that runs the same launch.

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

export function initShare({ button, popover, urlInput, note, getSpec, getUi }) {
  if (!button) return;
  const show = (text, bad = false) => {
    popover.hidden = false;
    urlInput.hidden = !urlInput.value;   // a failed share has no link to show
    note.textContent = text;
    note.classList.toggle("bad", bad);
  };
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const response = await fetch("/api/snippets", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ spec: getSpec(), ui: getUi() }),
      });
      if (!response.ok) {
        urlInput.value = "";
        show(`Could not share: ${await errorMessage(response)}`, true);
        return;
      }
      const { url } = await response.json();
      const absolute = new URL(url, location.origin).href;
      urlInput.value = absolute;
      history.replaceState(null, "", new URL(absolute).pathname);
      show(await copyText(absolute) ? "Link copied to the clipboard." : "Copy the link above.");
      urlInput.select();
    } catch (error) {
      show(`Could not share: ${error.message}`, true);
    } finally {
      button.disabled = false;
    }
  });
  document.addEventListener("pointerdown", (event) => {
    if (!popover.hidden && !popover.contains(event.target) && event.target !== button) popover.hidden = true;
  });
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") popover.hidden = true; });
}

function fileName(response, spec) {
  const match = /filename="?([^";]+)"?/.exec(response.headers.get("Content-Disposition") || "");
  return match ? match[1] : `${spec.kernel || "kernel"}.py`;
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
