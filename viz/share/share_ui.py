"""Share, download and compare controls of both tabs, wired into the Gradio app.

app.py calls share_controls() where the buttons go, then wire_*_links() and *_compare_panel() with the
tab's components. Opening a link fills the tab's inputs and presses its own button, so a link runs exactly
what a click runs (prediction, explanation, heads, plots) and opens the view a click would give. The logic
lives elsewhere: viz.share.links (URLs), viz.share.downloads (files), viz.compare.input_compare (diffs).
"""

import json
from dataclasses import dataclass

import gradio as gr

from .. import handlers
from ..compare import input_compare as compare
from ..examples import ContrastSetError, contrast_pairs, shorten
from ..models import training_step
from ..page.theme import waiting_plot
from ..server.events import FOLLOW_UP
from . import downloads, links

PRIVATE = dict(api_visibility="private")
# The browser knows the page's own address (on a Space: the *.hf.space one); Python builds the rest.
BASE_JS = "(link, ...rest) => [window.location.origin + window.location.pathname, ...rest]"
COPY_JS = """(url) => {
  if (url && url.startsWith('http') && navigator.clipboard) navigator.clipboard.writeText(url).catch(() => {});
  return url;
}"""
# A copy of the first input to edit, when the second box is still empty. The copy comes selected, as an address bar's
# text does: typing or pasting replaces it (a pasted review used to land after the copy), a second click edits it.
PREFILL_JS = """(first, second) => {
  if (second && second.trim()) return second;
  const box = document.activeElement;
  let frames = 0;
  const select = () => {
    if (document.activeElement !== box) return;
    if (box.value === first) box.setSelectionRange(0, box.value.length);  // iOS ignores select() here
    else if (++frames < 30) requestAnimationFrame(select);
  };
  requestAnimationFrame(select);
  return first;
}"""
GERMAN_PAIRS = [  # (first, second, button label)
    ("Ein Mann fährt mit dem Fahrrad die Straße entlang.", "Eine Frau fährt mit dem Fahrrad die Straße entlang.",
     "Mann → Frau"),
    ("Zwei Hunde spielen im Schnee.", "Zwei Hunde spielen im Sand.", "Schnee → Sand"),
    ("Ein Kind springt in einen Pool.", "Ein Kind springt nicht in einen Pool.", "+ nicht"),
]  # fmt: skip


@dataclass
class ShareControls:
    share: gr.Button
    link: gr.Textbox
    download: gr.Button
    file: gr.Textbox  # hidden: the address of the last export (downloads.export_url), for the page to fetch


def share_controls(task: str) -> ShareControls:
    """'Copy link' and 'Download data' buttons with the link box and the file they fill (elem_ids
    '{task}-share', '{task}-download', '{task}-share-link', '{task}-download-file')."""
    gr.HTML("", js_on_load=downloads.PLOTLY_JS, container=False, padding=False, elem_classes=["plot-dl"])
    with gr.Row():
        share = gr.Button("🔗 Copy link to this view", size="sm", elem_id=f"{task}-share")
        download = gr.Button("⬇ Download data (JSON)", size="sm", elem_id=f"{task}-download")
    link = gr.Textbox(  # shown once there is a link (or the reason there is none): an empty box said nothing
        label="Link to this view",
        interactive=False,
        buttons=["copy"],
        max_lines=3,
        visible=False,
        elem_id=f"{task}-share-link",
    )
    file = gr.Textbox(visible=False, elem_id=f"{task}-download-file")
    return ShareControls(share, link, download, file)


def _link_box(url: str | None, message: str) -> gr.Textbox:
    return gr.Textbox(value=url or f"⚠️ {message}", info=message if url else None, visible=True)


def _file(path: str | None, message: str) -> str:
    """The export's address for the page to fetch ('' and a toast with the message when there is none)."""
    if path is None:
        gr.Warning(message)
        return ""
    return downloads.export_url(path)


