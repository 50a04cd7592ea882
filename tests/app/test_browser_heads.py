"""The heads panel in a real headless chromium, on the tiny models: head table and grid after a run, a click
on a grid cell or a table row opens that head's map, the table sorts by a column, and heads are switched off (picked
in one multi-select from the grid, the table and by typing)."""

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


CHOSEN_JS = "id => Array.from(document.querySelectorAll('#' + id + ' .token span')).map(s => s.innerText.trim())"


def chosen(page, task: str) -> list[str]:
    """The heads to switch off, as the multi-select's chips name them."""
    return page.evaluate(CHOSEN_JS, f"{task}-heads-off")


def add_clicked(page, task: str, label: str) -> None:
    """'Switch the clicked head off', and wait until that head is among the chosen."""
    page.locator(f"#{task}-heads-add").click()
    page.wait_for_function(f"([id, label]) => ({CHOSEN_JS})(id).includes(label)", arg=[f"{task}-heads-off", label])


def type_head(page, task: str, typed: str, label: str) -> list[str]:
    """Type into the multi-select, as a visitor would, and pick `label` among the heads it then lists; the labels
    listed after typing."""
    page.locator(f"#{task}-heads-off input[role=combobox]").click()
    page.keyboard.type(typed)
    options = page.locator(f"#{task}-heads-off [role=option]")
    page.wait_for_function(
        "([id, typed]) => { const o = document.querySelectorAll('#' + id + ' [role=option]');"
        " return o.length > 0 && Array.from(o).every(e => e.innerText.includes(typed)); }",
        arg=[f"{task}-heads-off", typed],
    )
    listed = [o.strip() for o in options.all_inner_texts()]
    options.filter(has_text=label).first.click()
    page.wait_for_function(f"([id, label]) => ({CHOSEN_JS})(id).includes(label)", arg=[f"{task}-heads-off", label])
    page.keyboard.press("Escape")
    return listed


def run_heads_off(page, task: str) -> str:
    """Run the model with the chosen heads off; the comparison's text."""
    page.locator(f"#{task}-heads-run").click()
    compare = page.locator(f"#{task}-heads-compare .heads-compare")
    compare.wait_for()
    return compare.text_content()


def click_row(page, task: str, head: str, key: str | None = None) -> str:
    """Click the head table's row of `head` ('kind:layer:head'), or press `key` on it; the title of the head heatmap
    it opens."""
    plot = f"{task}-heads-heatmap"
    browser.mark_plot(page, plot)
    row = page.locator(f'#{task}-heads-table tr[data-head="{head}"]')
    row.press(key) if key else row.click()
    browser.wait_redrawn(page, plot)
    return browser.plot_title(page, plot)


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
    browser.open_section(page, "sentiment", "What each head does")
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

    # Heads to switch off: one multi-select (no checkbox per head), filled from the grid, the table and by typing
    assert page.locator("#sentiment-heads-off input[type=checkbox]").count() == 0 and chosen(page, "sentiment") == []
    add_clicked(page, "sentiment", "layer 2 · head 3")  # the head clicked in the grid above
    assert "layer 2, head 4" in click_row(page, "sentiment", "self:1:3", key="Enter")  # from the keyboard too
    assert "layer 1, head 2" in click_row(page, "sentiment", "self:0:1")  # a row of the table picks its head
    assert page.locator('#sentiment-heads-table tr[aria-selected="true"]').get_attribute("data-head") == "self:0:1"
    add_clicked(page, "sentiment", "layer 1 · head 2")
    assert type_head(page, "sentiment", "head 1", "layer 1 · head 1") == ["layer 1 · head 1", "layer 2 · head 1"]
    assert chosen(page, "sentiment") == ["layer 2 · head 3", "layer 1 · head 2", "layer 1 · head 1"]
    text = run_heads_off(page, "sentiment")
    assert "Switching off layer 1 · heads 1, 2 and layer 2 · head 3" in text
    assert "intact" in text and "heads off" in text and "points" in text


def test_translation_heads(page, app_url):
    browser.open_tab(page, app_url, "Translation")
    browser.open_section(page, "translation", "What each head does")
    browser.translate(page, "Ein Mann fährt Fahrrad.", decoding="greedy")
    assert "24 heads measured" in browser.wait_heads_measured(page, "translation")
    assert "Cross-attention, layer 1, head 2" in click_cell(page, "translation", 4, 2)
    assert "Encoder self-attention, layer 2, head 1" in click_cell(page, "translation", 1, 1)
    assert "Cross-attention, layer 1, head 2" in click_cell(page, "translation", 4, 2)

    add_clicked(page, "translation", "cross 1 · head 2")
    type_head(page, "translation", "decoder 2", "decoder 2 · head 4")
    text = run_heads_off(page, "translation")
    assert "Switching off decoder 2 · head 4 and cross 1 · head 2" in text
    assert "English" in text and "log-probability" in text


OVERFLOW_JS = """id => Array.from(document.querySelectorAll('#' + id + ' *'))
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => [e.className, e.scrollWidth, e.clientWidth])"""


def test_twelve_heads_at_six_decimals_fit_the_grid_at_1440_px(page):
    """The pre-trained model's grid (6 layers x 12 heads) hid its twelfth column behind a sideways scroll at 1440 px
    once effects were shown to two significant digits (-0.00059): the cells' padding took the room. The widest a
    cell gets is six decimals and a minus sign; thirteen columns of it fit."""
    import gradio as gr

    from viz.heads.effects import effect_decimals
    from viz.heads.grid import grid_styler
    from viz.heads.panel import effect_grid
    from viz.page import theme

    rows = [dict(kind="self", layer=layer, head=h, effect=-0.000059) for layer in range(6) for h in range(12)]
    assert effect_decimals(r["effect"] for r in rows) == 6
    with gr.Blocks() as demo:
        effect_grid(grid_styler(rows), elem_id="grid")
    url = browser.launch_local(demo, css=theme.CSS)
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
