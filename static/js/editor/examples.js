// The examples picker: the gallery's kernels by name; the address names the one on screen, and the
// picker forgets it once its kernel is gone from the source.
import { on } from "../shared/hub.js";

// select: the picker; initial: the page's initial state; page: {setSpec, setForeign, drafts, toast}.
export function initExamples(select, initial, { setSpec, setForeign, drafts, toast }) {
  if (!select) return;
  let shown = initial.example || "";
  let kernel = initial.example ? initial.spec.kernel : null;   // the shown example's kernel
  select.value = shown;
  // The address names the example on screen: the playground's own address opens the default one.
  if (shown && location.pathname === "/") history.replaceState(null, "", `/examples/${encodeURIComponent(shown)}${location.search}`);
  // Once the example's kernel is gone from the source (replaced, or another spec loaded), the picker
  // and the title no longer name it.
  const forget = () => {
    shown = "";
    kernel = null;
    select.value = "";
    document.title = "Triton Playground";
  };
  on("source-changed", ({ source }) => { if (kernel && !new RegExp(`def\\s+${kernel}\\s*\\(`).test(source)) forget(); });
  on("spec-loaded", ({ spec }) => { if (kernel && spec.kernel !== kernel) forget(); });
  select.addEventListener("change", async () => {
    const name = select.value;
    if (!name) return;
    const title = select.selectedOptions[0].textContent;
    if (!drafts.confirmReplace(`the example "${title}"`)) {
      select.value = shown;
      return;
    }
    const response = await fetch(`/api/examples/${encodeURIComponent(name)}`);
    if (!response.ok) return toast(`Could not load the example "${name}".`);
    const example = await response.json();
    setForeign(false);
    setSpec(example.spec);
    shown = name;
    kernel = example.spec.kernel;
    select.value = name;
    history.pushState(null, "", `/examples/${encodeURIComponent(name)}`);
    drafts.markClean();
    document.title = `${example.title} · Triton Playground`;
  });
}
