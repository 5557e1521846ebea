// A class's page: its teacher's dashboard (a row per student, a column per puzzle, live; failures
// grouped by how they fail; a push to the class or to a group; the form that edits the class), or,
// for anyone else, the form to join it and the class's puzzles, and once joined their own state of
// each, the leaderboards and what the teacher pushed, live. `?preview` shows its teacher the
// students' page, joining nobody.
import { h, replaceChildren } from "../shared/dom.js";
import { formatMoment, formatMs, plural } from "../shared/format.js";
import { classForm } from "./class-form.js";
import { followInbox } from "./class-message.js";

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

const pastDue = (puzzle) => puzzle.due !== null && puzzle.due * 1000 < Date.now();

// The due time of a puzzle, flagged once it has passed.
function dueNote(puzzle, tag = "span") {
  if (!puzzle.due) return null;
  return h(tag, { class: `class-due${pastDue(puzzle) ? " past" : ""}` },
    `${pastDue(puzzle) ? "was due" : "due"} ${formatMoment(puzzle.due)}`);
}

const lateMark = (state) => (state.late ? h("span", { class: "badge class-late" }, "late") : null);

// A cell of the dashboard; one with a kernel is a button (Enter or a click shows the kernel).
function cell(state, student, puzzle) {
  if (state.state === "not started") return h("td", { class: "class-cell" }, "not started");
  const words = state.state === "solved"
    ? [`solved in ${plural(state.tries_to_solve, "try", "tries")}`, lateMark(state)]
    : [`trying (${state.attempts})`, lateMark(state),
       state.last && state.last.failing ? h("span", { class: "class-failing" }, `fails ${state.last.failing}`) : null];
  return h("td", { class: `class-cell ${state.state}${state.late ? " late" : ""}`,
                   title: state.state === "solved" ? `solved ${formatMoment(state.solved_at)}` : null },
    h("button", { type: "button", class: "class-cell-open", "aria-label": `${student.name}, ${puzzle.title}: ${state.state}; show the latest kernel`,
                  onclick: () => showLatest(student, puzzle) }, words));
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
  return h("form", { class: "class-push", onsubmit: (event) => { event.preventDefault(); send(); } },
    input, h("button", { type: "submit", class: "button small" }, label), note);
}

// Rename (in place: the name becomes a field) or remove a student of the roster (the teacher's;
// the table reloads).
function rosterButtons(student) {
  const rename = (event) => {
    const name = event.target.closest("th");
    const input = h("input", { type: "text", class: "class-rename-name", value: student.name, maxlength: "40",
                               "aria-label": `a new name for ${student.name}` });
    const note = h("span", { class: "class-edit-problem", role: "alert" });
    const save = async () => {
      if (!input.value.trim() || input.value === student.name) { teacherPage(); return; }
      const { ok, answer } = await api(`/students/${student.id}`, { method: "PATCH", body: JSON.stringify({ name: input.value }) });
      if (ok) teacherPage();
      else note.textContent = answer.error.message;
    };
    replaceChildren(name, h("form", { class: "class-rename", onsubmit: (e) => { e.preventDefault(); save(); } },
      input, h("button", { type: "submit", class: "button small" }, "Save"),
      h("button", { type: "button", class: "button small ghost", onclick: () => teacherPage() }, "Cancel"), note));
    input.focus();
    input.select();
  };
  const remove = async () => {
    if (!window.confirm(`Remove ${student.name} from the class? Their runs will count no more.`)) return;
    await api(`/students/${student.id}`, { method: "DELETE" });
    teacherPage();
  };
  return h("span", { class: "class-roster-buttons" },
    h("button", { type: "button", class: "button small class-rename", onclick: rename }, "Rename"),
    h("button", { type: "button", class: "button small class-remove", onclick: remove }, "Remove"));
}

function dashboard(progress, builtins) {
  const table = h("table", { class: "class-table", id: "class-table" },
    h("thead", {}, h("tr", {}, h("th", {}, "Student"), progress.puzzles.map((p) => h("th", { dataset: { puzzle: p.name } },
      p.title, dueNote(p))))),
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
      teacherPage();
      return "Saved: students see the new list when they open the class's page.";
    },
  });
  const lock = h("input", { type: "checkbox", id: "class-locked", checked: progress.locked,
    onchange: async () => { await api("", { method: "PATCH", body: JSON.stringify({ locked: lock.checked }) }); teacherPage(); } });
  replaceChildren(body,
    h("p", { class: "course-summary" }, `Students join with the code ${progress.code}. `,
      h("label", {}, lock, " closed to new students"), " · ",
      h("a", { href: `/api/classes/${progress.code}/export.csv` }, "Export CSV"), " · ",
      h("a", { href: "?preview", id: "class-preview-link" }, "Preview as a student")),
    edit, pushForm("Push to the class", null), h("div", { class: "class-table-wrap" }, table),
    progress.students.length ? null : h("p", { class: "course-summary" }, "No student has joined yet."),
    document.querySelector("#class-latest") || h("section", { id: "class-latest", class: "class-latest" }), groups);
}

