// What a class's teacher pushed to this student: each message in a stack at the top of the page,
// every one readable, kept by the server (GET /api/inbox) until the student dismisses it
// (DELETE /api/inbox/<id>), which takes it off their other open pages too.
import { h } from "../shared/dom.js";

// A pushed link as the browser reads it: this site's opens here; another site's (its host shown) in a
// new tab, without this page as its opener; anything else (not http/https) is no link.
function pushedLink(link) {
  let url;
  try { url = new URL(link, window.location.href); } catch { return null; }
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  if (url.origin === window.location.origin) return h("a", { href: url.href, class: "class-message-link" }, "open");
  return h("a", { href: url.href, class: "class-message-link", target: "_blank", rel: "noopener noreferrer" },
    `open (${url.host})`);
}

// The page's own place for them (the class's page has one), else a stack over the top of the page.
function stack() {
  return document.querySelector("#class-messages") || document.body.appendChild(
    h("div", { class: "class-messages", id: "class-messages", role: "region", "aria-label": "From your teacher" }));
}

function shown(id) {
  return [...document.querySelectorAll(".class-message")].find((node) => node.dataset.id === String(id));
}

function forget(id) {
  shown(id)?.remove();
}

async function dismiss(id) {
  forget(id);
  await fetch(`/api/inbox/${id}`, { method: "DELETE" }).catch(() => null);  // still kept: it shows again next time
}

function show(message) {
  if (shown(message.id)) return;  // heard live and read from the inbox both
  const link = message.link ? pushedLink(message.link) : null;
  stack().append(h("div", { class: "class-message", role: "status", dataset: { id: String(message.id) } },
    h("b", {}, "From your teacher: "),
    h("span", { class: "class-message-text" }, message.link === message.text ? null : message.text, link && " ", link),
    h("button", { type: "button", class: "button small", onclick: () => dismiss(message.id) }, "Dismiss")));
}

// Shows what the inbox keeps and what arrives on `socket`; the inbox is read again at each
// (re)connection, so a push while the page was away is not missed. onInbox({class, messages}): the
// inbox's answer, each time it is read (class: the class this session's student is in, or null).
export function followInbox(socket, onInbox = () => {}) {
  socket.on("class_message", show);
  socket.on("class_message_seen", ({ id }) => forget(id));
  socket.on("connect", async () => {
    const answer = await fetch("/api/inbox").then((r) => (r.ok ? r.json() : null)).catch(() => null);
    if (!answer) return;
    answer.messages.forEach(show);
    onInbox(answer);
  });
}
