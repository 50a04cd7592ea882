"""A chat model's template: where it is stored, and the text it puts before and after one user message.

Chat templates are Jinja, as `transformers` keeps them in tokenizer_config.json ("chat_template") and GGUF files in
tokenizer.chat_template; SmolLM2's is ChatML: `<|im_start|>user\\n{message}<|im_end|>\\n<|im_start|>assistant\\n`.
A template comes with a downloaded model, so it is rendered in Jinja's sandbox, as `transformers` renders it.
"""

import json
from pathlib import Path

CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)  # SmolLM2's template, its default system message left out
MARK = "\x00PROMPT\x00"  # stands for the message while the template renders: no template writes it


class TemplateError(ValueError):
    """A chat template that cannot be applied (its message says why)."""


def read_chat_template(folder: Path) -> str | None:
    """The chat template of a model folder (tokenizer_config.json's "chat_template": a string, or a list of named
    templates, of which "default" or the first is taken); None without one."""
    path = Path(folder) / "tokenizer_config.json"
    if not path.is_file():
        return None
    template = json.loads(path.read_text()).get("chat_template")
    if isinstance(template, list):  # [{"name": ..., "template": ...}]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    return template if isinstance(template, str) and template else None


def _raise(message: str):
    raise TemplateError(f"the chat template refused the prompt: {message}")


def split_template(template: str, bos_token: str = "", eos_token: str = "") -> tuple[str, str]:
    """(text before, text after) one user message in `template`, the assistant's turn opened after it."""
    from jinja2 import TemplateError as JinjaError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise
    try:
        text = env.from_string(template).render(
            messages=[{"role": "user", "content": MARK}],
            add_generation_prompt=True,
            bos_token=bos_token,
            eos_token=eos_token,
        )
    except JinjaError as e:
        raise TemplateError(f"the chat template does not render: {e}") from e
    if text.count(MARK) != 1:
        raise TemplateError("the chat template does not place the message exactly once")
    before, after = text.split(MARK)
    return before, after
