// The editor page's layout: the splitters between the source and the output, and between the
// source and the launch form, each dragged or moved with the keys.
const $ = (selector) => document.querySelector(selector);

// A splitter is a focusable separator: drag it, or move it by 2% with the arrow keys (Home/End: the
// ends). onMove(event) takes a pointer event; onKey(delta) a step, in %; both return the share now.
function splitter(handle, onMove, onKey) {
  if (!handle) return;
  handle.tabIndex = 0;
  const report = (share) => handle.setAttribute("aria-valuenow", String(Math.round(share)));
  handle.addEventListener("keydown", (event) => {
    const step = { ArrowLeft: -2, ArrowUp: -2, ArrowRight: 2, ArrowDown: 2, Home: -100, End: 100 }[event.key];
    if (step === undefined) return;
    event.preventDefault();
    report(onKey(step));
  });
  handle.addEventListener("pointerdown", (down) => {
    down.preventDefault();
    handle.setPointerCapture(down.pointerId);
    handle.classList.add("dragging");
    const move = (event) => report(onMove(event));
    const up = () => {
      handle.classList.remove("dragging");
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", up);
    };
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
  });
}

export function initSplitters() {
  const workspace = $("#workspace");
  const column = $("#column-left");
  const launch = $("#launch");
  // The source column's share of the width, and the launch form's of the column's height, in %.
  const setLeft = (share) => {
    share = Math.min(80, Math.max(20, share));
    workspace.style.setProperty("--left-width", `${share}%`);
    return share;
  };
  const setLaunch = (share) => {
    share = Math.min(85, Math.max(10, share));
    launch.style.flex = `0 0 ${share}%`;
    launch.style.maxHeight = "none";
    return share;
  };
  const leftNow = () => (100 * column.getBoundingClientRect().width) / workspace.getBoundingClientRect().width;
  const launchNow = () => (100 * launch.getBoundingClientRect().height) / column.getBoundingClientRect().height;
  splitter($("#split-cols"), (event) => {
    const box = workspace.getBoundingClientRect();
    return setLeft((100 * (event.clientX - box.left)) / box.width);
  }, (step) => setLeft(leftNow() + step));
  splitter($("#split-rows"), (event) => {
    const box = column.getBoundingClientRect();
    return setLaunch((100 * (box.bottom - event.clientY)) / box.height);
  }, (step) => setLaunch(launchNow() - step));   // down: the form gets smaller
  $("#split-cols")?.setAttribute("aria-valuenow", String(Math.round(leftNow())));
  $("#split-rows")?.setAttribute("aria-valuenow", String(Math.round(launchNow())));
}
