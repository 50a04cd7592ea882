"""LanguageModelPipeline: a prompt -> its continuation, token by token, with each step's top-k next tokens and every
layer's causal self-attention over the whole sequence.

The model is a transformer.CausalLM: ours (a folder with preprocessing.json {"task": "lm"}), Llama-architecture
weights (a folder or Hub repo with `transformers`' names: SmolLM2, TinyLlama) or a GGUF file (pipelines/models/gguf.py).
"""

import dataclasses
import functools
import numbers
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer
from torch import nn

from pipelines import explanations
from pipelines.attention import heads, inside_head
from pipelines.attention.attention_maps import AttentionMaps, lm_maps, token_texts
from pipelines.attention.head_roles import induction_scores
from pipelines.attention.heads import HeadKey
from pipelines.contracts import CausalLMAdapter
from pipelines.explanations import steps as explanation_steps
from pipelines.kinds import CAUSAL
from pipelines.lens import why_head
from pipelines.lens.family import Family
from pipelines.lens.operations import LensMethods
from pipelines.lens.readout import readout_of
from pipelines.lens.tuned import tuned_lens_for
from pipelines.models.adapter import KindMasks, OurCausalLM
from pipelines.models.chat_template import TemplateError, read_chat_template, split_template
from pipelines.models.folders import CONFIG, TOKENIZER, WEIGHTS, load_folder, serving_device
from pipelines.models.hf_adapter import is_transformers_config, read_config
from pipelines.models.tokenizers_io import special_ids
from pipelines.pipeline import AdapterBacked, BatchRunner, runs_model
from pipelines.text import TokenSpan, clean_text, wrap_spans
from pipelines.trust.finite import guarded, require_finite
from transformer import CausalLM, CheckpointError, resolve_checkpoint

MAX_NEW_TOKENS = 64  # new tokens one call may ask for
TOP_K = 10  # next tokens each step shows
FINITE_FIELDS = ("attentions", "steps")  # what a result may never hold a NaN or an infinity in (pipelines.trust.finite)
GGUF = ".gguf"


class PromptError(ValueError):
    """A prompt or a decoding option the language model cannot take; the message says which and why."""


@dataclass
class NextToken:
    """One generation step: the token chosen, and the model's most likely next tokens."""

    token: str  # the token chosen, as the views label it
    token_id: int
    probability: float  # the model's p(token) at this step: softmax of its logits (temperature 1, no top-p)
    top_k: list[tuple[str, float]]  # the TOP_K most likely next tokens and their probabilities, as `probability`
    top_ids: list[int]  # their ids


@dataclass
class PromptInput:
    """What the model reads before it generates: <s> (where the model wants it), a chat template's opening, the
    prompt's own tokens, the template's closing."""

    ids: list[int]
    tokens: list[TokenSpan]  # one per id; the prompt's with offsets into it, the others cover no characters
    n_prefix: int  # tokens before the prompt's own: <s> and the template's opening
    n_suffix: int  # tokens after them: the template's closing
    bos: bool  # ids[0] is <s>


@dataclass
class LanguageModelResult:
    """A prompt and its continuation. The maps are those of ONE forward pass over the final sequence (the prompt's
    tokens and the generated ones but the last, which no position has read yet), with every head's weights: since
    attention is causal, row i reads positions 0..i only, so what the model read at step s (when it had the prompt's
    Tp tokens and s generated ones) is the top-left (Tp + s) x (Tp + s) block of these maps (step_attentions)."""

    prompt: str  # as given
    tokens: list[TokenSpan]  # what the model read before generating (PromptInput.tokens)
    generated_ids: list[int]  # the new tokens, the end-of-text token included when it came
    continuation: str  # the new text, special tokens left out
    steps: list[NextToken]  # one per generated token
    attentions: list[torch.Tensor]  # per layer (H, T, T) on the CPU, T = len(sequence_ids); [] while streaming
    finished: bool = False  # it stopped at the model's end-of-text token
    n_prefix: int = 0  # see PromptInput
    n_suffix: int = 0
    bos: bool = False
    complete: bool = True  # False: a partial result of stream(), without maps
    chat: bool = False  # the prompt went through the chat template
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    value_norms: list[torch.Tensor] = dataclasses.field(default_factory=list)  # per layer (H, T) ||v_j W_O^h||

    @property
    def prompt_ids(self) -> list[int]:
        return [t.id for t in self.tokens]

    @property
    def generated_tokens(self) -> list[str]:
        return [s.token for s in self.steps]

    @property
    def template_positions(self) -> list[int]:
        """The positions in `tokens` that the chat template added (<s> is not one of them)."""
        Tp = len(self.tokens)
        return list(range(int(self.bos), self.n_prefix)) + list(range(Tp - self.n_suffix, Tp))

    @property
    def sequence_ids(self) -> list[int]:
        """The ids of the maps' rows and columns: the prompt's, then the generated ones but the last."""
        return self.prompt_ids + self.generated_ids[:-1]

    @property
    def sequence_texts(self) -> list[str]:
        return token_texts(self.tokens) + self.generated_tokens[:-1]

    def step_attentions(self, step: int) -> list[torch.Tensor]:
        """Per layer (H, Tp + step, Tp + step): what the model had read when it chose generated token `step`; its
        last row is that step's own attention (causal: the top-left block of the final maps)."""
        n = len(self.tokens) + step
        return [a[:, :n, :n] for a in self.attentions]

    def attention_maps(self) -> AttentionMaps:
        """Every map by kind ("causal"), layer and head: (L, H, T, T), with the tokens (a complete result)."""
        return lm_maps(self)