// The class's leaderboard of each puzzle, where it has one: ranked by the grader's GPU time, or,
// in the interpreter, listed, with the reason nothing is ranked said once above them.
async function leaderboards(info) {
  if (!info.leaderboard) return null;
  const boards = await Promise.all(info.puzzles.map(async (p) => [p, await api(`/leaderboard/${p.name}`)]));
  const why = boards.map(([, { ok, answer }]) => ok && answer.why).find(Boolean);
  return h("section", { class: "class-boards", id: "class-boards" },
    why ? h("p", { class: "class-push-note class-board-why" }, why) : null,
    boards.map(([p, { ok, answer }]) => {
      if (!ok) return null;
      const rows = answer.entries.map((entry) => h("li", { class: entry.late ? "late" : null },
        entry.rank === null ? "" : h("b", {}, `#${entry.rank} `), entry.student,
        entry.rank === null ? "" : ` · ${formatMs(entry.timing.kernel_ms.median)} (p20–p80 ${formatMs(entry.timing.kernel_ms.p20)}–${formatMs(entry.timing.kernel_ms.p80)})`,
        lateMark(entry)));
      return h("div", { class: "class-board", dataset: { puzzle: p.name } }, h("h3", {}, `${p.title}: leaderboard`),
        rows.length ? h("ol", {}, rows) : h("p", { class: "class-push-note" }, "No correct kernel yet."));
    }));
}

// A student's own state of a puzzle, as the dashboard shows it to the teacher.
function ownState(state) {
  if (!state || state.state === "not started") return null;
  const words = state.state === "solved" ? `solved in ${plural(state.tries_to_solve, "try", "tries")}` : `trying (${state.attempts})`;
  return h("span", { class: `badge class-own ${state.state === "solved" ? "ok" : ""}` }, words, state.late ? " · late" : "");
}

function puzzles(info, you = null) {
  return h("ol", { class: "course-list", id: "class-puzzles" }, info.puzzles.map((p, i) => h("li", { class: "course-item", dataset: { puzzle: p.name } },
    h("a", { href: `/puzzles/${p.name}` }, h("span", { class: "course-number" }, String(i + 1)),
      h("span", { class: "course-title" }, p.title),
      dueNote(p, "span"), you ? ownState(you.puzzles[p.name]) : null))));
}

// What a student sees once in the class: their name, the puzzles with their state, the leaderboards.
async function joinedView(info, name, banner = null) {
  const boards = await leaderboards(info);
  replaceChildren(body, banner, h("p", { class: "course-summary", id: "class-joined" },
    `You are in, ${name}. Your graded runs of these puzzles count for the class:`), puzzles(info, info.you), boards);
}

// The join form (Enter in the name joins); in the teacher's preview Join shows the page a student
// then sees, joining nobody.
function joinForm(info, banner = null) {
  const input = h("input", { type: "text", id: "class-name", placeholder: "Your name", maxlength: "40", required: true,
                             "aria-label": "Your name in the class" });
  const note = h("p", { class: "class-edit-problem", id: "class-join-note", role: "alert" });
  const join = async () => {
    if (banner) { await joinedView(info, input.value.trim() || "(a student)", banner); return; }
    const { ok, answer } = await api("/join", { method: "POST", body: JSON.stringify({ name: input.value }) });
    if (!ok) { note.textContent = answer.error.message; return; }
    await studentPage();
  };
  replaceChildren(body, banner, h("p", { class: "course-summary" }, "Join the class with a display name (no account)."),
    h("form", { class: "class-push", onsubmit: (event) => { event.preventDefault(); join(); } },
      input, h("button", { type: "submit", class: "button", id: "class-join" }, "Join")),
    note, puzzles(info));
}

function previewBanner() {
  return h("div", { class: "class-preview", id: "class-preview", role: "note" },
    h("b", {}, "Preview: "), "this is the class's page as a student sees it. Join here adds nobody to the roster. ",
    h("a", { href: window.location.pathname }, "Back to the dashboard"));
}

let builtinPuzzles = null;  // the course's list for the edit form: fetched once, by the teacher's page only
let live = null;  // the page's Socket.IO connection, once it has something to follow

// Live from here on: the teacher's dashboard follows the class, a student's page its changes (their
// state, the leaderboards) and what the teacher pushes. Opened once the page knows which it is (a
// student's connection joins its rooms as it connects, so not before the join). Returns the new
// connection, or null where the page follows the class already.
function follow(reload) {
  if (live) return null;
  live = io();
  live.on("class_progress", (data) => {
    if (data.code === code && !document.activeElement?.closest(".class-rename")) reload();  // not under a rename
  });
  return live;
}

async function teacherPage() {
  const { ok, answer } = await api("/progress");
  if (!ok) { replaceChildren(body, h("p", {}, answer.error ? answer.error.message : "The class did not load.")); return; }
  builtinPuzzles ??= fetch("/api/puzzles").then((r) => r.json()).then((found) => found.puzzles).catch(() => []);
  dashboard(answer, await builtinPuzzles);
  const boards = await leaderboards(answer);
  document.querySelector("#class-boards")?.remove();  // a reload's, when two overlap
  if (boards) body.append(boards);
  const socket = follow(teacherPage);
  if (socket) {
    const watch = () => socket.emit("watch_class", { code });
    socket.on("connect", watch);
  }
}

async function studentPage(known = null) {
  const info = known || await api("");
  if (!info.ok) { replaceChildren(body, h("p", {}, info.answer.error ? info.answer.error.message : "The class did not load.")); return; }
  if (!info.answer.you) { joinForm(info.answer); return; }
  await joinedView(info.answer, info.answer.you.name);
  const socket = follow(() => studentPage());
  if (socket) followInbox(socket);
}

// The teacher's dashboard, the teacher's preview, or the students' page: asked of the class first,
// so that a student's page asks nothing only a teacher may.
async function load() {
  const info = await api("");
  if (info.ok && info.answer.teaching && previewing) { joinForm(info.answer, previewBanner()); return; }
  if (info.ok && info.answer.teaching) await teacherPage();
  else await studentPage(info);
}

load();
