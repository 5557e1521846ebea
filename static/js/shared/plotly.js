// plotly.js (4.8 MB, 1.4 MB gzipped) is fetched when a figure is first needed, never with the page:
// the editor loads, edits and runs without it. Whatever draws a plot awaits loadPlotly() first; the
// page names its address (<meta id="plotly-src">).
let loading = null;

export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  loading ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = document.getElementById("plotly-src").content;
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => {
      loading = null;   // a later drawing tries again
      reject(new Error("plotly.js, which draws the plots, could not be loaded"));
    };
    document.head.append(script);
  });
  return loading;
}
