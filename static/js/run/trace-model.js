// What a run's trace says, as plain data: the programs in launch order, each tensor's accesses,
// which program owns which element, the masked-off lanes, the atomics, and every written tensor's
// coverage verdict. No DOM: the diagram draws this (its cells: trace-cells.js), trace-words.js
// says it, and the Results pane reads the same coverage verdicts.
//
// Runs are [start, length] pairs of element offsets, as the trace gives them.



// ---- runs -------------------------------------------------------------------------------------

export function runsLength(runs) {
  return runs.reduce((sum, [, length]) => sum + length, 0);
}

// Sorted, overlapping and touching runs joined.
export function mergeRuns(runs) {
  const sorted = runs.filter(([, length]) => length > 0).map(([s, n]) => [s, n]).sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const [start, length] of sorted) {
    const last = merged[merged.length - 1];
    if (last && start <= last[0] + last[1]) last[1] = Math.max(last[1], start + length - last[0]);
    else merged.push([start, length]);
  }
  return merged;
}

// push(...items) without spreading: an access may hold more runs than a call takes arguments.
function append(target, items) {
  for (const item of items) target.push(item);
}

// The parts of `runs` outside every run of `minus`, merged.
function subtractRuns(runs, minus) {
  const cut = mergeRuns(minus);
  const left = [];
  for (const [first, length] of mergeRuns(runs)) {
    let start = first;
    const end = first + length;
    for (const [s, n] of cut) {
      if (s + n <= start || s >= end) continue;
      if (s > start) left.push([start, s - start]);
      start = s + n;
    }
    if (end > start) left.push([start, end - start]);
  }
  return left;
}

function runsContain(runs, offset) {
  return runs.some(([s, n]) => offset >= s && offset < s + n);
}

// Runs that form rows r0..r1 x columns c0..c1 of a row-major matrix with `cols` columns, or null.
export function asRectangle(runs, cols) {
  if (runs.length === 1 && runs[0][0] % cols === 0 && runs[0][1] % cols === 0) {
    const r0 = runs[0][0] / cols;
    return { rows: [r0, r0 + runs[0][1] / cols - 1], cols: [0, cols - 1] };
  }
  const [start, length] = runs[0];
  const c0 = start % cols;
  if (c0 + length > cols) return null;
  const r0 = Math.floor(start / cols);
  const same = runs.every(([s, n], i) => n === length && s === start + i * cols);
  return same ? { rows: [r0, r0 + runs.length - 1], cols: [c0, c0 + length - 1] } : null;
}

// ---- the trace, indexed -----------------------------------------------------------------------

export function traceModel(trace) {
  const [gx, gy, gz] = [0, 1, 2].map((axis) => trace.grid?.[axis] ?? 1);
  const programs = (trace.programs ?? []).map((program) => {
    const pid = [0, 1, 2].map((axis) => program.pid[axis] ?? 0);
    return { pid, linear: pid[0] + gx * (pid[1] + gy * pid[2]), accesses: program.accesses, truncated: Boolean(program.truncated) };
  }).sort((a, b) => a.linear - b.linear);
  // Outputs first: what each program stored is the picture a learner came for; inputs follow, in order.
  const stored = (info) => (info.role === "output" || info.role === "inout" ? 0 : 1);
  const verdicts = coverageVerdicts(trace);
  const tensors = Object.entries(trace.tensors ?? {}).sort(([, a], [, b]) => stored(a) - stored(b))
    .map(([name, info]) => makeTensor(name, info, verdicts.get(name) ?? null));
  const byName = new Map(tensors.map((tensor) => [tensor.name, tensor]));
  const strays = []; // the accesses that went out of bounds: {program, op, tensor, line, runs}
  programs.forEach((program, index) => {
    for (const access of program.accesses) {
      byName.get(access.tensor)?.accesses.push(tensorAccess(access, index));
      const runs = strayRuns(access);
      if (runs.length) strays.push({ program: index, op: access.op, tensor: access.tensor, line: access.line, runs });
    }
  });
  tensors.forEach(measureExtent);
  tensors.forEach((tensor) => { tensor.rowWidth = defaultRowWidth(tensor); });
  return {
    grid: [gx, gy, gz], programs, tensors, strays,
    programsTotal: trace.programs_total ?? programs.length,
    sampled: isSampled(trace),
    sample: trace.sample ?? null,
    fetched: trace.fetched ?? 0,
  };
}

