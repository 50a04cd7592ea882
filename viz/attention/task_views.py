"""The views of any task's result: its kinds of attention, its large heatmaps and small multiples.

A result is the view a tab keeps in gr.State (viz.sentiment.handlers.SentimentView, viz.translation.handlers.
TranslationView, viz.next_word.handlers.LMView): its `task` names the kinds (pipelines.kinds) it holds and draws
large, so these redraws serve every tab without running the model again.
"""

from pipelines.kinds import KINDS
from pipelines.tasks import TASKS

from . import view_handlers as views


def kinds(view) -> dict[str, views.KindMaps]:
    """A result's kinds of attention, by name (pipelines.kinds): the classifier's self-attention; the translator's
    encoder, decoder (self-attention) and cross-attention; the language model's causal self-attention."""
    return views.kinds_of(view.maps, view.cut_after, view.n_skipped)


def heatmap(view, layer: int, head: int, scale="linear", hide=False, token=None, kind: str | None = None):
    """One head of one kind, large (None: the task's main kind; cross-attention: English steps (rows) by German
    tokens)."""
    if view is None:
        return None
    kind = kind or view.task.main
    return views.heatmap(kinds(view)[kind], layer, head, KINDS[kind].heatmap_title, scale, hide, token)


def overview(view, layer: int, scale="linear", hide=False):
    """Every head of the chosen layer of the task's main kind as small multiples."""
    if view is None:
        return None
    kind = view.task.main
    return views.overview(kinds(view)[kind], layer, KINDS[kind].overview_title, scale, hide)


def drawn_heatmap(view, layer: int, head: int, scale="linear", hide=False):
    """A run's large heatmap of its main kind, with (layer, head) noted in the view: a choice the visitor changes
    while the run goes on is drawn after it (viz.attention.views_panel), from the new result."""
    if view is not None:
        view.drawn_at = (layer, head)
    return heatmap(view, layer, head, scale, hide)


def large_figures(task: str, view, layer: int, head: int, scale="linear", hide=False, token=None) -> tuple:
    """The chosen head of every kind the task draws large, in its order (the translator: cross-attention, encoder
    and decoder self-attention): what a change of head redraws."""
    return tuple(heatmap(view, layer, head, scale, hide, token, kind) for kind in TASKS[task].shown)


def task_figures(task: str, view, layer: int, head: int, scale="linear", hide=False, token=None) -> tuple:
    """(every head of the main kind, then the large heatmaps) for the chosen layer and head."""
    return overview(view, layer, scale, hide), *large_figures(task, view, layer, head, scale, hide, token)