def _wire_buttons(controls: ShareControls, share_fn, share_inputs, download_fn, download_inputs) -> None:
    controls.share.click(share_fn, [controls.link, *share_inputs], [controls.link], js=BASE_JS, **PRIVATE).then(
        None, [controls.link], None, js=COPY_JS, **PRIVATE
    )
    controls.download.click(download_fn, download_inputs, [controls.file], **PRIVATE).then(
        None, [controls.file], None, js=downloads.CLICK_DOWNLOAD_JS, **PRIVATE
    )


def _choice(value: int | None, radio: gr.Radio, name: str, ignored: list[str]):
    """A 0-based layer or head from a link if the radio offers it, else no change (and `name` noted in ignored)."""
    if value is not None and 0 <= value < len(radio.choices):
        return value
    if value is not None:
        ignored.append(name)
    return gr.skip()


def _warn_ignored(ignored: list[str]) -> None:
    """A toast naming the link's values that were replaced by defaults (a link typed or cut by hand)."""
    notice = links.ignored_notice(ignored)
    if notice:
        gr.Warning(notice)


def _page_step(when: str, selector: str, ready: str = "true", act: str = "element.click();") -> str:
    """A step in the browser (an event's js): when `when` holds (JS over the page's address: `text` the link's text,
    `tab` the tab it names, links.TABS[0] when none or an unknown one, `tabs` links.TABS), wait until the element
    `selector` (a JS expression) exists and `ready` (JS) holds, then run `act` (JS, with `element`; default: click
    it): the tab it is in may still be mounting, and the values a link filled in may not be on the page yet
    (gradio can start the step after an event before it has shown that event's outputs). It looks every 50 ms
    for up to two minutes: a slow phone or a busy machine can take longer than the ten seconds it used to wait."""
    return f"""() => {{
  const tabs = {json.dumps(list(links.TABS))};
  const q = new URLSearchParams(window.location.search);
  const text = (q.get('text') || '').trim();
  const named = (q.get('tab') || '').trim().toLowerCase();
  const tab = tabs.includes(named) ? named : tabs[0];
  if (!({when})) return;
  {_when_ready(selector, ready, act)}
}}"""


def _when_ready(selector: str, ready: str = "true", act: str = "element.click();") -> str:
    """JS statements: look every 50 ms, for up to two minutes, until the element `selector` (a JS expression) exists
    and `ready` (JS) holds, then run `act` (JS, with `element`)."""
    return f"""let tries = 0;
  const step = () => {{
    const element = document.querySelector({selector});
    if (element && ({ready})) {{ {act} }} else if (++tries < 2400) setTimeout(step, 50);
  }};
  step();"""


# Opens the tab a link names by clicking its button (gr.Tab(id=...) in app.py are links.TABS). Done by the server
# with gr.Tabs as an output, the whole tab tree became an output of an event, and gradio's page then copied the
# value of every component in both tabs each time any event changed state: two thirds of the ~15,000 values
# copied between a click and its drawn heatmap.
SELECT_TAB_JS = _page_step("tab !== tabs[0]", "'button[data-tab-id=\"' + tab + '\"]'")


def select_tab_on_load(demo: gr.Blocks) -> None:
    """Open the tab a link names (`?tab=translation`, with or without text)."""
    demo.load(None, None, None, js=SELECT_TAB_JS, **PRIVATE)


def landing_js(task: str, text: str, on_load: bool = False) -> str:
    """What a tab opens on when the page's address names no input (no link): `text` typed into the tab's box and
    its own button pressed, once per page, so a first visit shows a worked example rather than empty plots. The
    box is filled as typing fills it (an input event), and left alone if the visitor typed first. on_load: the
    page's first tab, which lands as the page loads unless the address names another tab (`?tab=translation`: that
    one lands instead, when it opens)."""
    name = json.dumps(task)
    land = f"""const landed = window.__landed || (window.__landed = {{}});
    if (landed[{name}]) return;
    landed[{name}] = true;
    if (element.value.trim()) return;
    element.value = {json.dumps(text)};
    element.dispatchEvent(new Event('input', {{bubbles: true}}));
    const button = document.querySelector('#{task}-submit');
    requestAnimationFrame(() => requestAnimationFrame(() => button.click()));"""
    when = f"!text && tab === {name}" if on_load else "!text"
    return _page_step(when, f"'#{task}-input textarea'", f"document.querySelector('#{task}-submit')", land)


