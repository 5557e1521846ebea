// The page's event hub: panes talk through named events, never to each other directly (nor import
// each other: what two panes share lives in a module of its own).
//
// Every event, its detail, and who emits it:
//   run-requested          {}                          Run, Ctrl/Cmd+Enter, a shared link's prompt, a new
//                                                      meta-parameter value or IR target (main.js, editor.js)
//   stop-requested         {}                          Stop: end the current run (main.js)
//   run-started            {run_id, spec}              the server took the run of this spec (connection.js)
//   run-status             {run_id, phase, message, position?}
//                                                      a phase of the run: queued (position: its place in
//                                                      line, 1 is next), starting, compiling, running,
//                                                      checking, bench, ir (connection.js, from the server)
//   run-stdout             {run_id, text}              what the kernel printed, as it prints (connection.js)
//   run-partial            {run_id, part, content, result}
//                                                      a section of the result arrived ahead of it: part
//                                                      check | trace | timings | ir | timeline; result: every part of
//                                                      this run so far, shaped as a result (connection.js)
//   run-result             {run_id, result}            the run's result (connection.js; run_id null for a run
//                                                      refused before it started). result.error, when set:
//                                                      {phase, type, message, hint, line, pid, field, launch}
//   spec-loaded            {spec, ui: {pid, pane}}     a spec replaced the page's state (main.js)
//   source-changed         {source}                    the editor's text changed, debounced (editor.js)
//   compile-result         {ok, error, source}         the server compiled `source` ahead of a run (the
//                                                      person paused typing); error: as a result's (connection.js)
//   source-line-selected   {line}                      the editor's cursor moved to another line (editor.js)
//   meta-parameter-changed {name}                      a constexpr argument, num_warps or num_stages got
//                                                      a new value (form.js)
//   program-selected       {pid: [x, y, z] | null, lines: [source line, ...]}
//                                                      a program was picked in the diagram, or none (diagram.js)
//   ir-line-selected       {line}                      an IR line was clicked; line: its source line or null (ir.js)
//   sweep-requested        {sweep}                     run the spec once with options.sweep (compare.js)
//   sweep-refused          {problems}                  the launch form's problems kept the sweep from running (main.js)
//   step-shown             {line, endLine}             the Step tab shows the step of the statement on these lines (step.js)
//   step-requested         {pid}                       replay this program in the Step tab (diagram.js)
//   ir-stage-selected      {stage}                     the IR tab shows another stage (ir.js)
//   row-width-changed      {width | null}              the diagram's row width for 1-D tensors (diagram.js)
//   trace-extended         {from, trace}               a program fetched on request joined the shown trace
//                                                      `from`; `trace` holds it too (diagram.js)
//   ir-target-selected     {arch}                      the IR tab's target changed ("sm80", or null: auto) (ir.js)
//   jump-to-line           {line}                      put the editor's cursor there (error card's "line N")
//   show-program           {pid}                       open the diagram on this program (error card's "program (x, y, z)")
//   tab-shown              {tab}                       results | diagram | timings | ir became visible (main.js)
//   run-mode-changed       {mode}                      the launch pane switched to "form" or "script" (script.js)
//   launch-selected        {index}                     a script's launch was picked: run it again showing that
//                                                      launch (script.js)
//   launch-to-form         {launch}                    make a form run of this launch of a script (script.js)
//   timeline-requested     {mode}                      tick the timeline option of the mode's pane and run (timeline.js)
//   timeline-region-selected {line, endLine}           a timeline region was clicked: its source lines (timeline.js)
const target = new EventTarget();

export function on(name, handler) {
  target.addEventListener(name, (event) => handler(event.detail));
}

export function emit(name, detail = {}) {
  target.dispatchEvent(new CustomEvent(name, { detail }));
}
