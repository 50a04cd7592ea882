"""The language-model pipeline (task "lm") on a tiny random CausalLM: what a result holds, that its maps are the steps'
own, decoding, head masks and the head table, head roles on hand-made maps, bad input, explanations, the task
registry, and loading Llama-format folders and GGUF files."""

import dataclasses
import json
import math
import shutil
import sys
import types

import numpy as np
import pytest
import torch

from pipelines import LanguageModelPipeline, PromptError
from pipelines.attention import head_roles as roles
from pipelines.language_model import MAX_NEW_TOKENS, TOP_K, Decoding
from pipelines.models.chat_template import CHATML, read_chat_template
from pipelines.trust.finite import NonFiniteOutput
from transformer import CausalLM, CheckpointError
from transformer.generation import lm_steps

PROMPT = "A wonderful film with a dull ending."
REPEATED = "the film was good and the film was good"


@pytest.fixture(scope="module")
def result(lm):
    return lm(PROMPT, max_new_tokens=6)


# --- results -------------------------------------------------------------------------------------------------


def test_result_holds_tokens_steps_and_every_map(lm, result):
    first = result.tokens[0]
    assert first.id == lm.model.config.bos_id and first.special and (first.start, first.end) == (0, 0)
    for t in result.tokens[1:]:
        assert PROMPT[t.start : t.end] == t.text  # offsets into the prompt
    n, Tp = len(result.generated_ids), len(result.tokens)
    assert 1 <= n <= 6 and len(result.steps) == n and result.complete
    assert result.continuation == lm.adapter.detokenize(result.generated_ids)
    T = Tp + n - 1
    assert len(result.sequence_ids) == len(result.sequence_texts) == T
    assert len(result.attentions) == lm.model.config.n_layers
    for a in result.attentions:
        assert a.shape == (lm.n_heads, T, T) and a.device.type == "cpu"
        torch.testing.assert_close(a.sum(-1), torch.ones(lm.n_heads, T))
        assert bool((a.triu(1) == 0).all())  # causal: no row reads a later token
    for step in result.steps:
        probs = [p for _, p in step.top_k]
        assert len(step.top_k) == len(step.top_ids) == TOP_K and probs == sorted(probs, reverse=True)
        assert step.top_ids[0] == step.token_id and step.probability == probs[0]  # greedy: the most likely
    maps = result.attention_maps()
    assert maps.maps["causal"].shape == (2, lm.n_heads, T, T) and maps.queries["causal"][0] == "<s>"