def press_js(task: str) -> str:
    """An event's js, given the tab's text box as its input: press the tab's button once the box shows that text."""
    shown = f"(document.querySelector('#{task}-input textarea') || {{}}).value === text"
    return f"text => {{\n  {_when_ready(repr(f'#{task}-submit'), shown)}\n}}"


def press_after(event, task: str, box) -> None:
    """After `event` put a text in the tab's box `box` (an example's click), press the tab's button, as the visitor
    would: the result beside the box is then the text's in it. An example only filled the box, and the last
    review's "positive 97%" stayed beside "Two hours of my life I will never get back..."."""
    event.then(None, [box], None, js=press_js(task), **PRIVATE)


def landing_later_js(task: str, text: str) -> str:
    """The page's first tab when the address opened another (`?tab=translation`): it lands when its button is first
    clicked. A DOM listener, not the tab's select event: gradio fires the first tab's select as the page mounts."""
    button = f"""'button[data-tab-id="{task}"]'"""
    act = f"element.addEventListener('click', {landing_js(task, text)}, {{once: true}});"
    return _page_step(f"!text && tab !== {json.dumps(task)}", button, act=act)


def land_on_examples(demo: gr.Blocks, tabs: dict[str, tuple[gr.Tab, str]]) -> None:
    """Each tab (task -> (its gr.Tab, the example it opens on)) runs its example when it is first shown: the page's
    first tab (links.TABS[0]) as the page loads (or when first clicked, if the address opened another), the others
    when they are selected. A link's own text wins."""
    for task, (tab, text) in tabs.items():
        if task == links.TABS[0]:
            demo.load(None, None, None, js=landing_js(task, text, on_load=True), **PRIVATE)
            demo.load(None, None, None, js=landing_later_js(task, text), **PRIVATE)
        else:
            tab.select(None, None, None, js=landing_js(task, text), **PRIVATE)


def _press_js(task: str) -> str:
    """After a link filled the inputs, press the tab's own button: the same run, with every panel, as a click. It
    waits until the link's text is in the tab's input box: pressed before, the button would run on an empty box."""
    filled = f"((document.querySelector('#{task}-input textarea') || {{}}).value || '').trim()"
    return _page_step(f"text && tab === '{task}'", f"'#{task}-submit'", filled)


def _link(request: gr.Request | None, task: str) -> links.ViewLink | None:
    link = links.from_query(dict(request.query_params)) if request else None
    return link if link is not None and link.tab == task else None


def _model_and_step(models, link: links.ViewLink, ignored: list[str], with_choice: bool) -> list:
    """The updates that put a tab at a link's model (when the tab has a choice) and training step: [the choice,]
    the training-step slider, its text; nothing changes where the link names neither (or nothing usable)."""
    model, position, bad = training_step.from_link(models, link.model if with_choice else None, link.training_step)
    ignored += bad
    chosen = [model or gr.skip()] if with_choice else []
    if model is None and position is None:
        return [*chosen, gr.skip(), gr.skip()]
    return [*chosen, *training_step.reset(models, model, position)]


