"""Public weights this project knows, with what a model card must say about them (revision, checksum, license,
credit). Apart from the code that loads them (bert_init.py), so that `python -m training --help` shows the pinned
checksum without importing a task module.
"""

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Source:
    """Public weights this project knows, with what a model card must say about them."""

    name: str  # the Hub repository the weights come from
    revision: str
    sha256: str  # of model.safetensors
    license: str
    credit: str
    derived: str = ""  # how these weights were made from the named file, when they are not that file itself


MINILM = Source(
    name="sentence-transformers/all-MiniLM-L6-v2",
    revision="1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    license="apache-2.0",
    credit="Reimers and Gurevych (sentence-transformers), from Microsoft's MiniLM (Wang et al., 2020)",
)
# The same weights with every float tensor rounded to fp16 (write_fp16_copy): half the size, so that they travel
# to a lent GPU machine, where a working tree may take 64 MiB (benchmarks/gpu/). Fine-tuning moves weights far
# more than fp16 rounding does (relative 5e-4).
MINILM_FP16 = Source(
    **{
        **asdict(MINILM),
        "sha256": "e0d20df3bf952fe167a1d822e435f1d8d7a63f13e1f8c33cc3881ae1d707dfb0",
        "derived": "every float tensor rounded to fp16 (training.tasks.bert_init.write_fp16_copy)",
    }
)
KNOWN = {s.sha256: s for s in (MINILM, MINILM_FP16)}