@dataclass(frozen=True)
class Decoding:
    """How one continuation is decoded: up to max_new_tokens (1..MAX_NEW_TOKENS) new tokens, greedy at temperature 0,
    else sampled (nucleus top_p) with a generator seeded by `seed` (the same seed, the same continuation); chat: the
    prompt goes in as a user message in the model's chat template."""

    max_new_tokens: int = 20
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    seed: int | None = None
    chat: bool = False

    def check(self, n_prompt: int, max_len: int) -> "Decoding":
        """These options with whole numbers where they take them; PromptError for an option out of range, or a prompt
        of n_prompt tokens that leaves no room for max_new_tokens more in a model reading max_len."""
        n = self.max_new_tokens
        whole = isinstance(n, numbers.Real) and float(n).is_integer()  # 20.0 from a slider too
        if not whole or not 1 <= n <= MAX_NEW_TOKENS:
            raise PromptError(f"max_new_tokens must be a whole number from 1 to {MAX_NEW_TOKENS}, got {n!r}")
        if not self.temperature >= 0:  # NaN too
            raise PromptError(f"temperature must be 0 (greedy) or more, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise PromptError(f"top_p must be above 0 and at most 1, got {self.top_p!r}")
        if n_prompt + n > max_len:
            raise PromptError(
                f"the prompt is {n_prompt} tokens: with {n} new ones that is more than the model reads "
                f"({max_len}); shorten the prompt or ask for fewer tokens"
            )
        seed = None if self.seed is None else int(self.seed)
        return dataclasses.replace(self, max_new_tokens=int(n), seed=seed, chat=bool(self.chat))


@dataclass
class Start:
    """What a generation starts from (LanguageModelPipeline.begin)."""

    ids: list[int]  # what the model reads
    options: tuple  # (max_new_tokens, temperature, top_p, seed), checked
    masks: KindMasks | None  # {"causal": (L, H)} or None
    result: LanguageModelResult  # the empty partial result

    @property
    def head_mask(self) -> torch.Tensor | None:
        """(L, H) the causal heads' multipliers, None: every head on."""
        return None if self.masks is None else self.masks[CAUSAL.name]


def next_token_info(adapter, step, top_k: int = TOP_K) -> NextToken:
    """The NextToken of a transformer.generation.LMStep."""
    probs = step.logits.float().softmax(-1)  # (V,)
    top_p, top_i = probs.topk(min(top_k, probs.numel()))  # (k,) each
    ids = [int(i) for i in top_i]
    return NextToken(
        adapter.token_text(step.token),
        int(step.token),
        float(probs[step.token]),
        [(adapter.token_text(i), float(p)) for i, p in zip(ids, top_p)],
        ids,
    )


class LanguageModelPipeline(AdapterBacked, BatchRunner, LensMethods):
    adapter: CausalLMAdapter

    """A decoder-only language model behind its adapter (pipelines.models.adapter.OurCausalLM), from our folder, a Llama
    folder or repo id, or a GGUF file."""

    lens_family = Family()  # what the lens operations (pipelines.lens.operations) run and read

    def __init__(self, model, tokenizer=None, add_bos: bool = True, chat_template: str | None = None):
        # model: a CausalLM (with its tokenizer) or a ready adapter (tokenizer None)
        self.adapter = OurCausalLM(model, tokenizer) if isinstance(model, nn.Module) else model
        self.add_bos = add_bos  # <s> before every prompt: ours were trained so; others as their tokenizer does
        self.chat_template = chat_template  # Jinja (pipelines.models.chat_template); None: chat=True is refused
        self.metrics: dict = {}  # metrics.json of our model folder
        self.source, self.revision = None, None  # which model made a result (export)

    @classmethod
    def from_pretrained(
        cls, name_or_path: str, device: str | None = None, chat_template: str | None = None
    ) -> "LanguageModelPipeline":
        """Our model folder or repo (preprocessing.json's task "lm"), a Llama-architecture folder or Hub repo id
        (config.json with a model_type, safetensors, tokenizer.json), or a .gguf file. device: where the model runs
        (models.folders.serving_device); chat_template: Jinja, in place of the model's own. CheckpointError when it does
        not load (a repo id offline and not in the cache among the causes)."""
        name = str(name_or_path)
        gguf = name.lower().endswith(GGUF)
        config = None if gguf else read_config(name)
        load = _from_gguf if gguf else _from_llama if config and is_transformers_config(config) else _from_ours
        pipe = load(cls, name, device)
        pipe.chat_template = chat_template or pipe.chat_template
        pipe.source = name
        return pipe

    def save_pretrained(self, folder) -> None:
        """Our folder format (config.json, weights, tokenizer, preprocessing.json with the task and the template)."""
        prep = {"task": "lm"} | ({"chat_template": self.chat_template} if self.chat_template else {})
        self.adapter.save(Path(folder), prep)

    def template_ids(self, chat: bool) -> tuple[list[int], list[int]]:
        """(ids before, ids after) the prompt's own that the chat template adds; ([], []) without chat."""
        if not chat:
            return [], []
        if self.chat_template is None:
            raise PromptError("this model has no chat template: run it with chat=False")
        tok = self.adapter.tokenizer
        try:
            before, after = split_template(self.chat_template, eos_token=tok.id_to_token(self.adapter.eos_id) or "")
        except TemplateError as e:
            raise PromptError(str(e)) from e
        return self.adapter.tokenize(before)[0] if before else [], self.adapter.tokenize(after)[0] if after else []

    def encode(self, prompt: str, chat: bool = False) -> PromptInput:
        """What the model reads for `prompt`; PromptError for an empty prompt or one without tokens."""
        text = clean_text(prompt)
        if not text.strip():
            raise PromptError("the prompt is empty: type a few words")
        ids, toks = self.adapter.tokenize(text)
        if not ids:
            raise PromptError("the prompt has no tokens")
        before, after = self.template_ids(chat)
        before = [self.adapter.bos_id] * self.add_bos + before
        spans = wrap_spans(before, toks, after, len(text), self.adapter.token_text)
        return PromptInput(before + ids + after, spans, len(before), len(after), self.add_bos)

    def head_masks(self, head_mask: dict[HeadKey, float] | None) -> KindMasks | None:
        """{("causal", layer, head): multiplier} -> {"causal": (L, H)} (ValueError for a head the model lacks)."""
        return heads.mask_tensors(head_mask, self.head_layers, self.n_heads, self.adapter.device)

    def stream(
        self,
        prompt: str,
        decoding: Decoding | None = None,
        head_mask: dict[HeadKey, float] | None = None,
        need_weights: bool = True,
    ):
        """Yield a partial LanguageModelResult (complete=False, no maps) after each generated token, then the complete
        one, with the maps of one pass over the final sequence. decoding: the options (None: greedy, 20 tokens);
        head_mask as __call__'s; need_weights=False: no maps pass (an API call: `attentions` stays empty).
        PromptError before anything runs for a bad prompt or option."""
        start = self.begin(prompt, decoding, head_mask)
        result = start.result
        for step in self.adapter.steps(start.ids, *start.options, start.masks):
            result = self.extended(result, step)
            yield result
        yield self.finish(result, start.masks, need_weights)

    def begin(self, prompt: str, decoding: Decoding | None = None, head_mask=None) -> "Start":
        """What a generation starts from (the prompt read, the options checked, the head masks, the empty result), or
        PromptError: stream's first part, shared with a server that decodes many prompts together
        (pipelines.hosting.decoding)."""
        decoding = decoding or Decoding()
        read = self.encode(prompt, decoding.chat)
        decoding = decoding.check(len(read.ids), self.adapter.max_len)
        result = LanguageModelResult(
            prompt, read.tokens, [], "", [], [], False, read.n_prefix, read.n_suffix, read.bos, complete=False,
            chat=decoding.chat, temperature=decoding.temperature, top_p=decoding.top_p, seed=decoding.seed,
        )  # fmt: skip
        options = (decoding.max_new_tokens, decoding.temperature, decoding.top_p, decoding.seed)
        return Start(read.ids, options, self.head_masks(head_mask), result)

    def extended(self, result: LanguageModelResult, step) -> LanguageModelResult:
        """result with one more step (a transformer.generation.LMStep), as stream yields it."""
        return self._extended(result, next_token_info(self.adapter, step))

    @runs_model
    def finish(self, result: LanguageModelResult, masks: KindMasks | None, need_weights: bool = True):
        """The complete result of a generation's last partial one: with the maps (need_weights) of one pass."""
        return self._complete(result, masks) if need_weights else dataclasses.replace(result, complete=True)

    def _extended(self, result: LanguageModelResult, step: NextToken) -> LanguageModelResult:
        """result with one more generated token (NonFiniteOutput for a step whose probabilities are not finite)."""
        require_finite("lm", {"steps": step})
        ids = result.generated_ids + [step.token_id]
        return dataclasses.replace(
            result,
            generated_ids=ids,
            continuation=self.adapter.detokenize(ids),
            steps=result.steps + [step],
            finished=step.token_id == self.adapter.eos_id,
        )

    @torch.no_grad()
    def _complete(self, result: LanguageModelResult, masks: KindMasks | None) -> LanguageModelResult:
        """result with the maps of one forward pass (need_weights) over its final sequence, guarded."""
        x = torch.tensor([result.sequence_ids], device=self.adapter.device)  # (1, T)
        run, carried = inside_head.with_value_norms(
            self.adapter, lambda: self.adapter.forward(x, need_weights=True, head_mask=masks)
        )
        maps = [a[0].to("cpu", copy=True) for a in run.attentions]  # per layer (H, T, T)
        norms = [n.to("cpu", copy=True) for n in carried[CAUSAL.name][0]]  # per layer (H, T)
        done = dataclasses.replace(result, attentions=maps, value_norms=norms, complete=True)
        done = guarded([done], "lm", FINITE_FIELDS)[0]
        if isinstance(done, Exception):
            raise done
        return done

    def __call__(
        self,
        prompt: str,
        max_new_tokens: int = 20,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        head_mask: dict[HeadKey, float] | None = None,
        chat: bool = False,
    ) -> LanguageModelResult:
        """Continue `prompt` by up to max_new_tokens (1..MAX_NEW_TOKENS) tokens, stopping at the end-of-text token:
        greedy at temperature 0, else sampled (nucleus top_p) with a generator seeded by `seed` (the same seed, the
        same continuation). head_mask: {("causal", layer, head): multiplier}, 0 switches a head off for this call
        (decoding and the maps both run with it). chat: the prompt as a user message in the chat template.
        PromptError (a ValueError) for an empty prompt, one without tokens, options out of range, or a prompt too
        long for max_new_tokens more; NonFiniteOutput where the model computes NaN."""
        return self.generate(prompt, Decoding(max_new_tokens, temperature, top_p, seed, chat), head_mask)

    def generate(
        self,
        prompt: str,
        decoding: Decoding | None = None,
        head_mask: dict[HeadKey, float] | None = None,
        need_weights: bool = True,
    ) -> LanguageModelResult:
        """__call__ with its options as one Decoding (None: greedy, 20 tokens): the complete result of stream
        (need_weights=False: without its maps)."""
        *_, result = self.stream(prompt, decoding, head_mask, need_weights)
        return result

    @functools.cached_property
    def induction(self) -> torch.Tensor:
        """(L, H) each head's induction score on repeated random tokens (pipelines.attention.head_roles), measured
        once."""
        return induction_scores(self.model)

    @runs_model(background=True)
    def head_table(
        self, prompt: str, result: LanguageModelResult | None = None, progress=None, decoding: Decoding | None = None
    ) -> list[dict]:
        """One dict per head (kind "causal", layer, head from 0): attention statistics and roles (sink, previous,
        duplicate, induction) on this prompt's result, and the effect of switching that head alone off: the change
        of the first generated token's log-probability. result: a complete result of `prompt` to reuse (None: run
        it now, decoded as `decoding`); progress(heads done, heads) as the effects come."""
        return heads.lm_head_table(self, result or self.generate(prompt, decoding), self.induction, progress)

    @property
    def default_explanation(self) -> dict:
        """{'method', 'why'}: the default explanation for this model (explanations.default_method)."""
        return explanations.default_method("lm", self.metrics)

    @property
    def explanation_methods(self) -> tuple[str, ...]:
        """The registered methods that explain a next token (pipelines.explanations.registry)."""
        return explanations.names("lm")

    @runs_model
    def explain(self, prompt: str, method=None, step: int = 0, token=None, result=None, progress=None, contrast=None):
        """Attribution of one next token's probability at `step` (0-based) to the prompt's tokens (and to the tokens
        generated before it, as prefix_scores): the token chosen there, or `token` (an id, or the text of one of
        the step's top-k); why it rather than `contrast` (the same kinds) where given. result: a LanguageModelResult
        of `prompt` (None: greedy, now). Returns an Explanation."""
        return explanations.explain_next_token(self, prompt, method, step, token, result, progress, contrast)

    @runs_model(background=True)
    def explain_steps(self, result, method=None, faithfulness: bool = False, progress=None):
        """pipelines.explanations.steps.StepExplanations: every new token of `result` explained by `method` over the
        tokens read before it (row s is explain(result.prompt, method, step=s, result=result)), with each row's
        faithfulness where asked; progress(done, total) a row at a time."""
        return explanation_steps.explain_steps(self, result, method, faithfulness, progress)

    @runs_model
    def induction_circuit(self, top: int = 1, carriers: int = 3, s=None):
        """pipelines.lens.induction_circuit.InductionCircuit: the `top` strongest induction heads on repeated random
        tokens (s: an over_set.InductionSet; None: 2 sequences of 20 tokens twice), each with the `carriers` earlier
        heads carrying most of its key side at the repeat, and its induction score with them switched off (beside as
        many least-carrying heads off)."""
        return why_head.induction_circuit(self, top, carriers, s)

    @runs_model(background=True)
    def faithfulness(self, explanation):
        """Comprehensiveness and sufficiency over the prompt's tokens, beside random rankings."""
        return explanations.faithfulness(self, explanation)

    def tuned_lens(self):
        """pipelines.lens.tuned.TunedLens trained for these weights (its `about`: data, test KL by layer), or None."""
        try:
            readout = readout_of(self.adapter)
        except ValueError:  # a transformers model: no residual stream of ours to translate
            return None
        return tuned_lens_for(self.source, readout, self.adapter.device)

    @runs_model
    def internals(self, ids: list[int]):
        """What every head read and wrote on one sequence of ids (a result's sequence_ids: the pass that made its maps),
        with q and k before and after the rotation and each query head's key/value head
        (pipelines.attention.inside_head.CausalInternals)."""
        return inside_head.causal_internals(self.adapter, list(ids))


def _from_ours(cls, name: str, device: str | None) -> LanguageModelPipeline:
    model, tok, prep, metrics = load_folder(CausalLM, name, device)
    if prep.get("task", "lm") != "lm":
        raise CheckpointError(f"{name}: preprocessing.json is for the task {prep['task']!r}, not a language model")
    pipe = cls(model, tok, add_bos=True, chat_template=prep.get("chat_template"))
    pipe.metrics = metrics
    return pipe


def _from_llama(cls, name: str, device: str | None) -> LanguageModelPipeline:
    """A Llama-architecture folder or repo: <s> before a prompt where its tokenizer adds one (SmolLM2's adds none)."""
    device = serving_device(device)
    folder = resolve_checkpoint(name, required=(CONFIG, WEIGHTS, TOKENIZER))
    model = CausalLM.from_llama(str(folder))
    tok = _tokenizer(folder / TOKENIZER, name)
    return cls(model.to(device), tok, add_bos=bool(special_ids(tok)[0]), chat_template=read_chat_template(folder))


def _from_gguf(cls, path: str, device: str | None) -> LanguageModelPipeline:
    from pipelines.models.gguf import load_gguf  # the GGUF reader is loaded only for a GGUF file

    device = serving_device(device)
    model, tok, template = load_gguf(path)
    return cls(model.to(device), tok, add_bos=bool(special_ids(tok)[0]), chat_template=template)


def _tokenizer(path: Path, name: str) -> Tokenizer:
    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:
        raise CheckpointError(f"{name}: tokenizer does not load: {e}") from e
