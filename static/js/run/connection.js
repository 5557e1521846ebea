// A run over Socket.IO (docs/events.md): Run sends the spec, the server's events about it relayed on
// the hub once the ack gives its run_id, Stop, the parts of its result gathered as they arrive; and
// compile ahead, a valid spec compiled while the person pauses.
import { on, emit } from "../shared/hub.js";
import { debounce } from "../shared/dom.js";
import { isForeign, sendSpec } from "../shared/provenance.js";
import { scriptMode } from "./script.js";

const $ = (selector) => document.querySelector(selector);

// The result so far: the parts of the run that have arrived (docs/events.md, run_partial), each the
// section of the result it will be; a failed check already makes it a mismatch.
function withPart(result, part, content) {
  const next = { ...result, [part]: content };
  if (part === "check" && content && !content.ok) next.status = "mismatch";
  return next;
}

// getSpec(): the page's spec; checkLaunch(): what the launch form can tell is wrong; emptyResult():
// a result before a run; onSocket(socket): the page's other listeners on the connection (a class's
// inbox: teach/class-message.js); onSend(spec): a run's spec sent.
export function connect({ getSpec, checkLaunch, emptyResult, onSocket, onSend }) {
  const socket = io();
  let currentRun = null;
  let inFlight = false;       // between Run and the result
  let waitingForAck = false;
  let early = [];     // events that arrived before the ack told us their run_id
  let stopAsked = false;  // Stop was pressed before the ack gave the run its id
  let soFar = emptyResult();  // the current run's parts, gathered

  const deliver = (name, data) => {
    if (data.run_id !== currentRun) return;
    if (name === "run-partial") {
      soFar = withPart(soFar, data.part, data.content);
      data = { ...data, result: soFar };
    }
    emit(name, data);
    if (name === "run-result") {
      inFlight = false;
      setRunning(false);
    }
  };
  const receive = (name) => (data) => {
    if (waitingForAck) early.push([name, data]);
    else deliver(name, data);
  };
  socket.on("run_status", receive("run-status"));
  socket.on("run_stdout", receive("run-stdout"));
  socket.on("run_partial", receive("run-partial"));
  socket.on("run_result", receive("run-result"));
  onSocket(socket);
  socket.on("disconnect", () => { if (inFlight) emit("run-status", { run_id: currentRun, phase: "queued", message: "connection lost, reconnecting…" }); });

  // A run that never started (no answer, or refused: a malformed spec, a full queue) ends with a
  // result of its own, shaped as the server's.
  const fail = (given) => {
    currentRun = null;
    inFlight = false;
    setRunning(false);
    const error = { phase: "sandbox", type: "RunError", hint: null, line: null, pid: null, field: null, ...given };
    emit("run-result", { run_id: null, result: { ...emptyResult(), status: "error", error } });
  };

  const stop = () => socket.emit("stop", { run_id: currentRun }, (ack) => {
    if (ack && !ack.stopped && inFlight) emit("run-status", { run_id: currentRun, phase: "running", message: "the run had ended before Stop reached it" });
  });
  on("stop-requested", () => {
    if (!inFlight) return;
    if (currentRun) stop();
    else stopAsked = true;
  });

  // Compile ahead: once the person pauses (~400 ms after the last keystroke; the editor's
  // source-changed comes 250 ms after it), a valid spec not yet sent is compiled on the server, so
  // the Run that follows finds it built; its compile error marks the editor's line at once.
  let compiling = { id: null, sent: null };
  const compileAhead = debounce(() => {
    if (isForeign() || scriptMode() || checkLaunch().length) return;
    const spec = getSpec();
    if (spec.options?.puzzle) return;   // a puzzle's code is not ours: the server keeps nothing of it for our runs
    const text = JSON.stringify(spec);
    if (text === compiling.sent) return;
    compiling = { id: null, sent: text };
    sendSpec(socket, "compile", spec, (ack) => {
      if (ack && ack.compile_id && compiling.sent === text) compiling.id = ack.compile_id;
    });
  }, 150);
  // A spec just loaded (an example, a link, a draft) is not an edit: what the person changes next is.
  on("spec-loaded", () => setTimeout(() => { compiling = { id: null, sent: JSON.stringify(getSpec()) }; }));
  on("source-changed", compileAhead);
  on("meta-parameter-changed", compileAhead);
  socket.on("compile_result", (data) => {
    if (!compiling.id || data.compile_id !== compiling.id) return;  // an older request's: the source moved on
    emit("compile-result", { ok: data.ok, error: data.error, source: JSON.parse(compiling.sent).source });
  });

  on("run-requested", () => {
    // What the launch form can tell is wrong is said at once, every problem on its field, without a run.
    const problems = scriptMode() ? [] : checkLaunch();
    if (problems.length) {
      return fail({ phase: "parse", type: "SpecError", field: problems[0].field, problems,
                    message: problems.map((problem) => problem.message).join("\n") });
    }
    const spec = getSpec();
    onSend(structuredClone(spec));
    currentRun = null;
    inFlight = true;
    waitingForAck = true;
    stopAsked = false;
    early = [];
    soFar = emptyResult();
    setRunning(true);
    sendSpec(socket.timeout(20000), "run", spec, (timeout, ack) => {
      waitingForAck = false;
      if (timeout) return fail({ message: "The server did not answer. Check that it is running, then press Run again." });
      if (!ack || ack.error) return fail({ phase: "parse", message: "The server refused the run.", ...ack?.error });
      currentRun = ack.run_id;
      emit("run-started", { run_id: currentRun, spec });
      for (const [name, data] of early) deliver(name, data);
      early = [];
      if (stopAsked && inFlight) stop();
    });
  });
}

export function setRunning(running) {
  const button = $("#run-button");
  button.classList.toggle("running", running);
  button.querySelector(".run-label").textContent = running ? "Running" : "Run";
  $("#stop-button").hidden = !running;
}
