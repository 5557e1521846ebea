// plotly.js (4.8 MB, 1.4 MB gzipped) comes after the editor, never before it: the page is usable
// while it arrives. Whatever draws a plot awaits loadPlotly() first; the page fetches it ahead
// (its <link rel="preload" id="plotly-src">) and runs it once main.js has built the editor.
let loading = null;

export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  loading ??= new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = document.getElementById("plotly-src").href;
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => {
      loading = null;   // a later drawing tries again
      reject(new Error("plotly.js, which draws the plots, could not be loaded"));
    };
    document.head.append(script);
  });
  return loading;
}
