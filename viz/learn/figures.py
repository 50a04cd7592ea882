"""One plotly figure per step of the Learn tab (pipelines.learn), drawn from the step's arrays alone: a registry from
the step's key to its draw function. `draw(step, options)` redraws without the model (options: the next token's
temperature, top_p and seed). Axis labels are the step's unique "i:token" labels; backgrounds are the page's own, so
the dark theme (viz/page/theme.py) restyles them as every other figure."""

import html
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pipelines.learn import sample_view
from pipelines.learn.walk import Step
from viz.attention.figures import COLORSCALE, FONT, slim_template
from viz.page.sections import SECTIONS

DIVERGING = "RdBu"
HEIGHT = 440
SHOWN_TOKENS = 20  # the next token's bars: the likeliest shown (the sampling runs over every kept logit)
ORANGE, BLUE, GREY = "#ea580c", "#2563eb", "#9ca3af"


def layout(fig: go.Figure, title: str, height: int = HEIGHT, subtitle: str = "") -> go.Figure:
    """The project's look: a slim template, a left title with a subtitle, the page's background (light or dark)."""
    fig.update_layout(
        template=slim_template(),
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15), subtitle=dict(text=subtitle)),
        height=height,
        margin=dict(l=10, r=10, t=90 if subtitle else 70, b=10),
        font=FONT,
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        hoverlabel=dict(bgcolor="white", font_size=13),
    )
    fig.update_annotations(font_size=12)
    return fig


def r3(a) -> np.ndarray:
    """Three decimals, float32: what a hover shows, at a quarter of the bytes."""
    return np.round(np.asarray(a, dtype=np.float32), 3)


def esc(labels) -> list[str]:
    """Labels as plotly shows them: escaped (plotly reads <s> and </s> as tags, and a token may be one)."""
    return [html.escape(str(label), quote=False) for label in labels]


def dims(n: int) -> list[str]:
    return [f"d{i}" for i in range(n)]


