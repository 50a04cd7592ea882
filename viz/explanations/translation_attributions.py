"""Figures for translation attributions: produced tokens by source tokens on a diverging scale, the
agreement of every cross-attention head with the attribution, and the faithfulness numbers."""

import html

import numpy as np
import plotly.graph_objects as go

from pipelines.explanations import label

from ..attention.figures import _layout
from ..attention.token_labels import axis_labels
from ..inputs import step_shown
from ..numbers import number


def attribution_heatmap(expl) -> go.Figure:
    """scores (Tt, Ts): red = against, blue = supports the produced token (contrastive rows: rather than
    the alternative). Unsigned attention is drawn in blues from zero."""
    src = axis_labels([t.text for t in expl.source_tokens[:-1]] + ["</s>"])
    tgt = axis_labels(expl.target_tokens)
    for t, alt in expl.contrast.items():
        tgt[t] += f" (vs {html.escape(alt, quote=False)})"
    signed = expl.signed
    scale = float(np.abs(expl.scores).max()) or 1.0
    heat = go.Heatmap(
        z=expl.scores.astype(np.float32),
        x=src,
        y=tgt,
        colorscale="RdBu" if signed else "Blues",
        zmin=-scale if signed else 0.0,
        zmax=scale,
        colorbar=dict(title=dict(text="supports ↑<br>against ↓" if signed else "weight"), thickness=12),
        hovertemplate="English %{y}<br>German %{x}<br>"
        + ("score %{z:+.3f}" if signed else "weight %{z:.3f} (no sign)")
        + "<extra></extra>",
    )
    fig = go.Figure(heat)
    fig.update_xaxes(title_text="German token", tickangle=-60, tickfont=dict(size=10), type="category")
    fig.update_yaxes(title_text="English step", autorange="reversed", tickfont=dict(size=10), type="category")
    title = f"{label('translation', expl.method)}: English step × German token"
    return _layout(fig, title, int(min(760, max(420, 220 + 18 * len(tgt)))))


def agreement_heatmap(expl) -> go.Figure:
    """(L, H) mean rank correlation between each head's cross-attention and the attribution's magnitude."""
    a = expl.head_agreement
    L, H = a.shape
    fig = go.Figure(
        go.Heatmap(
            z=a,
            x=[f"head {h + 1}" for h in range(H)],
            y=[f"layer {i + 1}" for i in range(L)],
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            text=[[f"{v:+.2f}" for v in row] for row in a],
            texttemplate="%{text}",
            colorbar=dict(title=dict(text="rank corr."), thickness=12),
            hovertemplate="%{y}, %{x}<br>rank correlation %{z:+.2f}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    return _layout(fig, "Each head's agreement with it (rank correlation)", 320)


def faithfulness_markdown(report, expl) -> str:
    m, r = report.method, report.random
    agree = np.nan_to_num(expl.head_agreement, nan=-np.inf)  # a head without a defined correlation is never best
    best = np.unravel_index(int(np.argmax(agree)), agree.shape)
    n = len(expl.produced)
    steps = getattr(report, "steps", None) or range(n)
    over = (
        f"On {len(steps)} of the {n} steps (evenly spaced: a long translation is sampled to keep this quick)"
        if len(steps) < n
        else f"Over the {n} steps"
    )
    lines = [
        f"**How faithful is this view on your sentence?** {over}, deleting the "
        "top-scored German tokens (1, 5, 10, 20, 50%) and keeping only them (ERASER, teacher-forced):",
        "",
        "| ranking | comprehensiveness ↑ | sufficiency ↓ |",
        "| --- | --- | --- |",
        f"| {label('translation', expl.method)} | {number(m.comprehensiveness)} | {number(m.sufficiency)} |",
        f"| random (mean of 3) | {number(r.comprehensiveness)} | {number(r.sufficiency)} |",
        "",
        f"The head whose attention agrees best with this view: layer {best[0] + 1}, head {best[1] + 1} "
        f"(rank correlation {expl.head_agreement[best]:+.2f}).",
    ]
    if expl.deltas is not None:
        lines.append(
            f"Integrated gradients: {expl.steps} steps, largest |convergence delta| {np.abs(expl.deltas).max():.4f}."
        )
    if expl.contrast:
        pairs = ", ".join(
            f"step {step_shown(t)}: “{expl.target_tokens[t]}” rather than “{alt}”" for t, alt in expl.contrast.items()
        )
        lines.append(f"Contrastive: {pairs} (attribution of the difference of the two log-probabilities).")
    if expl.contrast_not_applied:
        asked = ", ".join(f"“{alt}” at step {t + 1}" for t, alt in expl.contrast_not_applied.items())
        lines.append(
            f"Not contrastive: {label('translation', expl.method)} reads attention, the same whatever the alternative, "
            f"so {asked} is not explained against here; gradient × input and integrated gradients are."
        )
    return "\n".join(lines)
