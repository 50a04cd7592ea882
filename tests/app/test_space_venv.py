"""The Space as a visitor gets it (issue 57, part 1): assembled by `python -m training.publish space --dry-run`, its
folder's requirements.txt installed in a fresh virtual environment (pip reaches the package registry; torch is the CPU
wheel), `app.py` started from that folder with the Space's variables, offline, on the bundled models, and every tab
checked in chromium as the repository's app is checked: the sentiment tab's model choice offers both models, the
compare examples come from the contrast set, the training-step slider is there, the next-word tab produces a
continuation, and the translator's model choice names the pre-trained one; the Learn tab, open on load, walks
its example on the bundled models (its code read from the folder's transformer/)."""

import json
import re
import time

import browser
import pytest
import space_folder
from browser import free_port

from viz.examples import shorten
from viz.models.loading import PRETRAINED_TRANSLATOR_NAME

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]


@pytest.fixture(scope="module")
def space_url(tmp_path_factory):
    """The assembled Space, served from its own folder by a fresh virtual environment; prints each phase's seconds."""
    work, times, start = tmp_path_factory.mktemp("space-venv"), {}, time.monotonic()
    variables = space_folder.assemble(work / "space")
    times["assemble"] = time.monotonic() - start
    python = space_folder.fresh_venv(work / "space" / "requirements.txt", work / "venv")
    times["venv + pip install"] = time.monotonic() - start - sum(times.values())
    port, log = free_port(), work / "app.log"
    proc = space_folder.start(python, work / "space", space_folder.space_env(variables, work / "home", port), log)
    try:
        url = f"http://127.0.0.1:{port}/"
        times["app start"] = space_folder.wait_ready(url, proc, log)
        print(f"\nthe Space in a fresh venv, seconds: {json.dumps({k: round(v, 1) for k, v in times.items()})}")
        yield url, variables
    finally:
        space_folder.stop(proc)


LEARN_STEP_JS = "text => ((document.querySelector('#learn-progress') || {}).textContent || '').includes(text)"
LEARN_WALKED_JS = """() => /Step 1 of/.test((document.querySelector('#learn-progress') || {}).textContent || '')
  && !((document.querySelector('#learn-status') || {}).textContent || '').includes('being walked')"""


def labels(page, elem_id: str) -> list[str]:
    return page.locator(f"#{elem_id} label").evaluate_all("ls => ls.map(l => l.textContent.trim())")


def test_every_tab_of_the_space_works_from_its_own_folder(page, space_url):
    url, variables = space_url
    assert variables["SENTIMENT_MODEL"].startswith("assets/") and variables["TRANSLATION_MODEL"].startswith("assets/")
    page.goto(url)
    assert page.get_by_role("tab", name="Learn").get_attribute("aria-selected") == "true"  # the landing tab
    page.wait_for_function(LEARN_WALKED_JS, timeout=browser.TIMEOUT_MS)  # the example, walked on the bundled models
    browser.wait_drawn(page, "learn-figure", ".js-plotly-plot")
    codes = [page.locator("#learn-code").text_content()]
    page.locator("#learn-next").click()
    page.wait_for_function(LEARN_STEP_JS, arg="Step 2 of ", timeout=browser.TIMEOUT_MS)
    codes.append(page.locator("#learn-code").text_content())
    assert any(re.search(r"transformer/\S+\.py, lines? \d+", code) for code in codes)  # read from the folder

    page.get_by_role("tab", name=re.compile("^Sentiment")).click()
    browser.wait_drawn(page, "sentiment-attention")  # the worked example, run when the tab is first opened
    assert len(labels(page, "sentiment-model")) == 2  # the pre-trained model and the one from scratch
    browser.open_section(page, "sentiment", "Training steps")
    page.wait_for_selector("#sentiment-training-step input[type=range]", state="visible")
    browser.open_section(page, "sentiment", "Compare")
    first = json.loads((space_folder.ROOT / "viz" / "data" / "contrast_pairs.jsonl").read_text().splitlines()[0])
    page.get_by_text(f"{first['kind']}: {shorten(first['a'])}").first.wait_for()  # the contrast set's first pair
    assert page.locator("#sentiment-compare-notice").count() == 0  # no "no example pairs" notice

    page.get_by_role("tab", name="Next word").click()
    page.wait_for_function("() => (document.querySelector('#lm-output textarea') || {}).value?.trim().length > 0")

    page.get_by_role("tab", name="Translation (German → English)").click()
    browser.wait_drawn(page, "translation-attention")
    assert PRETRAINED_TRANSLATOR_NAME in labels(page, "translation-model")
    assert "needs the Hugging Face Hub" in page.locator("#translation-model").inner_text()  # offline here
