// A class's page: its teacher's dashboard (a row per student, a column per puzzle, live; failures
// grouped by how they fail; a push to the class or to a group; the form that edits the class), or,
// for anyone else, the form to join it and the class's puzzles. `?preview` shows its teacher the
// students' page, joining nobody.
import { h, replaceChildren } from "../shared/dom.js";
import { formatMoment, formatMs, plural } from "../shared/format.js";
import { classForm } from "./class-form.js";

const page = document.querySelector("#class-page");
const code = page.dataset.code;
const body = document.querySelector("#class-body");
const previewing = new URLSearchParams(window.location.search).has("preview");

async function api(path, options = {}) {
  const response = await fetch(`/api/classes/${code}${path}`, {
    ...options, headers: { "Content-Type": "application/json", ...(options.headers || {}) },
  });
  const answer = await response.json().catch(() => ({}));
  return { ok: response.ok, status: response.status, answer };
}

function cell(state, student, puzzle) {
  const open = state.state === "not started" ? null : () => showLatest(student, puzzle);
  if (state.state === "solved") {
    return h("td", { class: "class-cell solved", title: `solved ${formatMoment(state.solved_at)}`, onclick: open },
      `solved in ${plural(state.tries_to_solve, "try", "tries")}`);
  }
  if (state.state === "trying") {
    return h("td", { class: "class-cell trying", onclick: open }, `trying (${state.attempts})`,
      state.last && state.last.failing ? h("span", { class: "class-failing" }, `fails ${state.last.failing}`) : null);
  }
  return h("td", { class: "class-cell" }, "not started");
}

// A student's latest kernel of a puzzle, below the table, with a link that opens it in the editor
// (a shared snippet of the puzzle's launch with that source: Run there draws its diagram).
async function showLatest(student, puzzle) {
  const { ok, answer } = await api(`/students/${student.id}/latest/${puzzle.name}`);
  const pane = document.querySelector("#class-latest");
  if (!ok) { replaceChildren(pane, h("p", {}, answer.error.message)); return; }
  const openIt = async () => {
    const response = await fetch("/api/snippets", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ spec: answer.spec, ui: { pane: "diagram", pid: null } }) });
    const made = await response.json();
    if (response.ok) window.open(made.url, "_blank", "noopener");
  };
  replaceChildren(pane, h("h3", {}, `${student.name}: ${puzzle.title}, ${answer.ok ? "passes" : "fails"} (${formatMoment(answer.at)})`),
    h("button", { type: "button", class: "button small", onclick: openIt }, "Open in the editor with its diagram"),
    h("pre", { class: "class-source" }, answer.source));
}

function pushForm(label, students) {
  const input = h("input", { type: "text", class: "class-push-text", placeholder: "A hint, or a link to share" });
  const note = h("span", { class: "class-push-note" });
  const send = async () => {
    const text = input.value.trim();
    if (!text) return;
    const link = /^(https?:\/\/|\/(?![\/\\]))\S+$/.test(text) ? text : null;  // "//host" is another site's: text
    const { ok, answer } = await api("/push", { method: "POST", body: JSON.stringify({ text, link, students }) });
    note.textContent = ok ? `sent to ${answer.sent_to}` : answer.error.message;
    if (ok) input.value = "";
  };
  return h("div", { class: "class-push" }, input, h("button", { type: "button", class: "button small", onclick: send }, label), note);
}

// Rename or remove a student of the roster (the teacher's; the table reloads).
function rosterButtons(student) {
  const rename = async () => {
    const name = window.prompt(`A new name for ${student.name}`, student.name);
    if (!name || name === student.name) return;
    const { ok, answer } = await api(`/students/${student.id}`, { method: "PATCH", body: JSON.stringify({ name }) });
    if (!ok) window.alert(answer.error.message);
    load();
  };
  const remove = async () => {
    if (!window.confirm(`Remove ${student.name} from the class? Their runs will count no more.`)) return;
    await api(`/students/${student.id}`, { method: "DELETE" });
    load();
  };
  return h("span", { class: "class-roster-buttons" },
    h("button", { type: "button", class: "button small class-rename", onclick: rename }, "Rename"),
    h("button", { type: "button", class: "button small class-remove", onclick: remove }, "Remove"));
}

function dashboard(progress, builtins) {
  const table = h("table", { class: "class-table", id: "class-table" },
    h("thead", {}, h("tr", {}, h("th", {}, "Student"), progress.puzzles.map((p) => h("th", {}, p.title,
      p.due ? h("span", { class: "class-failing" }, `due ${formatMoment(p.due)}`) : null)))),
    h("tbody", {}, progress.students.map((student) => h("tr", { dataset: { student: student.name } },
      h("th", {}, student.name, rosterButtons(student)), progress.puzzles.map((p) => cell(student.puzzles[p.name], student, p))))));
  const groups = progress.puzzles.map((p) => {
    const found = progress.failures[p.name] || [];
    if (!found.length) return null;
    return h("section", { class: "class-groups", dataset: { puzzle: p.name } }, h("h3", {}, `${p.title}: how it fails`),
      h("ul", {}, found.map((group) => h("li", { class: "class-group" },
        h("b", {}, plural(group.count, "student")), ` · ${group.kind} `,
        h("span", { class: "class-who" }, `(${group.students.map((s) => s.name).join(", ")})`),
        h("details", {}, h("summary", {}, `an example: ${group.example.student}'s kernel`), h("pre", {}, group.example.source)),
        pushForm("Push to this group", group.students.map((s) => s.id))))));
  });
  // The edit form is kept across the table's reloads (a submission arriving while the teacher edits).
  const edit = document.querySelector("#class-edit") || classForm(progress, builtins, {
    id: "class-edit", legend: "Edit the class: its puzzles, their order and due times", saveLabel: "Save",
    save: (settings) => api("", { method: "PATCH", body: JSON.stringify(settings) }),
    saved: (answer) => {
      document.querySelector("h1").firstChild.textContent = `${answer.title} `;
      load();
      return "Saved: students see the new list when they open the class's page.";
    },
  });
  const lock = h("input", { type: "checkbox", id: "class-locked", checked: progress.locked,
    onchange: async () => { await api("", { method: "PATCH", body: JSON.stringify({ locked: lock.checked }) }); load(); } });
  replaceChildren(body,
    h("p", { class: "course-summary" }, `Students join with the code ${progress.code}. `,
      h("label", {}, lock, " closed to new students"), " · ",
      h("a", { href: `/api/classes/${progress.code}/export.csv` }, "Export CSV"), " · ",
      h("a", { href: "?preview", id: "class-preview-link" }, "Preview as a student")),
    edit, pushForm("Push to the class", null), table,
    progress.students.length ? null : h("p", { class: "course-summary" }, "No student has joined yet."),
    document.querySelector("#class-latest") || h("section", { id: "class-latest", class: "class-latest" }), groups);
}