// The lanes of an access that were active but outside its tensor (only the access an
// out-of-bounds error stopped has any).
function strayRuns(access) {
  return access.out_of_bounds ?? [];
}

// An access as a tensor keeps it: its lanes inside the tensor (`offsets`), its masked-off lanes,
// and its stray lanes apart, since the drawing gives them the error's colour, not the program's.
function tensorAccess(access, program) {
  const strays = strayRuns(access);
  return { ...access, program, strays, offsets: strays.length ? subtractRuns(access.offsets, strays) : access.offsets };
}

// The trace with `program` (one the trace had left out, fetched with options.trace_pid) in launch
// order among its programs; a program of the same id is replaced.
export function withProgram(trace, program) {
  const [gx, gy] = [0, 1].map((axis) => trace.grid?.[axis] ?? 1);
  const linear = (pid) => (pid[0] ?? 0) + gx * ((pid[1] ?? 0) + gy * (pid[2] ?? 0));
  const others = (trace.programs ?? []).filter((p) => linear(p.pid) !== linear(program.pid));
  const programs = [...others, program].sort((a, b) => linear(a.pid) - linear(b.pid));
  const added = others.length === (trace.programs ?? []).length ? 1 : 0;
  return { ...trace, programs, programs_traced: programs.length, fetched: (trace.fetched ?? 0) + added };
}

function isSampled(trace) {
  return Boolean(trace.sampled) || (trace.programs_total ?? 0) > (trace.programs?.length ?? 0);
}

function makeTensor(name, info, coverage) {
  const shape = info.shape ?? [];
  return {
    name, shape, dtype: info.dtype, role: info.role, coverage,
    numel: shape.reduce((a, b) => a * b, 1),
    oneD: shape.length <= 1,
    writes: info.role !== "input",
    accesses: [],
    extent: 0,
    rowWidth: 1, // elements per drawn row of a 1-D tensor, unless the user picks another
    lanesNotDrawn: 0, // masked-off lanes that point before the start or far past the end
    strays: [], // runs of its stray lanes: active, outside it (an out-of-bounds access)
    straysNotDrawn: 0, // stray lanes before its start or past the drawing's reach
  };
}

export function indexOfPid(model, pid) {
  if (!Array.isArray(pid)) return null;
  const index = model.programs.findIndex((p) => p.pid.every((v, axis) => v === (pid[axis] ?? 0)));
  return index >= 0 ? index : null;
}

// The source lines of a program's accesses, in order.
export function sourceLines(program) {
  return [...new Set(program.accesses.map((a) => a.line).filter((line) => line != null))].sort((a, b) => a - b);
}

// How an access is named: "load", "store", "atomic" (unnamed) or "atomic_add", "atomic_cas", ...
function accessKind(access) {
  return access.op === "atomic" && access.atomic ? `atomic_${access.atomic}` : access.op;
}

// What one program touched, per kind of access and tensor, in the kernel's order:
// [{kind, op, atomic, tensor, offsets, masked, strays}] with merged runs; `offsets` holds the lanes
// inside the tensor, `strays` the active lanes outside it.
export function regionsOf(program) {
  const regions = new Map();
  for (const access of program.accesses) {
    const kind = accessKind(access);
    const key = `${kind}\u0000${access.tensor}`;
    if (!regions.has(key)) {
      regions.set(key, { kind, op: access.op, atomic: access.atomic ?? null, tensor: access.tensor, offsets: [], masked: [], strays: [] });
    }
    const region = regions.get(key);
    append(region.offsets, access.offsets);
    append(region.masked, access.masked);
    append(region.strays, strayRuns(access));
  }
  return [...regions.values()].map((region) => ({
    ...region, offsets: subtractRuns(region.offsets, region.strays), masked: mergeRuns(region.masked), strays: mergeRuns(region.strays),
  }));
}

// Outputs are coloured by who stored them, inputs by who loaded them.
export function isDrawnOp(tensor, op) {
  return tensor.writes ? op !== "load" : op === "load";
}

