"""What the browser tests read off the page: JavaScript run by page.evaluate with an element's id."""

PLOT_JS = "id => document.querySelector('#' + id + ' .js-plotly-plot')"


TRACE_JS = f"id => {{ const t = ({PLOT_JS})(id)._fullData[0]; return [t.y, Array.from(t.z, r => Array.from(r))]; }}"


WEIGHTS_JS = "id => Array.from(document.querySelectorAll('#' + id + ' .ih-weights td'), td => td.textContent)"


# The page's width against the window's, and the view's box ([left, right] in pixels) with its coloured cells'.
FIT_JS = """id => { const el = document.getElementById(id), box = el.getBoundingClientRect();
  const cells = Array.from(el.querySelectorAll('.ih-cell'), c => c.getBoundingClientRect());
  return {page: document.documentElement.scrollWidth, window: window.innerWidth, view: [box.left, box.right],
          cells: cells.map(c => [c.width, c.height, c.right])}; }"""
