"""The heads panel's handlers on the tiny models: table, grid, a click, switching heads off."""

from functools import partial
from types import SimpleNamespace

import pytest

from viz.attention import token_labels
from viz.heads.clicked import head_heatmap, selected_head, table_head
from viz.heads.comparisons import _word_diff, switched_off_names
from viz.heads.effects import effect_decimals
from viz.heads.grid import empty_grid, grid_styler
from viz.heads.measure import _no_head_decides, head_table
from viz.heads.names import parse_heads
from viz.heads.switch_off import add_head, switch_off
from viz.heads.table import empty_table, head_table_view
from viz.numbers import number
from viz.sentiment.handlers import analyze_review
from viz.translation.handlers import translate

REVIEW = "A warm, funny film. The acting is great!"
GERMAN = "Ein Mann fährt Fahrrad."


def click(grid, row: int, col: int):
    """What gradio passes for a click on a grid cell (gr.SelectData's fields)."""
    return SimpleNamespace(index=[row, col], row_value=list(grid.data.iloc[row]))


def test_sentiment_table_grid_and_click(sentiment):
    view, grid, table, status = head_table(sentiment, "sentiment", REVIEW)
    assert "8 heads measured" in status and "predicted label's probability" in status
    assert list(grid.data.columns) == ["", "head 1", "head 2", "head 3", "head 4"]
    assert list(grid.data.iloc[:, 0]) == ["layer 1", "layer 2"]  # counted from 1 in the UI
    assert grid.data.iloc[1, 3] == pytest.approx(view.rows[6]["effect"])  # layer 2, head 3
    assert "background-color" in table.html() and "background-color" in grid.to_html()  # coloured
    cols = table.columns
    assert cols[:3] == ["layer", "head", "effect"] and "agreement" not in cols  # one kind: no 'self' column
    assert table.column("layer") == ["1", "1", "1", "1", "2", "2", "2", "2"]
    decimals = effect_decimals(r["effect"] for r in view.rows)
    assert table.column("effect") == [number(r["effect"], decimals) for r in view.rows]

    value = selected_head(view, click(grid, 1, 3))
    assert value == "self:1:2"
    assert selected_head(view, click(grid, 1, 0)) is None  # the name column
    state, _, _ = analyze_review(sentiment, REVIEW)
    fig = head_heatmap(state, view, value)
    assert "layer 2, head 3" in fig.layout.title.text and "effect" in fig.layout.title.text
    T = len(state.maps.queries["self"])
    assert fig.data[0].z.shape == (T, T)
    assert add_head(["self:0:0"], value) == ["self:0:0", value]
    assert add_head([value], value) == [value]


def test_sentiment_switch_off_spells_out_the_change(sentiment):
    view, *_ = head_table(sentiment, "sentiment", REVIEW)
    chosen = ["self:0:0", "self:1:3"]
    out = switch_off(sentiment, view, chosen)
    intact = sentiment(REVIEW)
    off = sentiment(REVIEW, head_mask=parse_heads(chosen))
    assert "Switching off layer 1 · head 1 and layer 2 · head 4" in out
    assert f"{intact.probabilities['positive']:.1%}" in out and f"{off.probabilities['positive']:.1%}" in out
    assert ("flips" in out) == (off.label != intact.label)
    assert "Choose at least one head" in switch_off(sentiment, view, [])
    assert "Run the model first" in switch_off(sentiment, None, chosen)


def test_translation_table_click_and_switch_off(translation):
    view, grid, table, status = head_table(translation, "translation", GERMAN, "greedy", 4)
    assert "24 heads measured" in status and view.beam_size == 1
    assert list(grid.data.iloc[:, 0]) == ["encoder 1", "encoder 2", "decoder 1", "decoder 2", "cross 1", "cross 2"]
    state, english, _ = translate(translation, GERMAN, "greedy", 4)
    produced = [s.token for s in state.steps]
    src = token_labels.axis_labels([t.text for t in state.result.source_tokens[:-1]] + ["</s>"])
    labels = {
        "src": src,
        "tgt": token_labels.axis_labels(produced),
        "read": token_labels.axis_labels(["<s>", *produced[:-1]]),
    }
    for row, kind, (q, k) in [
        (0, "encoder", ("src", "src")),
        (3, "decoder", ("tgt", "read")),  # the decoder's keys: the start token, then its earlier output
        (5, "cross", ("tgt", "src")),
    ]:
        value = selected_head(view, click(grid, row, 2))
        assert value == f"{kind}:{row % 2}:1"
        fig = head_heatmap(state, view, value)
        assert list(fig.data[0].y) == labels[q] and list(fig.data[0].x) == labels[k]
    out = switch_off(translation, view, ["cross:0:0", "cross:1:1"])
    off = translation(GERMAN, beam_size=1, head_mask=parse_heads(["cross:0:0", "cross:1:1"]))
    assert "Switching off cross 1 · head 1 and cross 2 · head 2" in out and "log-probability" in out
    assert f"{off.score:.2f}" in out
    assert ("unchanged" in out) == (off.translation == english)


