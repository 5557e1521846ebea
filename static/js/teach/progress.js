// Puzzle progress, kept in this browser only (localStorage): {name: {done: true, at: ms, source}},
// `source` the kernel that passed (a puzzle solved here reopens on it).
const KEY = "triton-playground.puzzles";

export function readProgress() {
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) || "{}");
    return stored && typeof stored === "object" && !Array.isArray(stored) ? stored : {};
  } catch {
    return {};
  }
}

export function isDone(name) {
  return Boolean(readProgress()[name]?.done);
}

export function solvedSource(name) {
  const source = readProgress()[name]?.source;
  return typeof source === "string" ? source : null;
}

export function markDone(name, source) {
  const progress = readProgress();
  progress[name] = { done: true, at: Date.now(), source };
  try {
    localStorage.setItem(KEY, JSON.stringify(progress));
  } catch {
    // storage full or disabled: the course page just shows it as not done
  }
}