// The class's leaderboard of each puzzle, where it has one: ranked by the grader's GPU time, or,
// in the interpreter, listed with the reason nothing is ranked.
async function leaderboards(info) {
  if (!info.leaderboard) return null;
  const boards = await Promise.all(info.puzzles.map(async (p) => [p, await api(`/leaderboard/${p.name}`)]));
  return h("section", { class: "class-boards", id: "class-boards" }, boards.map(([p, { ok, answer }]) => {
    if (!ok) return null;
    const rows = answer.entries.map((entry) => h("li", {},
      entry.rank === null ? "" : h("b", {}, `#${entry.rank} `), entry.student,
      entry.rank === null ? "" : ` · ${formatMs(entry.timing.kernel_ms.median)} (p20–p80 ${formatMs(entry.timing.kernel_ms.p20)}–${formatMs(entry.timing.kernel_ms.p80)})`));
    return h("div", { class: "class-board", dataset: { puzzle: p.name } }, h("h3", {}, `${p.title}: leaderboard`),
      answer.why ? h("p", { class: "class-push-note class-board-why" }, answer.why) : null,
      rows.length ? h("ol", {}, rows) : h("p", { class: "class-push-note" }, "No correct kernel yet."));
  }));
}

// What a student sees once in the class: their name, the puzzles, the leaderboards.
async function joinedView(info, name, banner = null) {
  replaceChildren(body, banner, h("p", { class: "course-summary", id: "class-joined" },
    `You are in, ${name}. Your graded runs of these puzzles count for the class:`), puzzles(info),
    await leaderboards(info));
}

// The join form; in the teacher's preview Join shows the page a student then sees, joining nobody.
function joinForm(info, banner = null) {
  const input = h("input", { type: "text", id: "class-name", placeholder: "Your name", maxlength: "40" });
  const note = h("p", { class: "class-push-note", id: "class-join-note" });
  const join = async () => {
    if (banner) { await joinedView(info, input.value.trim() || "(a student)", banner); return; }
    const { ok, answer } = await api("/join", { method: "POST", body: JSON.stringify({ name: input.value }) });
    if (!ok) { note.textContent = answer.error.message; return; }
    await joinedView(info, answer.student.name);
  };
  replaceChildren(body, banner, h("p", { class: "course-summary" }, "Join the class with a display name (no account)."),
    h("div", { class: "class-push" }, input, h("button", { type: "button", class: "button", id: "class-join", onclick: join }, "Join")),
    note, puzzles(info));
}

function previewBanner() {
  return h("div", { class: "class-preview", id: "class-preview", role: "note" },
    h("b", {}, "Preview: "), "this is the class's page as a student sees it. Join here adds nobody to the roster. ",
    h("a", { href: window.location.pathname }, "Back to the dashboard"));
}

function puzzles(info) {
  return h("ol", { class: "course-list" }, info.puzzles.map((p, i) => h("li", { class: "course-item" },
    h("a", { href: `/puzzles/${p.name}` }, h("span", { class: "course-number" }, String(i + 1)),
      h("span", { class: "course-title" }, p.title),
      p.due ? h("span", { class: "badge" }, `due ${formatMoment(p.due)}`) : null))));
}

let builtinPuzzles = null;  // the course's list for the edit form: fetched once, by the teacher's page only

async function load() {
  if (previewing) {
    const info = await api("");
    if (info.ok && info.answer.teaching) { joinForm(info.answer, previewBanner()); return false; }
  }
  const { ok, status, answer } = await api("/progress");
  if (ok) {
    builtinPuzzles ??= fetch("/api/puzzles").then((r) => r.json()).then((found) => found.puzzles).catch(() => []);
    dashboard(answer, await builtinPuzzles);
    const boards = await leaderboards(answer);
    document.querySelector("#class-boards")?.remove();  // a reload's, when two overlap
    if (boards) body.append(boards);
    return true;
  }
  if (status !== 403) { replaceChildren(body, h("p", {}, answer.error ? answer.error.message : "The class did not load.")); return false; }
  const info = await api("");
  if (info.ok && info.answer.you) await joinedView(info.answer, info.answer.you.name);  // back to the class's page
  else if (info.ok) joinForm(info.answer);
  return false;
}

load().then((teaching) => {
  if (!teaching) return;
  const socket = io();
  const watch = () => socket.emit("watch_class", { code });
  socket.on("connect", watch);
  socket.on("class_progress", (data) => { if (data.code === code) load(); });
});
