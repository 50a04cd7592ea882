"""One step of the Learn tab as the page shows it: its title, its text (glossary terms marked), its code with the file
and line numbers, its check, and where it is in the path. Pure functions of a Step: everything escaped."""

import html

from pipelines.learn.walk import Check, CodeSpan, Step

from .glossary import marked

NOTHING_TO_CHECK = "This step computes nothing to check: it shows what the model is given or where to go next."
NO_CODE = "This step has no lines of its own in transformer/: it reads what the steps before computed."


def title_html(step: Step) -> str:
    return f'<h2 class="learn-heading">{html.escape(step.title)}</h2>'


def text_html(step: Step) -> str:
    model = f'<p class="learn-model">On <b>{html.escape(step.model)}</b></p>'
    return f'<div class="learn-prose"><p>{marked(step.text)}</p>{model}</div>'


def links_html(links) -> str:
    """'Open on your input: the Sentiment tab · its Layer by layer · ...' (links is Learned.links)."""
    if not links:
        return ""
    shown = " · ".join(
        f'<a href="?{html.escape(query, quote=True)}">{html.escape(label)}</a>' for label, query in links
    )
    return f'<p class="learn-next-links">One click, on your input: {shown}</p>'


def where(span: CodeSpan) -> str:
    """'transformer/attention.py, lines 40–52'."""
    lines = f"line {span.start}" if span.start == span.end else f"lines {span.start}–{span.end}"
    return f"{span.path}, {lines}"


def code_html(span: CodeSpan | None) -> str:
    """The lines, numbered as the file numbers them, under the file's name and lines, over the tensors' shapes."""
    if span is None:
        return f'<p class="learn-code-none">{html.escape(NO_CODE)}</p>'
    rows = span.text.splitlines() or [""]
    width = len(str(span.start + len(rows) - 1))
    numbered = "\n".join(
        f'<span class="learn-line-no">{n:>{width}}</span> {html.escape(line)}'
        for n, line in enumerate(rows, start=span.start)
    )
    shapes = f'<p class="learn-shapes">Shapes on this input: {html.escape(span.shapes)}</p>' if span.shapes else ""
    return (f'<p class="learn-code-where">{html.escape(where(span))}</p>'
            f'<pre class="learn-code-lines"><code>{numbered}</code></pre>{shapes}')  # fmt: skip


def difference(value: float) -> str:
    """'4e-08', '0', '1.2e-06': the largest difference, short."""
    return "0" if value == 0 else f"{value:.2g}" if abs(value) >= 1e-3 else f"{value:.0e}"


def check_html(check: Check | None) -> str:
    if check is None:
        return f'<p class="learn-check-none">{html.escape(NOTHING_TO_CHECK)}</p>'
    return (f'<p class="learn-check-line"><b>Check</b>: {html.escape(check.what)}: '
            f"<b>max |difference| = {difference(check.difference)}</b></p>")  # fmt: skip


def progress_html(k: int, n: int) -> str:
    """'Step 3 of 14', with a link to this step (?learn=3: 1-based, as the page counts)."""
    return (f'<p class="learn-progress-line">Step {k + 1} of {n} · '
            f'<a href="?learn={k + 1}" class="learn-link">link to this step</a></p>')  # fmt: skip
