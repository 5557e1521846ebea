// Building DOM nodes without an HTML string (so text from results is never parsed as markup).

// h("td", {class: "name", dataset: {output: "out"}}, "out", badgeNode)
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key in node && typeof value !== "string") node[key] = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  node.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

// What a run wants the reader to know (result.notes, timings.notes): a list, or nothing.
export function notesList(notes) {
  return notes && notes.length ? h("ul", { class: "notes" }, notes.map((note) => h("li", {}, note))) : null;
}

export function replaceChildren(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

// Waits `ms` after the last call before running `fn` (re-parsing while someone types).
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// Text whose `backticked` names are code, as the messages and hints write them: shown as code,
// without the backticks.
export function withCode(text) {
  return text.split(/`([^`\n]+)`/).map((part, i) => (i % 2 ? h("code", {}, part) : part));
}