def test_word_diff_marks_changes_and_escapes():
    out = _word_diff("a dog runs <b>", "a cat runs <b>")
    assert "<del" in out and ">dog</del>" in out and ">cat</ins>" in out and "&lt;b&gt;" in out and "<b>" not in out


def test_bad_input_gives_a_message_not_a_traceback(sentiment, translation):
    view, grid, table, status = head_table(sentiment, "sentiment", "   ")
    assert view is None and "empty" in status
    assert grid.equals(empty_grid(sentiment.head_layers, sentiment.n_heads)) and table.empty
    assert "<th" in table.html() and "<td" not in table.html()  # the headers, no rows
    view, grid, table, status = head_table(translation, "translation", "", "greedy", 4)
    assert view is None and "German sentence" in status


def test_before_any_measurement_the_grid_and_table_show_their_own_headers(sentiment, translation):
    """Gradio draws an empty Dataframe with the headers '1 2 3': the panel starts with the model's own rows
    and columns instead (a dash in each grid cell, no table rows)."""
    grid = empty_grid(sentiment.head_layers, sentiment.n_heads)
    assert list(grid.columns) == ["", "head 1", "head 2", "head 3", "head 4"]
    assert list(grid[""]) == ["layer 1", "layer 2"] and set(grid.iloc[:, 1:].to_numpy().ravel()) == {"–"}
    table = empty_table(sentiment.head_layers)
    assert table.empty and table.columns[:3] == ["layer", "head", "effect"] and "agreement" not in table.columns
    grid = empty_grid(translation.head_layers, translation.n_heads)
    assert list(grid[""])[:2] == ["encoder 1", "encoder 2"] and "cross 1" in list(grid[""])
    table = empty_table(translation.head_layers)
    assert table.columns[0] == "attention" and table.columns[-1] == "agreement"
    # the same headers as a measured table
    _, _, measured, _ = head_table(translation, "translation", GERMAN, "greedy", 4)
    assert table.columns == measured.columns
    _, _, measured, _ = head_table(sentiment, "sentiment", "A warm and funny film.")
    assert empty_table(sentiment.head_layers).columns == measured.columns


def test_small_effects_show_two_significant_digits_not_zero():
    """A 6 x 12-head model on a confident review: every head moves the probability by a thousandth or less, and at 3
    decimals the grid read 0.000 in nearly every cell. Effects now show the largest to 2 significant digits."""
    effects = [-0.00213, 0.00004, 0.00087, -0.0000004]
    rows = [
        {"kind": "self", "layer": 0, "head": h, "effect": e, "entropy": 1.0, "distance": 2.0}
        for h, e in enumerate(effects)
    ]
    assert [effect_decimals(v) for v in ([0.5], [0.012], [0.0099], [-0.00213], [3e-9], [0.0], [])] == [
        3,
        3,
        4,
        4,
        6,
        3,
        3,
    ]
    assert head_table_view(rows).column("effect") == ["-0.0021", "0.0000", "0.0009", "0.0000"]
    grid = grid_styler(rows).to_html()
    assert "-0.0021" in grid and "0.0009" in grid and "-0.0000" not in grid
    assert head_table_view(rows).column("entropy") == ["1.000"] * 4  # the other columns as before
    assert "No head alone moves it by 0.01" in _no_head_decides(rows)
    rows[0]["effect"] = -0.25
    assert head_table_view(rows).column("effect")[:3] == ["-0.250", "0.000", "0.001"]
    assert _no_head_decides(rows) == ""


def test_numbers_never_show_minus_zero_and_kinds_are_named_for_readers(translation):
    """Issue 25 item 5: '-0.000' in the head grid; the 'attention' column said 'self' in every row."""
    assert number(-0.0001) == "0.000" and number(-0.0006) == "-0.001" and number(None) == "–"
    rows = [
        {"kind": "self", "layer": 0, "head": h, "effect": e, "entropy": 1.0, "distance": 2.0}
        for h, e in enumerate([-0.0004, 0.0, 0.25, -0.3])
    ]
    assert "-0.000" not in grid_styler(rows).to_html() and "-0.000" not in head_table_view(rows).html()
    assert "0.000" in grid_styler(rows).to_html()
    assert head_table_view(rows).column("effect") == ["0.000", "0.000", "0.250", "-0.300"]
    _, _, table, _ = head_table(translation, "translation", GERMAN, "greedy", 4)
    kinds = set(table.column("attention"))
    assert kinds == {"Encoder self-attention", "Decoder self-attention", "Cross-attention"}


