// The card for a failed run (or a failed IR compile, under its own title). It reads the error's
// fields, never its text: the phase, the type, where (its source line and its program, each a
// link to see it), the message, then the plain-words hint.
import { emit } from "../shared/hub.js";
import { h, withCode } from "../shared/dom.js";
import { formatPid, phaseWords } from "../shared/format.js";

// The card's head names the type: a message that starts with it again does not repeat it.
function messageText(error) {
  const message = error.message || "(no message)";
  return error.type && message.startsWith(`${error.type}: `) ? message.slice(error.type.length + 2) : message;
}

export function errorCard(error, title = phaseWords(error.phase)) {
  const hasPid = error.pid !== null && error.pid !== undefined;
  const where = h("span", { class: "where" },
    error.line ? h("button", { type: "button", class: "link-button", title: "Show this line in the editor",
                                onclick: () => emit("jump-to-line", { line: error.line }) }, `line ${error.line}`) : null,
    hasPid ? h("button", { type: "button", class: "link-button", title: "Show this program in the diagram",
                           onclick: () => emit("show-program", { pid: error.pid }) }, `program ${formatPid(error.pid)}`) : null);
  return h("div", { class: "card error-card" },
    h("div", { class: "card-head" },
      h("span", { class: "phase" }, title),
      error.type && error.type !== "RunError" ? h("span", { class: "type" }, error.type) : null,  // RunError names no cause
      where),
    h("pre", {}, withCode(messageText(error))),
    error.hint ? h("p", { class: "hint" }, withCode(error.hint)) : null);
}
