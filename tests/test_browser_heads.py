"""The heads panel in a real headless chromium, on the tiny models: head table and grid after a run, a click
on a grid cell opens that head's map, the table sorts by a column, and heads are switched off."""

import browser
import pytest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]

COLUMN_JS = """([id, col]) => Array.from(document.querySelectorAll('#' + id + ' .virtual-row'))
  .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
  .map(r => r.querySelector('[data-col="' + col + '"]').innerText.trim())"""


def click_cell(page, task: str, row: int, col: int) -> str:
    """Click a cell of the layer x head grid; the title of the head heatmap it opens."""
    plot = f"{task}-heads-heatmap"
    browser.mark_plot(page, plot)
    page.locator(f"#{task}-heads-grid [data-testid=cell-{row}-{col}]").click()
    browser.wait_redrawn(page, plot)
    return browser.plot_title(page, plot)


def switch_off(page, task: str, clicked: str, also: str) -> str:
    """Add the clicked head to the switched-off set, tick another head, run; the comparison's text."""
    boxes = page.locator(f"#{task}-heads-off")
    page.locator(f"#{task}-heads-add").click()
    page.wait_for_function(
        "([id, label]) => Array.from(document.querySelectorAll('#' + id + ' label'))"
        ".some(l => l.innerText.trim() === label && l.querySelector('input').checked)",
        arg=[f"{task}-heads-off", clicked],
    )
    boxes.get_by_label(also, exact=True).check()
    page.locator(f"#{task}-heads-run").click()
    compare = page.locator(f"#{task}-heads-compare .heads-compare")
    compare.wait_for()
    return compare.text_content()


def column(page, elem_id: str, col: int) -> list[str]:
    """The cells of one column of a gr.Dataframe, top to bottom as displayed."""
    return page.evaluate(COLUMN_JS, [elem_id, col])


TABLE_COLUMN_JS = """([id, col]) => Array.from(document.querySelectorAll('#' + id + ' tbody tr'))
  .map(r => r.children[col].innerText.trim())"""


def table_column(page, elem_id: str, col: int) -> list[str]:
    """The cells of one column of the head table (HTML), top to bottom as displayed."""
    return page.evaluate(TABLE_COLUMN_JS, [elem_id, col])


def test_sentiment_heads(page, app_url):
    browser.open_tab(page, app_url, "Sentiment")
    # Before a run: the model's own rows and columns, not Gradio's empty '1 2 3'
    assert column(page, "sentiment-heads-grid", 0) == ["layer 1", "layer 2"]
    assert page.locator("#sentiment-heads-table th").nth(2).text_content().strip() == "effect"
    browser.analyze_review(page, "A warm, funny film. The acting is great, the plot a bore.")
    assert "8 heads measured" in browser.wait_heads_measured(page, "sentiment")
    assert "layer 2, head 3" in click_cell(page, "sentiment", 1, 3)

    # One kind of attention: no 'attention' column (it said 'self' in every row), so effect is the third
    effects = [float(v) for v in table_column(page, "sentiment-heads-table", 2)]
    assert len(effects) == 8
    header = page.locator("#sentiment-heads-table th").nth(2)
    header.click()  # ascending, then descending; the keyboard sorts too
    assert table_column(page, "sentiment-heads-table", 2) == [f"{v:.3f}" for v in sorted(effects)]
    assert header.get_attribute("aria-sort") == "ascending"
    header.press("Enter")
    assert table_column(page, "sentiment-heads-table", 2) == [f"{v:.3f}" for v in sorted(effects, reverse=True)]
    assert header.get_attribute("aria-sort") == "descending"
    layers = table_column(page, "sentiment-heads-table", 0)
    page.locator("#sentiment-heads-table th").nth(0).click()
    assert table_column(page, "sentiment-heads-table", 0) == sorted(layers)

    text = switch_off(page, "sentiment", "layer 2 · head 3", "layer 1 · head 1")
    assert "Switching off layer 1 · head 1 and layer 2 · head 3" in text
    assert "intact" in text and "heads off" in text and "points" in text


def test_translation_heads(page, app_url):
    browser.open_tab(page, app_url, "Translation")
    browser.translate(page, "Ein Mann fährt Fahrrad.", decoding="greedy")
    assert "24 heads measured" in browser.wait_heads_measured(page, "translation")
    assert "Cross-attention, layer 1, head 2" in click_cell(page, "translation", 4, 2)
    assert "Encoder self-attention, layer 2, head 1" in click_cell(page, "translation", 1, 1)
    assert "Cross-attention, layer 1, head 2" in click_cell(page, "translation", 4, 2)

    text = switch_off(page, "translation", "cross 1 · head 2", "decoder 2 · head 4")
    assert "Switching off decoder 2 · head 4 and cross 1 · head 2" in text
    assert "English" in text and "log-probability" in text


OVERFLOW_JS = """id => Array.from(document.querySelectorAll('#' + id + ' *'))
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => [e.className, e.scrollWidth, e.clientWidth])"""


def test_twelve_heads_at_six_decimals_fit_the_grid_at_1440_px(page):
    """The pre-trained model's grid (6 layers x 12 heads) hid its twelfth column behind a sideways scroll at 1440 px
    once effects were shown to two significant digits (-0.00059): the cells' padding took the room. The widest a
    cell gets is six decimals and a minus sign; thirteen columns of it fit."""
    import gradio as gr

    from viz.heads import handlers as heads
    from viz.heads.panel import effect_grid
    from viz.page import theme

    rows = [dict(kind="self", layer=layer, head=h, effect=-0.000059) for layer in range(6) for h in range(12)]
    assert heads.effect_decimals(r["effect"] for r in rows) == 6
    with gr.Blocks() as demo:
        effect_grid(heads.grid_styler(rows), elem_id="grid")
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=browser.free_port(), prevent_thread_lock=True,
                            quiet=True, css=theme.CSS)  # fmt: skip
    size = page.viewport_size
    try:
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(url)
        page.wait_for_selector("#grid [data-testid=cell-5-12]")
        assert page.locator("#grid [data-testid=cell-5-12]").inner_text().strip() == "-0.000059"
        assert page.evaluate(OVERFLOW_JS, "grid") == []
        # On a phone the heads scroll sideways and the layer names stay in sight
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_function(f"id => ({OVERFLOW_JS})(id).length > 0", arg="grid")
        viewport = "document.querySelector('#grid .virtual-table-viewport')"
        page.evaluate(f"() => {{ const v = {viewport}; v.scrollLeft = v.scrollWidth; }}")
        page.wait_for_function(f"() => {viewport}.scrollLeft > 500")
        left = "s => document.querySelector(s).getBoundingClientRect().left"
        layer_name = page.evaluate(left, "#grid [data-testid=cell-5-0]")
        assert layer_name >= page.evaluate(left, "#grid .virtual-table-viewport")
    finally:
        page.set_viewport_size(size)
        demo.close()
