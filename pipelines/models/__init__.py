"""Loading models and reaching them through one interface: our adapter and the one for `transformers` models (their
Protocols: pipelines/contracts.py), GGUF files, tokenizers, chat templates, training snapshots, the models a tab
can show."""
