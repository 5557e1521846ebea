// What a class's teacher pushes to a student's open pages (the class_message event): a banner above
// the editor, a hint or a link, until dismissed.
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

// What a class's teacher pushed to this student's pages: a hint, or a link, above the editor until dismissed.
export function showClassMessage(message) {
  const link = message.link ? pushedLink(message.link) : null;
  const banner = h("div", { class: "class-message", role: "status" }, h("b", {}, "From your teacher: "),
    message.link === message.text ? null : message.text, link && " ", link,
    h("button", { type: "button", class: "button small", onclick: () => banner.remove() }, "Dismiss"));
  document.body.prepend(banner);
}
