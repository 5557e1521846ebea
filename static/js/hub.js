// The page's event hub: panes talk through named events, never to each other directly.
//
// Events (detail):
//   run-requested   {}                         Run button or Ctrl/Cmd+Enter
//   run-started     {run_id}
//   run-status      {run_id, phase, message, progress?}
//   run-stdout      {run_id, text}
//   run-result      {run_id, result}
//   program-selected {pid: [x, y, z], lines: [source line, ...]}   from the diagram
//   source-line-selected {line}                from the editor (cursor line)
//   spec-loaded     {spec, ui}                 a spec replaced the page's state
//   source-changed  {source}                   the editor's text changed (debounced)
//   ir-line-selected {line}                    an IR line was clicked; line: its source line or null
//   ir-target-selected {arch}                  the IR tab's target changed ("sm80", or null: auto)
//   jump-to-line    {line}                     move the editor's cursor there (error card's "line N")
//   show-program    {pid}                      open the diagram on this program (error card)
//   tab-shown       {tab}                      results | diagram | timings | ir became visible
const target = new EventTarget();

export function on(name, handler) {
  target.addEventListener(name, (event) => handler(event.detail));
}

export function emit(name, detail = {}) {
  target.dispatchEvent(new CustomEvent(name, { detail }));
}
