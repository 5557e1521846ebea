// A/B compare, pure: a pinned result against a later one. Times judged against their noise, the
// compiler's resources, each IR stage as a unified diff, and which elements each run wrote.

// The relative spread of a timing summary: half of p20..p80 over the median.
export function noiseOf(summary) {
  if (!summary || !summary.median || summary.n < 2) return null;
  return (summary.p80 - summary.p20) / 2 / summary.median;
}

// {change, noise, verdict}: change is relative (0.05 = 5% slower); the verdict calls a change within
// the larger of the two runs' noise "noise", and says "unmeasured" when either has no spread to judge
// by (one sample: the interpreter's wall clock).
export function timeChange(before, after) {
  if (!before || !after || !before.median || !after.median) return null;
  const change = after.median / before.median - 1;
  const noises = [noiseOf(before), noiseOf(after)];
  if (noises.includes(null)) return { change, noise: null, verdict: "unmeasured" };
  const noise = Math.max(...noises);
  const verdict = Math.abs(change) <= noise ? "noise" : change < 0 ? "faster" : "slower";
  return { change, noise, verdict };
}

export const RESOURCES = [["n_regs", "registers per thread"], ["n_spills", "spilled registers"], ["shared_bytes", "shared memory (bytes)"]];

export function resourceRows(before, after) {
  return RESOURCES.map(([key, label]) => {
    const a = before && before[key];
    const b = after && after[key];
    return { key, label, before: a ?? null, after: b ?? null,
             delta: Number.isFinite(a) && Number.isFinite(b) ? b - a : null };
  });
}

// ---- a unified diff of two texts (Myers' O(ND) with a bound on D) ------------------------------

const MAX_EDITS = 3000;

// [{kind: " " | "-" | "+", a: index in a or null, b: index in b or null}], or null past MAX_EDITS.
export function diffLines(a, b) {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
  const middle = myers(a.slice(start, endA), b.slice(start, endB));
  if (middle === null) return null;
  const ops = [];
  for (let i = 0; i < start; i++) ops.push({ kind: " ", a: i, b: i });
  for (const op of middle) ops.push({ kind: op.kind, a: op.a === null ? null : op.a + start, b: op.b === null ? null : op.b + start });
  for (let i = 0; i < a.length - endA; i++) ops.push({ kind: " ", a: endA + i, b: endB + i });
  return ops;
}

function myers(a, b) {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace = [];
  for (let d = 0; d <= Math.min(max, MAX_EDITS); d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, offset, d);
    }
  }
  return null;
}

function backtrack(trace, a, b, offset, dEnd) {
  const ops = [];
  let x = a.length;
  let y = b.length;
  for (let d = dEnd; d > 0; d--) {
    const v = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? k + 1 : k - 1;
    const prevX = v[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) { x--; y--; ops.push({ kind: " ", a: x, b: y }); }
    if (x === prevX) { y--; ops.push({ kind: "+", a: null, b: y }); } else { x--; ops.push({ kind: "-", a: x, b: null }); }
  }
  while (x > 0 && y > 0) { x--; y--; ops.push({ kind: " ", a: x, b: y }); }
  return ops.reverse();
}

// {hunks: [{header, lines: [{kind, text, a, b}]}], added, removed} or {tooLarge: true}; `context`
// unchanged lines around each change; lines compared by `key` (the text shown is the line's own).
export function unifiedDiff(textA, textB, context = 3, key = (line) => line) {
  const a = (textA || "").split("\n");
  const b = (textB || "").split("\n");
  const ops = diffLines(a.map(key), b.map(key));
  if (ops === null) return { tooLarge: true, hunks: [], added: 0, removed: 0 };
  const changed = ops.map((op, i) => (op.kind !== " " ? i : -1)).filter((i) => i >= 0);
  const hunks = [];
  let current = null;
  for (const i of changed) {
    const from = Math.max(0, i - context);
    const to = Math.min(ops.length - 1, i + context);
    if (current && from <= current.to + 1) current.to = to;
    else hunks.push(current = { from, to });
  }
  const line = (op) => ({ ...op, text: op.kind === "+" ? b[op.b] : a[op.a] });
  return {
    added: ops.filter((op) => op.kind === "+").length,
    removed: ops.filter((op) => op.kind === "-").length,
    hunks: hunks.map(({ from, to }) => {
      const slice = ops.slice(from, to + 1);
      const aFirst = slice.find((op) => op.a !== null);
      const bFirst = slice.find((op) => op.b !== null);
      const aCount = slice.filter((op) => op.a !== null).length;
      const bCount = slice.filter((op) => op.b !== null).length;
      return { header: `@@ -${aFirst ? aFirst.a + 1 : 0},${aCount} +${bFirst ? bFirst.b + 1 : 0},${bCount} @@`, lines: slice.map(line) };
    }),
  };
}

// An IR line without the numbers the compiler hands out in order: location ids (`loc(#loc22)`,
// `#loc22 = loc(...)`) and the suffixes of value names (`%a_11`, `%3`). One changed constant
// renumbers most of a file; compared without them, a diff shows what the change made.
export function withoutRenumbering(line) {
  return line.replace(/#loc\d+/g, "#loc").replace(/(%[A-Za-z_][\w.]*?)_\d+\b/g, "$1_#").replace(/%\d+\b/g, "%#");
}

// ---- which elements each run wrote --------------------------------------------------------------

function storeCounts(trace, tensor) {
  const counts = new Map();
  for (const program of trace.programs) {
    for (const access of program.accesses) {
      if (access.tensor !== tensor || (access.op !== "store" && access.op !== "atomic")) continue;
      for (const [start, length] of access.offsets) {
        for (let e = start; e < start + length; e++) {
          if (access.op === "store") counts.set(e, (counts.get(e) || 0) + 1);
          else if (!counts.has(e)) counts.set(e, 1); // atomics are meant to meet: never "twice"
        }
      }
    }
  }
  return counts;
}

function toRuns(elements) {
  const runs = [];
  for (const e of [...elements].sort((x, y) => x - y)) {
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === e) last[1] += 1;
    else runs.push([e, 1]);
  }
  return runs;
}

// {tensor: {missed, extra, twice}} for every tensor either run wrote, each {count, runs}: what the
// pinned run wrote and this one does not, what this one wrote and the pinned did not, and what this
// one writes more than once where the pinned run wrote it once. The shape of result.puzzle.diff.
export function coverageDiff(before, after) {
  const names = new Set();
  for (const trace of [before, after]) {
    for (const [name, tensor] of Object.entries(trace.tensors)) if (tensor.role !== "input") names.add(name);
  }
  const diff = {};
  for (const name of names) {
    const want = storeCounts(before, name);
    const got = storeCounts(after, name);
    const sets = {
      missed: [...want.keys()].filter((e) => !got.has(e)),
      extra: [...got.keys()].filter((e) => !want.has(e)),
      twice: [...got.entries()].filter(([e, n]) => n > 1 && (want.get(e) || 0) <= 1).map(([e]) => e),
    };
    diff[name] = Object.fromEntries(Object.entries(sets).map(([kind, elements]) => [kind, { count: elements.length, runs: toRuns(elements) }]));
  }
  return diff;
}