def wire_sentiment_links(
    demo, models, controls: ShareControls, *, review, choice, step, layer, head, method, scale, hide
) -> None:
    """Copy link, download (by the model shown: the chosen model of the tab's ModelRegistry `models`, at the
    training step `step`'s snapshot), and opening a link: it fills the review, model, training step, layer, head,
    explanation method, colour scale and hidden tokens, then presses 'Analyse sentiment' (#sentiment-submit)."""

    def share(base, text, layer, head, method, scale, hide, name, position):
        model, snapshot = training_step.to_link(models, name, position)
        link = links.ViewLink(
            "sentiment", text or "", layer, head, method=method, scale=scale, hide=bool(hide), model=model,
            training_step=snapshot,
        )  # fmt: skip
        return _link_box(*links.share_url(base, link))

    def download(text, name, position, method):
        pipe = models.get(training_step.chosen(models, name, position))
        chosen = method if method in (getattr(pipe, "explanation_methods", None) or ()) else None
        return _file(*downloads.sentiment_download(pipe, text, chosen))

    shown = [review, layer, head, method, scale, hide, choice, step.slider]
    _wire_buttons(controls, share, shown, download, [review, choice, step.slider, method])
    methods = [value for _, value in method.choices]

    def restore(request: gr.Request):
        link = _link(request, "sentiment")
        if link is None:
            return [gr.skip()] * 9
        ignored = list(link.ignored)
        chosen = link.method if link.method in methods else gr.skip()
        ignored += ["method"] if link.method and link.method not in methods else []
        controls = _choice(link.layer, layer, "layer", ignored), _choice(link.head, head, "head", ignored)
        model_and_step = _model_and_step(models, link, ignored, with_choice=True)
        _warn_ignored(ignored)
        return link.text, *controls, chosen, link.scale or gr.skip(), link.hide or gr.skip(), *model_and_step

    restored = [review, layer, head, method, scale, hide, choice, step.slider, step.info]
    demo.load(restore, None, restored, **PRIVATE).then(None, None, None, js=_press_js("sentiment"), **PRIVATE)


def wire_translation_links(
    demo, models, controls: ShareControls, *, german, decoding, beam, layer, head, scale, hide, state, drawn, step,
    training
):  # fmt: skip
    """As wire_sentiment_links for the translation tab (decoding and beam size too; no model choice); a link's
    decoding step is applied once the run it starts is drawn (`drawn`). step: the decoding-step slider and the two
    plots it drives; training: the training-step slider and its text."""

    def share(base, text, decoding, beam, layer, head, scale, hide, step, position):
        snapshot = training_step.to_link(models, None, position)[1]
        link = links.ViewLink(
            "translation", text or "", layer, head, int(step or 1) - 1, decoding, beam, scale=scale, hide=bool(hide),
            training_step=snapshot,
        )  # fmt: skip
        return _link_box(*links.share_url(base, link))

    def download(text, decoding, beam, position):
        pipe = models.get(training_step.chosen(models, None, position))
        return _file(*downloads.translation_download(pipe, text, decoding, beam))

    shown = [german, decoding, beam, layer, head, scale, hide, step[0], training.slider]
    _wire_buttons(controls, share, shown, download, [german, decoding, beam, training.slider])
    pending_step = gr.State(None)

    def restore(request: gr.Request):
        link = _link(request, "translation")
        if link is None:
            return [gr.skip()] * 10
        ignored = list(link.ignored)
        chosen_beam = link.beam if link.beam is not None and beam.minimum <= link.beam <= beam.maximum else gr.skip()
        ignored += ["beam"] if link.beam is not None and chosen_beam is not link.beam else []
        controls = _choice(link.layer, layer, "layer", ignored), _choice(link.head, head, "head", ignored)
        snapshot = _model_and_step(models, link, ignored, with_choice=False)
        _warn_ignored(ignored)
        decoding_value = link.decoding or gr.skip()
        hidden = link.hide or gr.skip()
        return link.text, decoding_value, chosen_beam, *controls, link.scale or gr.skip(), hidden, link.step, *snapshot

    restored = [german, decoding, beam, layer, head, scale, hide, pending_step, training.slider, training.info]
    demo.load(restore, None, restored, **PRIVATE).then(None, None, None, js=_press_js("translation"), **PRIVATE)
    drawn.then(_apply_step, [state, layer, pending_step], [*step, pending_step], **FOLLOW_UP)


def _apply_step(view, layer, pending: int | None):
    """Move the step slider (and its plots) to the step a link asked for, once; nothing otherwise."""
    if pending is None or view is None:
        return gr.skip(), gr.skip(), gr.skip(), None
    maximum = handlers.step_slider(view).maximum
    chosen = min(pending + 1, maximum)
    if chosen != pending + 1:  # a link made for a longer translation, or typed by hand
        gr.Warning(f"This link's step {pending + 1} is past this translation's last step; step {maximum} is shown.")
    slider = gr.Slider(minimum=1, maximum=maximum, value=chosen, step=1, interactive=True)
    return slider, *handlers.translation_step(view, layer, chosen), None