def test_the_head_table_colours_effects_and_leaves_missing_values_blank():
    rows = [
        {"kind": "self", "layer": 0, "head": 0, "effect": -0.2, "entropy": 1.0, "distance": 2.0, "previous": 0.5},
        {
            "kind": "self",
            "layer": 0,
            "head": 1,
            "effect": 0.1,
            "entropy": float("nan"),
            "distance": 1.0,
            "previous": None,
        },
    ]
    table = head_table_view(rows)
    effect, entropy = table.columns.index("effect"), table.columns.index("entropy")
    assert "234,88,12" in table.rows[0][effect][1] and "37,99,235" in table.rows[1][effect][1]  # orange, blue
    assert table.column("entropy") == ["1.000", "–"] and table.rows[1][entropy][1] == ""
    assert table.column("on previous") == ["0.500", "–"]
    page = table.html()
    assert page.count("<tr") == 3 and page.count('aria-sort="none"') == len(table.columns)
    # each row names its head, for a click on it (head_table.js)
    assert '<tr data-head="self:0:0" tabindex="0">' in page and 'data-head="self:0:1"' in page


def test_a_click_on_a_table_row_picks_its_head(sentiment):
    """A row of the head table sends its head's id (head_table.js: a select event, the row's data-head); the panel
    keeps it as the clicked head, as a click in the grid does, for its map and 'Switch the clicked head off'."""
    view, grid, table, _ = head_table(sentiment, "sentiment", REVIEW)
    row = SimpleNamespace(index=5, value=table.heads[5])
    assert table.heads[5] == "self:1:1" and table.column("layer")[5] == "2" and table.column("head")[5] == "2"
    assert table_head(view, row) == selected_head(view, click(grid, 1, 2)) == "self:1:1"
    assert table_head(None, row) is None  # nothing measured yet
    assert table_head(view, SimpleNamespace(index=0, value="self:9:0")) is None  # no such head
    assert table_head(view, SimpleNamespace(index=0, value="self:0:0:x")) is None
    assert add_head(["self:0:0"], table_head(view, row)) == ["self:0:0", "self:1:1"]


def test_column_help_speaks_the_tabs_language():
    """Issue 25 item 5: the sentiment tab's help named the German sentence's </s> and the decoder's <s>."""
    from viz.tasks import TASKS

    COLUMNS_HELP = {name: t.columns_help for name, t in TASKS.items()}

    assert "German" not in COLUMNS_HELP["sentiment"] and "decoder" not in COLUMNS_HELP["sentiment"]
    assert all("<s>" not in text and "</s>" not in text for text in COLUMNS_HELP.values())
    assert "German" in COLUMNS_HELP["translation"]


def test_switched_off_heads_are_named_by_layer():
    """Every head of a 6 x 12 model switched off was written out as 72 names; a layer's heads now go together."""
    names = partial(switched_off_names, layers={"self": 6}, n_heads=12)
    assert names({("self", 0, 0): 0.0, ("self", 1, 3): 0.0}) == "layer 1 · head 1 and layer 2 · head 4"
    mask = {("self", 2, h): 0.0 for h in range(12)} | {("self", 0, 4): 0.0, ("self", 0, 1): 0.0}
    assert names(mask) == "layer 1 · heads 2, 5 and layer 3 · all 12 heads"
    assert names({("self", layer, h): 0.0 for layer in range(6) for h in range(12)}) == "all 72 heads"
    cross = {("cross", 0, 1): 0.0, ("encoder", 1, 0): 0.0}  # in the models' order: encoder before cross
    assert switched_off_names(cross, {"encoder": 3, "decoder": 3, "cross": 3}, 4) == (
        "encoder 2 · head 1 and cross 1 · head 2"
    )


def test_a_small_change_is_written_to_two_significant_digits():
    """Four heads off moved the pre-trained model's 96.9% by a few hundredths of a point: "+0.0 points" beside
    "96.9% to 97.0%", and "-0.0 points" in the table."""
    from viz.numbers import points

    assert points(0.0004) == "+0.040 points" and points(-0.00004) == "-0.004 points"
    assert points(0.042) == "+4.2 points" and points(-0.5) == "-50.0 points"
    assert points(0.0) == "0.0 points" and points(-0.0000001) == "0.000 points"  # never "-0"


def test_what_runs_for_a_task_comes_from_its_row_in_the_task_table(sentiment, monkeypatch):
    """head_table and switch_off run what viz.tasks.TASKS[task].head_runs names, not a choice made on the task's
    name: a task given the translator's runs would decode."""
    import dataclasses

    from viz.heads.runs import LABEL, HeadRuns
    from viz.tasks import TASKS

    calls = []

    def measure(pipe, text, beam, result, progress=None):
        calls.append(("measure", text, beam))
        return LABEL.measure(pipe, text, beam, result, progress)

    def off(pipe, heads, mask):
        calls.append(("off", heads.text, sorted(mask)))
        return "<p>off</p>"

    monkeypatch.setitem(TASKS, "sentiment", dataclasses.replace(TASKS["sentiment"], head_runs=HeadRuns(measure, off)))
    view, *_ = head_table(sentiment, "sentiment", REVIEW)
    assert switch_off(sentiment, view, ["self:1:0"]) == "<p>off</p>"
    assert calls == [("measure", REVIEW, None), ("off", REVIEW, [("self", 1, 0)])]
    assert len(view.rows) == 8