// The drawing reaches past the tensor's end where masked-off lanes point, up to as far again as
// the tensor is long (at least 4096 elements): a masked lane may hold any address at all. Stray
// lanes are the run's error: the first STRAY_LANES_DRAWN of them past the end are always in reach,
// however far past it they point.
const STRAY_LANES_DRAWN = 4096;

function measureExtent(tensor) {
  tensor.strays = mergeRuns(tensor.accesses.flatMap((access) => access.strays));
  const reach = Math.max(tensor.numel + Math.max(tensor.numel, 4096), strayReach(tensor));
  const notDrawn = (start, length) => Math.max(0, Math.min(length, -start)) + Math.max(0, Math.min(length, start + length - reach));
  let extent = tensor.numel;
  for (const access of tensor.accesses) {
    for (const [start, length] of [...access.offsets, ...access.masked, ...access.strays]) {
      extent = Math.max(extent, Math.min(start + length, reach));
    }
    for (const [start, length] of access.masked) tensor.lanesNotDrawn += notDrawn(start, length);
  }
  for (const [start, length] of tensor.strays) tensor.straysNotDrawn += notDrawn(start, length);
  tensor.extent = extent;
}

// Where the tensor's first STRAY_LANES_DRAWN stray lanes past its end stop.
function strayReach(tensor) {
  let lanes = 0;
  let end = 0;
  for (const [start, length] of tensor.strays) {
    const from = Math.max(start, tensor.numel);
    if (from >= start + length || lanes >= STRAY_LANES_DRAWN) continue;
    const taken = Math.min(start + length - from, STRAY_LANES_DRAWN - lanes);
    lanes += taken;
    end = from + taken;
  }
  return end;
}

// A 1-D tensor is folded into rows one block wide: its largest access, lanes masked or not.
// Accesses of one lane (one element per program) fold into a single row or a square instead.
function defaultRowWidth(tensor) {
  let lanes = 1;
  for (const access of tensor.accesses) lanes = Math.max(lanes, runsLength(access.offsets) + runsLength(access.masked) + runsLength(access.strays));
  if (lanes > 1) return Math.min(4096, 2 ** Math.ceil(Math.log2(lanes)));
  return tensor.extent <= 64 ? Math.max(1, tensor.extent) : 2 ** Math.ceil(Math.log2(Math.sqrt(tensor.extent)));
}

// Every access of the tensor at `offset`: [{access, masked, stray}] (masked: a masked-off lane
// there; stray: an active lane there, outside the tensor).
export function accessesAt(tensor, offset) {
  const hits = [];
  for (const access of tensor.accesses) {
    if (runsContain(access.offsets, offset)) hits.push({ access, masked: false, stray: false });
    else if (runsContain(access.strays, offset)) hits.push({ access, masked: false, stray: true });
    else if (runsContain(access.masked, offset)) hits.push({ access, masked: true, stray: false });
  }
  return hits;
}

// ---- coverage: who wrote each element of a written tensor -------------------------------------

// Per element, how many programs stored to it and how many updated it atomically, as pieces of
// equal counts over [0, numel): [start, length, stores, atomics]. A program counts once per element.
export function writeCounts(numel, storesByProgram, atomicsByProgram) {
  const edges = new Map([[0, [0, 0]], [numel, [0, 0]]]);
  const bump = (offset, kind, delta) => {
    if (!edges.has(offset)) edges.set(offset, [0, 0]);
    edges.get(offset)[kind] += delta;
  };
  [storesByProgram, atomicsByProgram].forEach((byProgram, kind) => {
    for (const runs of byProgram) {
      for (const [start, length] of mergeRuns(runs)) {
        bump(start, kind, 1);
        bump(start + length, kind, -1);
      }
    }
  });
  const points = [...edges.keys()].sort((a, b) => a - b);
  const pieces = [];
  let stores = 0, atomics = 0;
  for (let i = 0; i + 1 < points.length; i++) {
    stores += edges.get(points[i])[0];
    atomics += edges.get(points[i])[1];
    const start = Math.max(points[i], 0);
    const end = Math.min(points[i + 1], numel);
    if (end > start) pieces.push([start, end - start, stores, atomics]);
  }
  return pieces;
}

function piecesWhere(pieces, test) {
  return mergeRuns(pieces.filter((piece) => test(piece)).map(([start, length]) => [start, length]));
}