def _compare_outputs(task: str):
    output = gr.HTML(elem_id=f"{task}-compare-output")
    diff = waiting_plot(f"{task}-compare-diff")
    return gr.State(None), output, diff


def _redraw_diff_on(layer, head, state, diff) -> None:
    for control in (layer, head):
        control.change(compare.diff_figure, [state, layer, head], [diff], **PRIVATE)


@dataclass(frozen=True)
class CompareWords:
    """What a tab's compare panel says: its heading, its second box and its example pairs."""

    intro: str
    box: str
    lines: int
    max_lines: int
    pairs: str


REVIEW_WORDS = CompareWords(
    "### Compare two reviews\nChange a word or two and see what it does: both predictions, the change in "
    "probability, and for the chosen layer and head how attention moved over the tokens both reviews share.",
    "Second review (click it for a copy of the first, then edit it, or type or paste over it)",
    3,
    10,
    "Contrast pairs (one click fills both reviews and compares them)",
)
SENTENCE_WORDS = CompareWords(
    "### Compare two sentences\nTranslate a second German sentence with the same decoding: both translations, "
    "and for the chosen layer and head how cross-attention moved over the tokens both share.",
    "Second German sentence (click it for a copy of the first, then edit it, or type or paste over it)",
    2,
    6,
    "Sentence pairs (one click fills both sentences and compares them)",
)


def _compare_panel(task: str, first, words: CompareWords, pairs: list, run, options: list, layer, head) -> None:
    """A second input (a copy of the first to edit), run(first, second, *options, layer, head) on a click or an
    example pair (first, second, label), and the diff redrawn for a new layer or head."""
    gr.Markdown(words.intro)
    second = gr.Textbox(label=words.box, lines=words.lines, max_lines=words.max_lines, elem_id=f"{task}-compare-input")
    button = gr.Button("Compare", variant="secondary", elem_id=f"{task}-compare-submit")
    examples = gr.Examples(
        examples=[[a, b] for a, b, _ in pairs],
        inputs=[first, second],
        example_labels=[label for _, _, label in pairs],
        label=words.pairs,
        **PRIVATE,
    )
    state, output, diff = _compare_outputs(task)
    second.focus(None, [first, second], [second], js=PREFILL_JS, **PRIVATE)  # not on the run: the box is asked for
    inputs = [first, second, *options, layer, head]
    button.click(run, inputs, [state, output, diff], **PRIVATE)
    examples.load_input_event.then(run, inputs, [state, output, diff], **PRIVATE)
    press_after(examples.load_input_event, task, first)  # the first went into the tab's own box: run it there too
    _redraw_diff_on(layer, head, state, diff)


def sentiment_compare_panel(models, *, review, choice, step, layer, head) -> None:
    """A second review (a copy of the first to edit), both predictions side by side, the change in probability,
    and the aligned self-attention diff for the chosen layer and head; contrast pairs fill both boxes and run. By
    the model shown: the chosen one, at the training step's snapshot."""
    try:
        pairs = [(a, b, f"{kind}: {shorten(a)}") for a, b, kind in contrast_pairs()]
    except ContrastSetError as e:
        gr.Markdown(f"⚠️ No example pairs: {e}.", elem_id="sentiment-compare-notice")
        pairs = []

    def run(a, b, name, position, layer, head):
        return compare.compare_reviews(models.get(training_step.chosen(models, name, position)), a, b, layer, head)

    _compare_panel("sentiment", review, REVIEW_WORDS, pairs, run, [choice, step.slider], layer, head)


def translation_compare_panel(models, *, german, decoding, beam, layer, head, training) -> None:
    """A second German sentence, both translations side by side, and the aligned cross-attention diff; by the
    translator at the training step's snapshot."""

    def run(a, b, decoding, beam, position, layer, head):
        pipe = models.get(training_step.chosen(models, None, position))
        return compare.compare_translations(pipe, a, b, decoding, beam, layer, head)

    options = [decoding, beam, training.slider]
    _compare_panel("translation", german, SENTENCE_WORDS, GERMAN_PAIRS, run, options, layer, head)
