// Imports the module gradio's plots import on their first figure (4.6 MB of plotly), so that the first click draws
// at once instead of loading and compiling it then. The browser keeps one copy per URL, so gradio's own import later
// finds it ready. window.__plotlyPreload: a promise of 'loaded' or the error. Loaded with the page's head
// (viz.page.html_head), which gradio adds after the page has loaded.
// (chunk) => void; chunk: the bundle's file name in gradio's front end (PlotlyPlot-<hash>.js).
(chunk) => {
  const preload = () => {
    const app = document.querySelector('script[type=module][src*="/assets/index-"]');
    if (!app || window.__plotlyPreload) return;
    const url = new URL(chunk, app.src).href;
    window.__plotlyPreload = import(url).then(() => 'loaded', e => String(e));
  };
  if (document.readyState === 'complete') preload(); else window.addEventListener('load', preload);
}