def weights_map(z, x, y, hover: str = "weight %{z:.3f}", **kw) -> go.Heatmap:
    """Attention weights from 0 to 1 over key (x) and query (y) labels."""
    return go.Heatmap(z=r3(z), x=esc(x), y=esc(y), zmin=0, zmax=1, colorscale=COLORSCALE,
                      hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{hover}<extra></extra>", **kw)  # fmt: skip


def values_map(z, y, name: str, **kw) -> go.Heatmap:
    """A matrix of vectors (rows: tokens, columns: dims) on a diverging scale centred on 0."""
    z = r3(z)
    top = float(np.abs(z).max()) or 1.0
    return go.Heatmap(z=z, x=dims(z.shape[1]), y=esc(y), zmin=-top, zmax=top, colorscale=DIVERGING,
                      hovertemplate=f"%{{y}}<br>{name} %{{x}} = %{{z:.3f}}<extra></extra>", **kw)  # fmt: skip


def reversed_rows(fig: go.Figure) -> go.Figure:
    """The first token on top, as text reads."""
    fig.update_yaxes(autorange="reversed")
    return fig


def panels(n: int, titles: list[str], cols: int | None = None) -> go.Figure:
    cols = cols or n
    rows = -(-n // cols)
    return make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.06,
                         vertical_spacing=0.12 if rows > 1 else 0.0)  # fmt: skip


def tokens(step: Step) -> go.Figure:
    v = step.arrays["vectors"]
    fig = go.Figure(values_map(v, step.labels, "dim"))
    return layout(reversed_rows(fig), "Each token's embedding vector",
                  subtitle=f"the first {v.shape[1]} numbers of each row of the embedding matrix")  # fmt: skip


def plain_attention(step: Step) -> go.Figure:
    fig = go.Figure(weights_map(step.arrays["weights"], step.labels, step.labels))
    return layout(reversed_rows(fig), "softmax(x x^T): attention with no parameters",
                  subtitle="row i: how much token i's output takes from each token j")  # fmt: skip


def qkv(step: Step) -> go.Figure:
    fig = panels(3, ["query q", "key k", "value v"])
    for i, name in enumerate("qkv"):
        fig.add_trace(values_map(step.arrays[name], step.labels, name, showscale=i == 2), 1, i + 1)
        fig.update_yaxes(showticklabels=i == 0, row=1, col=i + 1)
    return layout(reversed_rows(fig), "Queries, keys and values (layer 0, head 0)")


def scaling(step: Step) -> go.Figure:
    a = step.arrays
    fig = panels(3, ["without 1/sqrt(d)", "with 1/sqrt(d)", "row entropy (nats)"])
    fig.add_trace(weights_map(a["weights_unscaled"], step.labels, step.labels, showscale=False), 1, 1)
    fig.add_trace(weights_map(a["weights"], step.labels, step.labels), 1, 2)
    for name, key, color in (("without", "entropy_unscaled", GREY), ("with", "entropy", BLUE)):
        fig.add_trace(go.Bar(x=r3(a[key]), y=esc(step.labels), orientation="h", name=name, marker_color=color,
                             hovertemplate="%{y}: %{x:.3f} nats<extra>" + name + "</extra>"), 1, 3)  # fmt: skip
    fig.update_yaxes(showticklabels=False, col=2)
    fig.update_yaxes(showticklabels=False, col=3)
    sub = f"mean entropy {a['entropy_unscaled'].mean():.2f} -> {a['entropy'].mean():.2f} nats; mean largest weight "
    sub += f"{a['max_unscaled'].mean():.2f} -> {a['max'].mean():.2f}"
    return layout(reversed_rows(fig).update_layout(barmode="group", showlegend=False), "Scaling", subtitle=sub)


def masks(step: Step) -> go.Figure:
    a = step.arrays
    has_causal = "causal" in a
    fig = panels(2 if has_causal else 1, ["your text in a padded batch (layer 0, head 0)"]
                 + (["the causal mask (True = attend)"] if has_causal else []))  # fmt: skip
    fig.add_trace(weights_map(a["weights"], step.labels, step.labels), 1, 1)
    if has_causal:
        c = a["causal"].astype(np.int8)
        n = list(range(c.shape[0]))
        fig.add_trace(
            go.Heatmap(
                z=c,
                x=n,
                y=n,
                zmin=0,
                zmax=1,
                colorscale=[[0, "#e5e7eb"], [1, BLUE]],
                showscale=False,
                hovertemplate="query %{y}, key %{x}: %{z}<extra></extra>",
            ),
            1,
            2,
        )
    sub = f"padding keys get weight 0; the padded row vs the text alone: max |difference| {float(a['difference']):.1e}"
    return layout(reversed_rows(fig), "Masks", subtitle=sub)


def heads_grid(maps: np.ndarray, x, y, titles: list[str], cols: int = 4) -> go.Figure:
    """Small multiples of attention maps (n, Tq, Tk), one colour scale."""
    n = len(maps)
    fig = panels(n, titles, cols=min(cols, n))
    for i, m in enumerate(maps):
        fig.add_trace(weights_map(m, x, y, showscale=i == 0, coloraxis=None), i // cols + 1, i % cols + 1)
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    return reversed_rows(fig)


def _grid_height(n: int, cols: int = 4) -> int:
    return 90 + 230 * -(-n // cols)


def multi_head(step: Step) -> go.Figure:
    maps = step.arrays["patterns"]
    fig = heads_grid(maps, step.labels, step.labels, [f"head {h}" for h in range(len(maps))])
    return layout(fig, "Every head of layer 0", _grid_height(len(maps)),
                  "each head its own map; their outputs concatenated, then mixed by W_O")  # fmt: skip


def positions(step: Step) -> go.Figure:
    a = step.arrays
    fig = panels(3, ["the positions", "layer 0, head 0", "without positions"])
    fig.add_trace(values_map(a["table"], step.labels, "dim", showscale=False), 1, 1)
    fig.add_trace(weights_map(a["weights"], step.labels, step.labels), 1, 2)
    fig.add_trace(weights_map(a["weights_without"], step.labels, step.labels, showscale=False), 1, 3)
    fig.update_yaxes(showticklabels=False, col=2)
    fig.update_yaxes(showticklabels=False, col=3)
    sub = "largest change of a weight per head without positions: " + ", ".join(f"{c:.2f}" for c in a["change"])
    return layout(reversed_rows(fig), "Positions", subtitle=sub)


def block(step: Step) -> go.Figure:
    a = step.arrays
    layers = [f"layer {i}" for i in range(len(a["resid"]))]
    fig = go.Figure()
    for key, name, color in (("resid", "stream in", GREY), ("attn", "attention adds", BLUE),
                             ("mlp", "feed-forward adds", ORANGE)):  # fmt: skip
        fig.add_trace(go.Bar(x=layers, y=r3(a[key]), name=name, marker_color=color,
                             hovertemplate="%{x}: %{y:.2f}<extra>" + name + "</extra>"))  # fmt: skip
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=1.02, x=0), yaxis_title="mean vector length")
    return layout(fig, "What each part adds to the residual stream", subtitle="the mean length of the vectors")


def feed_forward(step: Step) -> go.Figure:
    a = step.arrays
    fig = panels(2, ["hidden units (layer 0)", "share of hidden units > 0"])
    fig.add_trace(values_map(a["hidden"], step.labels, "unit"), 1, 1)
    fig.add_trace(go.Bar(x=r3(a["active"]), y=esc(step.labels), orientation="h", marker_color=BLUE,
                         hovertemplate="%{y}: %{x:.2f}<extra></extra>"), 1, 2)  # fmt: skip
    fig.update_yaxes(showticklabels=False, col=2)
    return layout(reversed_rows(fig), "The feed-forward network, token by token")


def classifier(step: Step) -> go.Figure:
    a = step.arrays
    fig = panels(2, ["pooling weight per token", "label probabilities"])
    fig.add_trace(go.Bar(x=r3(a["pool_weights"]), y=esc(step.labels), orientation="h", marker_color=BLUE,
                         hovertemplate="%{y}: %{x:.3f}<extra></extra>", showlegend=False), 1, 1)  # fmt: skip
    labels = [str(x) for x in a["labels"]]
    for key, name, color in (("probabilities", "softmax", GREY), ("calibrated", "calibrated", ORANGE)):
        fig.add_trace(go.Bar(x=labels, y=r3(a[key]), name=name, marker_color=color,
                             hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>"), 1, 2)  # fmt: skip
    fig.update_yaxes(autorange="reversed", col=1)
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.08, yanchor="top", x=0.55))
    return layout(fig, "Pooling and the classifier")


def cross_attention(step: Step) -> go.Figure:
    maps = step.arrays["weights"]
    target = list(step.arrays["target"])
    fig = heads_grid(maps, step.labels, target, [f"head {h}" for h in range(len(maps))], cols=2)
    fig.update_xaxes(showticklabels=True, tickangle=-45)
    fig.update_yaxes(showticklabels=True, col=1)
    return layout(fig, "Cross-attention: each English token (row) over the German (columns)",
                  _grid_height(len(maps), 2) + 60)  # fmt: skip


def next_token(step: Step, options: dict | None = None) -> go.Figure:
    o = {"temperature": 1.0, "top_p": 1.0, "seed": 0} | (options or {})
    a = step.arrays
    v = sample_view(a["logits"], o["temperature"], o["top_p"], o["seed"])
    n = min(SHOWN_TOKENS, len(v.raw))
    tokens = esc(a["tokens"][:n])
    fig = go.Figure()
    fig.add_trace(go.Bar(x=r3(v.raw[:n]), y=tokens, orientation="h", name="temperature 1", marker_color=GREY,
                         hovertemplate="%{y}: %{x:.3f}<extra>temperature 1</extra>"))  # fmt: skip
    colors = [ORANGE if i == v.token else BLUE if v.kept[i] else GREY for i in range(n)]
    fig.add_trace(go.Bar(x=r3(v.scaled[:n]), y=tokens, orientation="h", name=f"temperature {v.temperature:g}",
                         marker_color=colors, hovertemplate="%{y}: %{x:.3f}<extra>scaled</extra>"))  # fmt: skip
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0),
                      xaxis_title="probability")  # fmt: skip
    sub = (f"top-p {v.top_p:g} keeps {v.cut} of the {len(v.raw)} likeliest; entropy {v.entropy_raw:.2f} -> "
           f"{v.entropy:.2f} nats; drawn with seed {v.seed}: {esc([a['tokens'][v.token]])[0]}")  # fmt: skip
    return layout(fig, "The next token", 120 + 22 * n, sub)