def test_the_final_maps_top_left_block_is_each_steps_own_attention(lm, result):
    """One pass over the final sequence gives, row by row, what the cached step-by-step decoding attended to."""
    Tp = len(result.tokens)
    steps = list(lm_steps(lm.model, result.prompt_ids, len(result.generated_ids), need_weights=True))
    assert [s.token for s in steps] == result.generated_ids
    for s, step in enumerate(steps):
        block = result.step_attentions(s)
        for layer, rows in enumerate(step.attentions):  # (H, 1, Tp + s)
            assert block[layer].shape[-1] == Tp + s
            torch.testing.assert_close(block[layer][:, -1], rows[:, 0], atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(
                result.attentions[layer][:, Tp + s - 1, : Tp + s], rows[:, 0], atol=1e-5, rtol=1e-4
            )


def test_greedy_is_the_argmax_of_a_full_forward(lm, result):
    Tp = len(result.tokens)
    with torch.no_grad():
        logits = lm.model(torch.tensor([result.sequence_ids])).logits[0]  # (T, V)
    for s, step in enumerate(result.steps):
        assert int(logits[Tp - 1 + s].argmax()) == result.generated_ids[s]
        assert step.probability == pytest.approx(float(logits[Tp - 1 + s].softmax(-1).max()), abs=1e-5)


def test_the_same_seed_samples_the_same_continuation(lm):
    a = lm(PROMPT, max_new_tokens=8, temperature=1.0, seed=7)
    b = lm(PROMPT, max_new_tokens=8, temperature=1.0, seed=7)
    others = [lm(PROMPT, max_new_tokens=8, temperature=1.0, seed=s).generated_ids for s in (8, 9)]
    assert a.generated_ids == b.generated_ids and a.seed == 7
    assert any(o != a.generated_ids for o in others)  # another seed, (almost always) another continuation
    nucleus = lm(PROMPT, max_new_tokens=4.0, temperature=1.0, top_p=1e-6, seed=3)  # only the most likely token left
    assert nucleus.generated_ids == lm(PROMPT, max_new_tokens=4).generated_ids


def test_stream_yields_each_step_then_the_complete_result(lm, result):
    parts = list(lm.stream(PROMPT, Decoding(max_new_tokens=6)))
    *partial, last = parts
    assert [len(p.generated_ids) for p in partial] == list(range(1, len(result.generated_ids) + 1))
    assert all(not p.complete and p.attentions == [] for p in partial)
    assert last.complete and last.generated_ids == result.generated_ids
    assert partial[-1].continuation == last.continuation
    for a, b in zip(last.attentions, result.attentions):
        assert torch.equal(a, b)


# --- bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt, options, message",
    [
        ("", {}, "empty"),
        ("  \t\n ", {}, "empty"),
        (PROMPT, {"max_new_tokens": 0}, "max_new_tokens"),
        (PROMPT, {"max_new_tokens": MAX_NEW_TOKENS + 1}, "max_new_tokens"),
        (PROMPT, {"max_new_tokens": 2.5}, "max_new_tokens"),
        (PROMPT, {"temperature": -0.1}, "temperature"),
        (PROMPT, {"temperature": float("nan")}, "temperature"),
        (PROMPT, {"top_p": 0.0}, "top_p"),
        (PROMPT, {"top_p": 1.5}, "top_p"),
        ("word " * 60, {"max_new_tokens": 10}, "more than the model reads"),
        (PROMPT, {"chat": True}, "no chat template"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(lm, prompt, options, message):
    with pytest.raises(PromptError, match=message) as info:
        lm(prompt, **options)
    assert isinstance(info.value, ValueError)


def test_a_prompt_without_tokens_is_refused(lm, monkeypatch):
    monkeypatch.setattr(lm.adapter, "tokenize", lambda text: ([], []))
    with pytest.raises(PromptError, match="no tokens"):
        lm(PROMPT)


def test_a_model_that_computes_nan_gives_no_result(lm_dir):
    pipe = LanguageModelPipeline.from_pretrained(str(lm_dir))
    with torch.no_grad():
        pipe.model.blocks[1].mlp_norm.weight.fill_(float("nan"))
    with pytest.raises(NonFiniteOutput):
        pipe(PROMPT, max_new_tokens=2)


# --- head masks, the head table, head roles ---------------------------------------------------------------------


def test_a_head_mask_switches_a_head_off_for_one_call(lm, result):
    ones = lm(PROMPT, max_new_tokens=6, head_mask={("causal", 0, 0): 1.0})
    assert ones.generated_ids == result.generated_ids
    torch.testing.assert_close(ones.attentions[1], result.attentions[1])
    off = lm(PROMPT, max_new_tokens=1, head_mask={("causal", 0, 0): 0.0})
    assert not torch.allclose(off.attentions[1], result.attentions[1][:, : len(result.tokens), : len(result.tokens)])
    assert lm(PROMPT, max_new_tokens=6).generated_ids == result.generated_ids  # nothing stayed switched off
    with pytest.raises(ValueError, match="no head"):
        lm(PROMPT, head_mask={("causal", 5, 0): 0.0})


def test_head_table_effect_is_the_first_tokens_log_probability_with_that_head_off(lm, result):
    rows = lm.head_table(PROMPT, result=result)
    L, H = lm.model.config.n_layers, lm.n_heads
    assert [(r["kind"], r["layer"], r["head"]) for r in rows] == [("causal", i, h) for i in range(L) for h in range(H)]
    x = torch.tensor([result.prompt_ids])
    token = result.generated_ids[0]
    with torch.no_grad():
        intact = float(lm.adapter.next_log_probs(x, [x.size(1)])[0, token])
    for row in rows[:: H + 1]:  # a few heads
        masks = lm.head_masks({("causal", row["layer"], row["head"]): 0.0})
        with torch.no_grad():
            off = float(lm.adapter.next_log_probs(x, [x.size(1)], masks)[0, token])
        assert row["effect"] == pytest.approx(off - intact, abs=1e-4)
    assert any(abs(r["effect"]) > 1e-3 for r in rows)
    induction = lm.induction
    assert induction.shape == (L, H)
    for r in rows:
        assert r["induction"] == pytest.approx(float(induction[r["layer"], r["head"]]))
        assert 0.0 <= r["sink"] <= 1.0 and 0.0 <= r["previous"] <= 1.0
    assert all(r["duplicate"] is None for r in rows) == (len(set(result.sequence_ids)) == len(result.sequence_ids))


def one_hot_rows(keys: list[int]) -> np.ndarray:
    """(T, T): row q puts all its weight on column keys[q]."""
    a = np.zeros((len(keys), len(keys)))
    a[np.arange(len(keys)), keys] = 1.0
    return a


def test_head_roles_on_hand_made_maps():
    T = 7
    previous = one_hot_rows([0] + list(range(T - 1)))
    sink = one_hot_rows([0] * T)
    itself = np.eye(T)
    assert roles.previous_share(previous) == pytest.approx(1.0)
    assert roles.previous_share(itself) == pytest.approx(0.0)
    assert roles.sink_share(sink) == pytest.approx(1.0)
    assert roles.sink_share(previous) == pytest.approx(1 / (T - 1))  # only the second token's previous is the first
    stacked = np.stack([previous, sink])  # (2, T, T): per head
    np.testing.assert_allclose(roles.previous_share(stacked), [1.0, 1 / (T - 1)])

    n = 5  # <s> + r + r: the second copy's token q reads q - n + 1, the token after its first occurrence
    keys = list(range(n + 1)) + [q - n + 1 for q in range(n + 1, 2 * n + 1)]
    assert roles.induction_share(one_hot_rows(keys), n) == pytest.approx(1.0)
    assert roles.induction_share(np.eye(2 * n + 1), n) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        roles.induction_share(np.eye(T), n)

    ids = [1, 8, 9, 8, 9, 5]  # positions 3 and 4 repeat 1 and 2
    twin = one_hot_rows([0, 0, 0, 1, 2, 0])
    assert roles.duplicate_share(twin, ids) == pytest.approx(1.0)
    assert roles.duplicate_share(np.eye(6), ids) == pytest.approx(0.0)
    assert np.isnan(roles.duplicate_share(np.eye(4), [1, 2, 3, 4]))


def test_induction_scores_are_measured_on_repeated_random_tokens(lm):
    ids = roles.repeated_random_ids(300, 5, 2, seed=0, bos_id=1)
    assert ids.shape == (2, 11) and bool((ids[:, 1:6] == ids[:, 6:]).all()) and bool((ids[:, 1:] >= 4).all())
    scores = roles.induction_scores(lm.model, n=50, batch=2)  # n cut to fit max_len 64
    assert scores.shape == (2, lm.n_heads) and bool(((scores >= 0) & (scores <= 1)).all())
    assert torch.equal(scores, roles.induction_scores(lm.model, n=50, batch=2)) and not lm.model.training


# --- explanations -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["gradient_x_input", "integrated_gradients", "occlusion", "attention_norm", "attention", "rollout"]
)
def test_explanations_score_every_prompt_token_with_faithfulness(lm, result, method):
    assert method in lm.explanation_methods
    step = min(1, len(result.generated_ids) - 1)
    expl = lm.explain(PROMPT, method, step=step, result=result)
    Tp = len(result.tokens)
    assert expl.task == "lm" and expl.method == method and expl.at_step == step
    assert expl.scores.shape == (Tp,) and expl.prefix_scores.shape == (step,) and np.isfinite(expl.scores).all()
    assert expl.scores[0] == 0.0  # <s> is not the prompt's
    assert expl.output_ids == [result.generated_ids[step]] and expl.prefix_ids == result.generated_ids[:step]
    assert expl.probability == pytest.approx(result.steps[step].probability, abs=1e-5)
    report = lm.faithfulness(expl)
    assert report.method.curve[0] == pytest.approx(expl.probability, abs=1e-5)  # the curve starts at p(token)
    assert math.isfinite(report.method.comprehensiveness) and math.isfinite(report.random.sufficiency)
    if not expl.signed:
        assert expl.scores.min() >= 0.0


def test_an_alternative_next_token_is_explained_by_its_text(lm, result):
    text, p = result.steps[0].top_k[2]
    expl = lm.explain(PROMPT, "gradient_x_input", token=text, result=result)
    assert expl.output_ids == [result.steps[0].top_ids[2]] and expl.probability == pytest.approx(p, abs=1e-5)
    with pytest.raises(ValueError, match="top-"):
        lm.explain(PROMPT, "gradient_x_input", token="no such token", result=result)


@pytest.mark.parametrize("method", ["gradient_x_input", "occlusion", "attention_norm"])
def test_a_later_step_is_explained_as_the_prompt_and_the_tokens_before_it_read_as_a_prompt(lm, result, method):
    """Step s (0-based 2) of the continuation: the same scores, token, probability and faithfulness as explaining the
    prompt and the s tokens generated before it, read as a prompt, for its next token."""
    from pipelines.text import TokenSpan

    s = 2
    assert len(result.steps) > s
    expl = lm.explain(PROMPT, method, step=s, result=result)
    written = [TokenSpan(i, "", 0, 0) for i in result.generated_ids[:s]]  # cover no characters of the prompt
    as_prompt = dataclasses.replace(
        result, tokens=result.tokens + written, generated_ids=result.generated_ids[s:], steps=result.steps[s:]
    )
    alone = lm.explain(PROMPT, method, step=0, result=as_prompt)
    assert expl.at_step == s and alone.at_step == 0 and expl.output_ids == alone.output_ids == [result.generated_ids[s]]
    assert expl.probability == pytest.approx(alone.probability, abs=1e-6)
    np.testing.assert_allclose(np.concatenate([expl.scores, expl.prefix_scores]), alone.scores, atol=1e-6)
    report = lm.faithfulness(expl)
    assert report.method.curve[0] == pytest.approx(result.steps[s].probability, abs=1e-5)
    # measured as for the first token: the prompt's top token deleted, the tokens written before the step kept
    body = result.prompt_ids[1:]  # after <s>
    top = int(np.argsort(-expl.scores[1:], kind="stable")[0])
    without = result.prompt_ids[:1] + body[:top] + body[top + 1 :] + result.generated_ids[:s]
    with torch.no_grad():
        logits = lm.adapter.forward(torch.tensor([without])).logits[0, -1]  # (V,)
    assert report.method.curve[1] == pytest.approx(float(logits.softmax(-1)[expl.output_ids[0]]), abs=1e-5)


def test_the_adapter_runs_from_embeddings_as_from_ids(lm, result):
    x = torch.tensor([result.sequence_ids])
    with torch.no_grad():
        a = lm.adapter.logits_from_embeddings(lm.adapter.embed(x))
        b = lm.adapter.forward(x).logits
    torch.testing.assert_close(a, b)


# --- the task, its download and its comparison -----------------------------------------------------------------


def test_the_task_registry_has_the_language_model(lm):
    from pipelines.kinds import KINDS
    from pipelines.tasks import TASKS

    task = TASKS["lm"]
    assert task.pipeline is LanguageModelPipeline and task.kinds == task.shown == ("causal",)
    assert "causal" in KINDS and lm.head_layers == {"causal": lm.model.config.n_layers}
    record = task.record(lm, PROMPT, Decoding(max_new_tokens=3))
    assert record["schema"] == "attention-demo/lm" and record["input"]["decoding"] == "greedy"
    assert len(record["attentions"]["causal"]) == lm.model.config.n_layers
    assert record["explanation"]["method"] == "gradient_x_input" and len(record["head_table"]) == 2 * lm.n_heads
    json.dumps(record, allow_nan=False)
    same = task.compare(lm, PROMPT, PROMPT, Decoding(max_new_tokens=3))
    assert all(t.kind == "shared" for t in same.tokens)
    assert np.nanmax(np.abs(same.attention().diff(1, 2))) == 0.0
    other = task.compare(lm, PROMPT, "A dull film.", Decoding(max_new_tokens=3))
    assert {t.kind for t in other.tokens} >= {"shared", "deleted"}


def test_a_chat_template_wraps_the_prompt_and_says_which_tokens_it_added(lm_dir):
    pipe = LanguageModelPipeline.from_pretrained(str(lm_dir), chat_template=CHATML)
    r = pipe("Hello there", max_new_tokens=2, chat=True)
    added = set(r.template_positions)
    assert r.chat and 0 not in added and r.tokens[0].special == "<s>"  # <s> is ours, not the template's
    assert added == set(range(1, r.n_prefix)) | set(range(len(r.tokens) - r.n_suffix, len(r.tokens)))
    own = [t for i, t in enumerate(r.tokens) if i not in added and i > 0]
    assert "".join(t.text for t in own).replace(" ", "") == "Hellothere"
    assert all(r.tokens[i].text == "" for i in added)
    plain = pipe("Hello there", max_new_tokens=2)
    assert plain.template_positions == [] and len(plain.tokens) == len(own) + 1


# --- loading ----------------------------------------------------------------------------------------------------


def test_save_and_load_give_the_same_continuation(lm, result, tmp_path):
    lm.save_pretrained(tmp_path / "copy")
    again = LanguageModelPipeline.from_pretrained(str(tmp_path / "copy"))
    assert again.add_bos and again(PROMPT, max_new_tokens=6).generated_ids == result.generated_ids


def test_another_tasks_folder_and_an_offline_repo_are_refused(lm_dir, tmp_path, monkeypatch):
    other = shutil.copytree(lm_dir, tmp_path / "other")
    (other / "preprocessing.json").write_text(json.dumps({"task": "sentiment"}))
    with pytest.raises(CheckpointError, match="not a language model"):
        LanguageModelPipeline.from_pretrained(str(other))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    with pytest.raises(CheckpointError, match="someone/some-lm.*offline"):
        LanguageModelPipeline.from_pretrained("someone/some-lm")


@pytest.fixture(scope="module")
def llama_dir(lm_dir, tmp_path_factory):
    """A tiny random transformers LlamaForCausalLM (grouped key/value heads, untied), saved with save_pretrained, with
    the tiny BPE's tokenizer.json and a chat template in tokenizer_config.json."""
    pytest.importorskip("transformers")
    from tiny_hf_models import make_llama_dir

    return make_llama_dir(tmp_path_factory.mktemp("llama"), lm_dir, CHATML)


def test_a_llama_folder_loads_and_computes_what_transformers_computes(llama_dir):
    import transformers

    pipe = LanguageModelPipeline.from_pretrained(str(llama_dir))
    assert not pipe.add_bos and pipe.chat_template == CHATML == read_chat_template(llama_dir)
    r = pipe(PROMPT, max_new_tokens=3)
    assert r.prompt_ids[0] != 1 and not r.bos  # the tokenizer adds no <s>, so neither does the pipeline
    theirs = transformers.LlamaForCausalLM.from_pretrained(str(llama_dir), attn_implementation="eager").eval()
    x = torch.tensor([r.sequence_ids])
    with torch.no_grad():
        expected = theirs(x, output_attentions=True)
        ours = pipe.adapter.forward(x, need_weights=True)
    torch.testing.assert_close(ours.logits, expected.logits, atol=1e-4, rtol=1e-4)
    for a, b in zip(ours.attentions, expected.attentions):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    chat = pipe("Hello", max_new_tokens=1, chat=True)
    assert chat.template_positions == list(range(chat.n_prefix)) + list(
        range(len(chat.tokens) - chat.n_suffix, len(chat.tokens))
    )


def test_a_gguf_file_goes_to_the_gguf_reader(lm_dir, monkeypatch):
    from tokenizers import Tokenizer

    calls = []

    def load_gguf(path, sha256=None):
        calls.append(path)
        model = CausalLM.from_pretrained(lm_dir)
        return model, Tokenizer.from_file(str(lm_dir / "tokenizer.json")), CHATML

    monkeypatch.setitem(sys.modules, "pipelines.models.gguf", types.SimpleNamespace(load_gguf=load_gguf))
    pipe = LanguageModelPipeline.from_pretrained("/models/SmolLM2-135M.Q8_0.GGUF")
    assert calls == ["/models/SmolLM2-135M.Q8_0.GGUF"]
    assert pipe.chat_template == CHATML and not pipe.add_bos and pipe.source.endswith(".GGUF")
    assert pipe("Hello", max_new_tokens=2, chat=True).template_positions


def test_a_generation_without_weights_has_the_same_tokens_and_no_maps(lm):
    """/generate returns the text, the first step's top tokens and a status: it runs no maps pass."""
    from pipelines.language_model import Decoding

    light, full = lm.generate("The cat", Decoding(6), need_weights=False), lm.generate("The cat", Decoding(6))
    assert light.complete and light.attentions == [] and full.attentions
    assert light.generated_ids == full.generated_ids and light.steps == full.steps