// A written tensor's verdict: elements never written, elements stored by more than one program (a
// race: the last store wins, in no fixed order), and elements updated atomically (how programs share
// an element on purpose: never a race). The server's coverage is exact for the whole launch and
// wins; without it a complete trace is counted here. Atomics are counted over the traced programs.
//   {tensor, numel, unwritten, unwrittenRuns, multi, multiRuns, truncated, ok,
//    atomic: null | {elements, runs, fewest, most, kinds, complete}}
function verdictOf(name, info, served, byProgram, complete) {
  const numel = (info.shape ?? []).reduce((a, b) => a * b, 1);
  const hasAtomics = byProgram.some((p) => p.atomics.length);
  const pieces = !served || hasAtomics ? writeCounts(numel, byProgram.map((p) => p.stores), byProgram.map((p) => p.atomics)) : [];
  let found = null;
  if (served) {
    found = { unwritten: served.unwritten ?? 0, unwrittenRuns: served.unwritten_runs ?? [], multi: served.multiply_written ?? 0,
              multiRuns: served.multi_runs ?? [], truncated: Boolean(served.truncated) };
  } else if (complete) {
    const unwrittenRuns = piecesWhere(pieces, ([, , stores, atomics]) => stores === 0 && atomics === 0);
    const multiRuns = piecesWhere(pieces, ([, , stores]) => stores > 1);
    found = { unwritten: runsLength(unwrittenRuns), unwrittenRuns, multi: runsLength(multiRuns), multiRuns, truncated: false };
  }
  if (!found) return null;
  const atomicPieces = pieces.filter(([, , , atomics]) => atomics > 0);
  const kinds = [...new Set(byProgram.flatMap((p) => p.kinds))];
  const atomic = atomicPieces.length ? {
    elements: atomicPieces.reduce((sum, [, length]) => sum + length, 0),
    runs: piecesWhere(atomicPieces, () => true),
    fewest: atomicPieces.reduce((least, [, , , atomics]) => Math.min(least, atomics), Infinity),
    most: atomicPieces.reduce((most, [, , , atomics]) => Math.max(most, atomics), 0),
    kinds, complete,
  } : null;
  return { tensor: name, numel, ...found, ok: found.unwritten === 0 && found.multi === 0, atomic };
}

const verdictCache = new WeakMap();

// The access that stopped the run, out of bounds ({pid, op, tensor, line}), or null: it and
// everything after it never happened, so what it would have written stays unwritten.
export function stoppedAt(trace) {
  for (const program of trace?.programs ?? []) {
    const access = program.accesses.find((a) => strayRuns(a).length);
    if (access) return { pid: program.pid, op: access.op, tensor: access.tensor, line: access.line };
  }
  return null;
}

// Map tensor name -> verdict, for every tensor the launch wrote (with `stopped`, stoppedAt's
// access, where the run stopped before writing all of it); computed once per trace.
export function coverageVerdicts(trace) {
  if (!trace) return new Map();
  if (verdictCache.has(trace)) return verdictCache.get(trace);
  const complete = !isSampled(trace);
  const writes = new Map(); // tensor name -> [{stores, atomics, kinds}] per program that wrote it
  for (const program of trace.programs ?? []) {
    const mine = new Map();
    for (const access of program.accesses) {
      if (access.op === "load") continue;
      if (!mine.has(access.tensor)) mine.set(access.tensor, { stores: [], atomics: [], kinds: [] });
      const entry = mine.get(access.tensor);
      if (access.op === "atomic") {
        append(entry.atomics, access.offsets);
        entry.kinds.push(accessKind(access));
      } else {
        append(entry.stores, access.offsets);
      }
    }
    for (const [name, entry] of mine) {
      if (!writes.has(name)) writes.set(name, []);
      writes.get(name).push(entry);
    }
  }
  const verdicts = new Map();
  const stopped = stoppedAt(trace);
  for (const [name, info] of Object.entries(trace.tensors ?? {})) {
    const served = trace.coverage?.[name];
    if (info.role === "input" && !served) continue;
    const verdict = verdictOf(name, info, served, writes.get(name) ?? [], complete);
    if (verdict) verdicts.set(name, verdict.unwritten && stopped ? { ...verdict, stopped } : verdict);
  }
  verdictCache.set(trace, verdicts);
  return verdicts;
}
