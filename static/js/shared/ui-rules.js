// The rules of the page's UI state (a program id, the IR stages, the diagram's row width), as the
// server defines them (app/web/share.py schema: initial.spec_schema.ui, also GET /api/spec). Pure: no
// DOM, so `node --test` runs it.

function inRange(rule, value) {
  return Number.isInteger(value) && value >= rule.min && value <= rule.max;
}

// ui: the schema's `ui` member. Each valid… gives its value back when the rules allow it, else null.
export function uiRules(ui) {
  return {
    irStages: [...ui.ir_stage.choices],
    maxRowWidth: ui.row_width.max,
    validPid: (pid) => (Array.isArray(pid) && pid.length >= ui.pid.min_items && pid.length <= ui.pid.max_items
      && pid.every((v) => inRange(ui.pid, v)) ? pid : null),
    validRowWidth: (width) => (inRange(ui.row_width, width) ? width : null),
    validIrStage: (stage) => (ui.ir_stage.choices.includes(stage) ? stage : null),
  };
}
