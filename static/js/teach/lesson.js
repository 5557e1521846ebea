// The Lesson tab: the docstring at the top of the source (what a gallery example teaches and what to
// try) as prose beside the code, so the editor can open on the kernel. The docstring's layout is the
// gallery's (kernels/): a title underlined with "=", paragraphs, `code`, *emphasis*, "- " lists.
import { on } from "../shared/hub.js";
import { h, replaceChildren, debounce } from "../shared/dom.js";

const DOCSTRING = /^\s*(?:#[^\n]*\n\s*)*[rRuU]?("""|''')([\s\S]*?)\1/;

// The source's leading docstring, or null.
export function lessonText(source) {
  const match = DOCSTRING.exec(source || "");
  const text = match && match[2].trim();
  return text ? text : null;
}

// The source without its lesson: the leading docstring, then the "# %%" section lines and blank
// lines before the code.
export function withoutLesson(source) {
  return (source || "").replace(DOCSTRING, "").replace(/^(?:[ \t]*(?:#[ \t]*%%[^\n]*)?\n)*/, "");
}

// `code` and *emphasis* inside a paragraph, as nodes (never parsed as HTML).
function inline(text) {
  return text.split(/(`[^`]+`|\*[^*\s][^*]*\*)/).filter(Boolean).map((part) => {
    if (part.startsWith("`")) return h("code", {}, part.slice(1, -1));
    if (part.startsWith("*") && part.length > 2) return h("em", {}, part.slice(1, -1));
    return part;
  });
}

// {title, blocks: [{list: [text]} | {paragraph: text}]}
export function parseLesson(text) {
  const lines = text.split("\n").map((line) => line.trimEnd());
  let title = null;
  if (lines.length > 1 && /^[=-]{3,}$/.test(lines[1].trim())) title = lines.splice(0, 2)[0].trim();
  const blocks = [];
  for (const chunk of lines.join("\n").split(/\n\s*\n/)) {
    const rows = chunk.split("\n").map((row) => row.trim()).filter(Boolean);
    if (!rows.length) continue;
    if (rows.every((row, i) => /^[-*] /.test(row) || (i > 0 && !/^[-*] /.test(row)))) {
      if (/^[-*] /.test(rows[0])) {
        const items = [];
        for (const row of rows) {
          if (/^[-*] /.test(row)) items.push(row.slice(2));
          else items[items.length - 1] += ` ${row}`;
        }
        blocks.push({ list: items });
        continue;
      }
    }
    blocks.push({ paragraph: rows.join(" ") });
  }
  return { title, blocks };
}

function render(lesson) {
  return h("article", { class: "lesson" },
    lesson.title ? h("h2", { class: "lesson-title" }, lesson.title) : null,
    lesson.blocks.map((block) => (block.list
      ? h("ul", {}, block.list.map((item) => h("li", {}, inline(item))))
      : h("p", { class: /^Try\b/.test(block.paragraph) ? "lesson-try" : null }, inline(block.paragraph)))),
    h("p", { class: "lesson-source" }, "From the docstring at the top of the source."));
}

// tab: the Lesson tab's button (hidden while the source has no docstring); panel: its content.
export function initLesson(tab, panel) {
  if (!tab) return;   // an embed without the lesson
  const show = (source) => {
    const text = lessonText(source);
    tab.hidden = text === null;
    replaceChildren(panel, text === null ? null : render(parseLesson(text)));
  };
  on("spec-loaded", ({ spec }) => show(spec.source));
  on("source-changed", debounce(({ source }) => show(source), 400));
}