def training(step: Step) -> go.Figure:
    a = step.arrays
    if not a:
        return message("No training snapshots for this model")
    maps = a["patterns"]
    y = list(a["target"]) if "target" in a else step.labels
    titles = [f"{s} ({e:.2f} nats)" for s, e in zip(a["steps"], a["entropy"])]
    fig = heads_grid(maps, step.labels, y, titles, cols=3)
    return layout(fig, "One head through training", _grid_height(len(maps), 3))


NEXT = {
    "All heads": "every map of every layer and head",
    "Inside one head": "one row taken apart: query, keys, values",
    "Layer by layer": "the logit lens, attribution and patching",
    "What each head does": "switch a head off, see the answer change",
    "Compare": "two inputs side by side",
    "Training steps": "the model at its training snapshots",
}


def next_steps(step: Step) -> go.Figure:
    names = list(SECTIONS)
    clear, line = "rgba(0,0,0,0)", dict(color="rgba(127,127,127,0.5)")  # the page's background, light or dark
    header = dict(values=["<b>section of each task tab</b>", "<b>what it shows</b>"], fill_color=clear, line=line,
                  align="left")  # fmt: skip
    cells = dict(values=[names, [NEXT.get(n, "") for n in names]], fill_color=clear, line=line, align="left")
    fig = go.Figure(go.Table(header=header, cells=cells))
    return layout(fig, "Where to go next", 80 + 32 * len(names))


def message(text: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font=dict(size=14))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return layout(fig, "", 200)


FIGURES: dict[str, Callable[..., go.Figure]] = {
    "tokens": tokens,
    "plain_attention": plain_attention,
    "qkv": qkv,
    "scaling": scaling,
    "masks": masks,
    "multi_head": multi_head,
    "positions": positions,
    "block": block,
    "feed_forward": feed_forward,
    "classifier": classifier,
    "cross_attention": cross_attention,
    "next_token": next_token,
    "training": training,
    "next": next_steps,
}
WITH_OPTIONS = ("next_token",)  # the figures redrawn from options (temperature, top_p, seed)


def draw(step: Step, options: dict | None = None) -> go.Figure:
    """The step's figure; options (temperature, top_p, seed) for the next token's. KeyError for an unknown key."""
    fn = FIGURES[step.key]
    return fn(step, options) if step.key in WITH_OPTIONS else fn(step)
