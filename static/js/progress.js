// Puzzle progress, kept in this browser only (localStorage): {name: {done: true, at: ms}}.
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

export function markDone(name) {
  const progress = readProgress();
  progress[name] = { done: true, at: Date.now() };
  try {
    localStorage.setItem(KEY, JSON.stringify(progress));
  } catch {
    // storage full or disabled: the course page just shows it as not done
  }
}
