// Whose code the page shows, said with everything the page sends to run or compile it. A page showing
// someone else's code (a shared link not saved from this browser, a fork of one, a run of one picked
// from the history) marks it `from_link`, and the server keeps that run away from this browser's kept
// data: it lends it nothing compiled before and keeps nothing it compiles or times. Not only the kernel
// is code: inputs, arguments, grid and reference are Python too, so editing the kernel alone does not
// make the rest ours; loading another spec (an example, a new kernel) does. A puzzle's spec the server
// knows as someone else's by itself (app/dispatch/jobs.py).
//
// Every run and compile the page asks for leaves through sendSpec or postRun, and nowhere else: the
// mark is added here, once, for every route (Run, compile ahead, Step, Compare's sweep, a script, a
// program fetched for the diagram).

let foreign = false;

export function setForeign(value) {
  foreign = Boolean(value);
}

export function isForeign() {
  return foreign;
}

// The payload of a `run` or `compile` event, or of POST /api/run.
function carrying(spec) {
  return foreign ? { spec, from_link: true } : { spec };
}

// A Socket.IO event that runs or compiles `spec` ("run", "compile"); `socket` may be socket.timeout(ms).
export function sendSpec(socket, event, spec, ack) {
  socket.emit(event, carrying(spec), ack);
}

// POST /api/run of `spec`: the fetch's promise.
export function postRun(spec) {
  return fetch("/api/run", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(carrying(spec)) });
}
