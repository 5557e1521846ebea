// Making a class: the form of its settings; once made, its code, its join link and its teacher link
// (a secret to keep: it opens the dashboard from any browser), and a button to the dashboard.
import { h, replaceChildren } from "../shared/dom.js";
import { classForm } from "./class-form.js";

const body = document.querySelector("#class-body");

async function make(settings) {
  const response = await fetch("/api/classes", { method: "POST", headers: { "Content-Type": "application/json" },
                                                 body: JSON.stringify(settings) });
  return { ok: response.ok, answer: await response.json().catch(() => ({ error: { message: "The server did not answer." } })) };
}

function made(answer) {
  const link = (label, url) => h("p", { class: "class-made-link" }, h("b", {}, label), " ", h("a", { href: url }, url));
  replaceChildren(body, h("section", { class: "class-made", id: "class-made" },
    h("p", { class: "course-summary" }, "The class is made. Students join with the code ",
      h("span", { class: "badge", id: "class-made-code" }, answer.code), " on its page:"),
    link("Students' page:", answer.join_url),
    link("Your teacher link:", answer.teacher_url),
    h("p", { class: "class-push-note" }, "Keep the teacher link to yourself: it opens the class's dashboard in any browser, "
      + "and this browser remembers it for you."),
    h("a", { class: "button primary", href: answer.teacher_url, id: "class-made-open" }, "Open the dashboard")));
  return "";
}

const builtins = await fetch("/api/puzzles").then((r) => r.json()).then((found) => found.puzzles).catch(() => []);
replaceChildren(body, classForm({ title: "", puzzles: [], leaderboard: false }, builtins, {
  id: "class-new", legend: "Its title, its puzzles in order, and their due times", saveLabel: "Make the class",
  open: true, save: make, saved: made,
}));
