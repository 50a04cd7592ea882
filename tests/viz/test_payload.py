"""Light pages: attention figures are sent in thousandths with a slim template, and stay readable."""

import json

import numpy as np
import plotly.io as pio
import pytest

from viz.attention import figures, token_labels


def sent_bytes(fig) -> int:
    import gradio as gr

    return len(json.dumps(gr.Plot().postprocess(fig).model_dump()).encode())


def attention(T: int, peak: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(T, 0.5), size=T) * (1 - peak)
    w[:, 0] += peak  # a sink token takes `peak` of every row
    return w


@pytest.mark.parametrize("peak", [0.05, 0.9])
def test_a_long_input_heatmap_is_light_and_keeps_hover_precision(peak):
    T = 361  # the tokens of the ~300-word benchmark review
    w = attention(T, peak)
    labels = token_labels.axis_labels([f"w{i}" for i in range(T)])
    fig = figures.attention_heatmap(w, labels, labels, "one head")
    old = fig.to_plotly_json()
    old["data"][0]["z"] = w.astype(np.float32)  # how the figure was sent before: float32
    old["layout"]["template"] = pio.templates["plotly"]
    before = sent_bytes(pio.from_json(pio.to_json(old)))
    after = sent_bytes(fig)
    assert after < 0.45 * before and after < 300_000
    z = np.asarray(fig.data[0].z)
    assert np.abs(z / 1000 - np.minimum(w, 0.999)).max() <= 5e-4 + 1e-6  # the hover: 3 decimals (of float32)
    assert fig.data[0].hovertemplate.count("weight 0.%{z:03d}") == 1
    colorbar = fig.data[0].colorbar
    assert colorbar.ticktext[0] == "0" and float(colorbar.ticktext[-1]) <= max(w.max(), 0.001) + 1e-9
    # the color range is given, from 0 to the largest cell (the browser need not scan 130,000 cells for it)
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0, z.max())


def test_small_multiples_share_one_colour_scale_with_a_colour_bar_and_ticks():
    """Each head was scaled to its own maximum without saying so, with no colour bar and no ticks past 20 tokens."""
    w = np.stack([attention(40, peak, seed=h) for h, peak in enumerate((0.1, 0.5, 0.9, 0.0))])
    axis = token_labels.TokenAxis.of([f"w{i}" for i in range(40)])
    fig = figures.heads_overview(w, axis, axis, "Layer 1")
    assert {t.coloraxis for t in fig.data} == {"coloraxis"}
    assert fig.layout.coloraxis.cmax == max(int(np.asarray(t.z).max()) for t in fig.data)
    assert fig.layout.coloraxis.colorbar.ticktext[0] == "0"
    assert fig.layout.xaxis3.showticklabels is not False and fig.layout.yaxis.showticklabels is not False
    assert "one linear colour scale" in fig.layout.title.subtitle.text


def test_overview_of_a_long_input_has_at_most_32_cells_a_side():
    w = np.stack([attention(361, 0.3, seed=h) for h in range(4)])
    axis = token_labels.TokenAxis.of([f"w{i}" for i in range(361)])
    fig = figures.heads_overview(w, axis, axis, "Layer 1")
    assert all(max(np.asarray(t.z).shape) <= figures.OVERVIEW_CELLS for t in fig.data)
    assert sent_bytes(fig) < 40_000


def test_figures_carry_no_full_plotly_template():
    fig = figures.attention_heatmap(np.eye(3), ["0:a", "1:b", "2:c"], ["0:a", "1:b", "2:c"], "t")
    template = fig.to_plotly_json()["layout"]["template"]
    assert len(json.dumps(template, default=str)) < 1_500 and "polar" not in template["layout"]
