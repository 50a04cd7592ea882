// A section of a tab opened (viz.page.layout): plotly fits the plots in it to their width. gradio draws a plot that
// arrives while its section is hidden at plotly's default width (the section has no width then) and resizes plots
// only when the window does.
// () => void
() => {
  requestAnimationFrame(() => window.dispatchEvent(new Event('resize')));
}
