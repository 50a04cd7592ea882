"""The README's picture of the training-step slider: the bundled translator's cross-attention for one sentence at
three steps of its training, side by side, in headless chromium.

    python -m benchmarks.training_step_screenshot [--positions 0,3,5] [--out assets/screenshot-training-steps.png]

Serves the app on the bundled models, translates --sentence with greedy decoding, then moves the translation
tab's training-step slider (`#translation-training-step`) to each of --positions (0: step 0, the untrained
model; the last: the trained model) as a user would, waits for the new translation and map, and pictures the
part of the page from the large cross-attention map to the slider's step and score. The three pictures are put
side by side into one PNG; the printed lines say what each position showed.
"""

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from tests.support import browser  # noqa: E402

SENTENCE = "Ein kleines Mädchen klettert in ein Spielhaus aus Holz."
CHANGED_JS = "t => document.querySelector('#translation-output textarea').value !== t"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentence", default=SENTENCE)
    p.add_argument("--positions", default="0,3,5", help="slider positions, 0 = step 0 (default %(default)s)")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshot-training-steps.png")
    p.add_argument("--width", type=int, default=1000, help="browser width of each picture (default %(default)s)")
    return p


def move_to(page, position: int, last: int) -> None:
    """Move the slider to `position` of 0..last and wait for the new translation (when it changes) and map."""
    before = page.locator("#translation-output textarea").input_value()
    info = page.locator("#translation-training-step-info").inner_text()
    browser.mark_plot(page, "translation-attention")
    browser.click_slider(page, "translation-training-step", position / last)
    page.wait_for_function("t => document.querySelector('#translation-training-step-info').innerText !== t", arg=info)
    try:  # a snapshot may translate the sentence as the previous one did: then only the map changes
        page.wait_for_function(CHANGED_JS, arg=before, timeout=20_000)
    except Exception:  # noqa: BLE001 (playwright's TimeoutError)
        pass
    browser.wait_redrawn(page, "translation-attention")


def side_by_side(paths: list[Path], out: Path, margin: int = 12) -> None:
    """The pictures next to each other, each cut to what is drawn on it (no empty page margins), tops aligned."""
    from PIL import Image, ImageChops

    images = []
    for path in paths:
        image = Image.open(path).convert("RGB")
        left, top, right, bottom = ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()
        images.append(image.crop((max(left - margin, 0), 0, min(right + margin, image.width), image.height)))
    canvas = Image.new("RGB", (sum(i.width for i in images), max(i.height for i in images)), "white")
    x = 0
    for image in images:
        canvas.paste(image, (x, 0))
        x += image.width
    canvas.save(out, optimize=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from viz.models.loading import load_models

    positions = [int(p) for p in args.positions.split(",")]
    sentiment, translation = load_models()  # the bundled models, as python app.py loads them
    shots = []
    with (
        browser.serve_app(sentiment.pipeline, translation.pipeline) as url,
        tempfile.TemporaryDirectory() as tmp,
        browser.chromium_page(Path(tmp) / "profile", args.width, 1400) as page,
    ):
        browser.open_tab(page, url, "Translation")
        last = int(page.locator("#translation-training-step input[type=range]").get_attribute("max"))
        browser.translate(page, args.sentence, "greedy")
        for position in positions:
            move_to(page, position, last)
            info = page.locator("#translation-training-step-info").inner_text().strip()
            output = page.locator("#translation-output textarea").input_value()
            print(f"position {position}: {info} -> {output!r}", flush=True)
            shot = Path(tmp) / f"step-{position}.png"
            shots.append(
                browser.screenshot_between(page, shot, "#translation-attention", "#translation-training-step-info")
            )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        side_by_side(shots, args.out)
    print("saved", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
