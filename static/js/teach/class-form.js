// The form of a class's settings, to make a class (/classes/new) and to edit one (its dashboard).
import { h, replaceChildren } from "../shared/dom.js";

// A time for <input type="datetime-local"> (the browser's zone) from seconds since 1970, and back.
function localInput(seconds) {
  if (!seconds) return "";
  const date = new Date(seconds * 1000);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function fromLocalInput(value) {
  return value ? Math.round(new Date(value).getTime() / 1000) : null;
}

// A class's settings as a form: its title, its puzzles (order, due times, which ones: built-in ones
// added as they are chosen in the list, the teacher's own by link and Add or Enter) and whether it has leaderboards. `save(settings)` sends them
// whole ({ok, answer} back: POST /api/classes makes a class, PATCH /api/classes/<code> edits one); a
// refusal is said under the row it names, else below the form; `saved(answer)` gives the note.
export function classForm(info, builtins, { id, legend, saveLabel, save, saved, open = false }) {
  let chosen = info.puzzles.map((p) => ({ ...p }));
  const title = h("input", { type: "text", id: "class-edit-title", value: info.title, maxlength: "120" });
  const leaderboard = h("input", { type: "checkbox", id: "class-edit-leaderboard", checked: info.leaderboard });
  const rows = h("ol", { class: "class-edit-list", id: "class-edit-list" });
  const picker = h("select", { id: "class-edit-add", "aria-label": "Add a puzzle", onchange: () => add() });
  const own = h("input", { type: "text", id: "class-edit-own", placeholder: "or your puzzle's link: /puzzles/t-…",
                           onkeydown: (event) => { if (event.key === "Enter") { event.preventDefault(); add(); } } });
  const note = h("p", { class: "class-push-note", id: "class-edit-note", role: "status" });
  const said = (words, bad) => {  // a refusal stands out from a note
    note.textContent = words;
    note.classList.toggle("class-edit-problem", bad);
  };
  const problems = new Map();  // field -> message, from the last refusal

  const changed = () => {  // a refusal was of the list before this change
    problems.clear();
    said("", false);
    draw();
  };
  const move = (index, by) => {
    const [item] = chosen.splice(index, 1);
    chosen.splice(index + by, 0, item);
    changed();
  };
  const past = (due) => due !== null && due * 1000 < Date.now();
  const row = (p, index) => {
    const flag = h("span", { class: "class-due past class-edit-past", hidden: !past(p.due) }, "already past");
    return h("li", { class: "class-edit-row", dataset: { puzzle: p.name } },
      h("span", { class: "course-number" }, String(index + 1)),
      h("span", { class: "class-edit-name" }, p.title || p.name),
      h("label", { class: "class-edit-due" }, "due ",
        h("input", { type: "datetime-local", value: localInput(p.due), "aria-label": `due time of ${p.title || p.name}`,
                     onchange: (event) => { p.due = fromLocalInput(event.target.value); flag.hidden = !past(p.due); } })),
      flag,
      h("button", { type: "button", class: "button small class-edit-up", disabled: index === 0, "aria-label": `move ${p.title || p.name} up`,
                    onclick: () => move(index, -1) }, "↑"),
      h("button", { type: "button", class: "button small class-edit-down", disabled: index === chosen.length - 1,
                    "aria-label": `move ${p.title || p.name} down`, onclick: () => move(index, 1) }, "↓"),
      h("button", { type: "button", class: "button small class-edit-drop", disabled: chosen.length === 1,
                    onclick: () => { chosen.splice(index, 1); changed(); } }, "Take out"),
      problems.get(`puzzles[${index}].name`) || problems.get(`puzzles[${index}].due`)
        ? h("span", { class: "class-edit-problem" }, problems.get(`puzzles[${index}].name`) || problems.get(`puzzles[${index}].due`)) : null);
  };
  const draw = () => {
    replaceChildren(rows, chosen.map(row));
    replaceChildren(picker, h("option", { value: "" }, "Add a puzzle…"),
      builtins.filter((p) => !chosen.some((c) => c.name === p.name)).map((p) => h("option", { value: p.name }, p.title)));
  };
  const add = () => {
    const typed = own.value.trim().replace(/^.*\/puzzles\//, "").replace(/[?#].*$/, "");
    const name = picker.value || typed;
    if (!name || chosen.some((c) => c.name === name)) return;
    const known = builtins.find((p) => p.name === name);
    chosen.push({ name, title: known ? known.title : name, due: null });
    own.value = "";
    changed();
  };
  const send = async () => {
    if (!chosen.length) { said("Choose at least one puzzle from the list first.", true); picker.focus(); return; }
    if (!title.value.trim()) { said("Give the class a title first.", true); title.focus(); return; }
    const { ok, answer } = await save({ title: title.value, leaderboard: leaderboard.checked,
                                        puzzles: chosen.map((p) => ({ name: p.name, due: p.due })) });
    problems.clear();
    if (!ok) {
      problems.set(answer.error.field, answer.error.message);
      said(`Not saved: ${answer.error.message}`, true);
      draw();
      return;
    }
    if (answer.puzzles) chosen = answer.puzzles.map((p) => ({ ...p }));
    draw();
    said(saved(answer), false);
  };
  draw();
  return h("details", { class: "class-edit", id, open }, h("summary", {}, legend),
    h("label", { class: "class-edit-field" }, "Title ", title),
    rows,
    h("div", { class: "class-push" }, picker, own, h("button", { type: "button", class: "button small", id: "class-edit-add-button", onclick: add }, "Add")),
    h("label", { class: "class-edit-field" }, leaderboard, " a leaderboard per puzzle, for the teacher and the students"),
    h("div", { class: "class-push" }, h("button", { type: "button", class: "button primary", id: "class-edit-save", onclick: send }, saveLabel), note));
}
