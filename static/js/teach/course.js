// The course page: each puzzle marked done or not yet, from this browser's progress.
import { isDone } from "./progress.js";

const items = [...document.querySelectorAll(".course-item")];
let done = 0;
for (const item of items) {
  if (!isDone(item.dataset.name)) continue;
  done += 1;
  item.classList.add("done");
  const badge = item.querySelector(".course-status");
  badge.textContent = "done";
  badge.classList.add("ok");
}
document.querySelector("#course-progress").textContent = `You have solved ${done} of ${items.length}.`;
