"""Independent model passes at once (pipelines.attention.passes): same results, same order, no autograd in the
threads."""

import threading

import torch

from pipelines.attention import passes


def test_passes_at_once_give_the_results_in_order_without_grad():
    w = torch.randn(4, 4, requires_grad=True)
    seen = set()

    def one(i: int):
        seen.add(threading.get_ident())
        out = torch.full((1, 4), float(i)) @ w
        return i, out.requires_grad

    items = list(range(12))
    assert passes.run_passes(one, items, passes=3) == [(i, False) for i in items]
    assert threading.get_ident() not in seen  # run on the pool's threads, grad mode off in each
    assert passes.run_passes(one, items, passes=1) == [(i, False) for i in items]


def test_one_pass_a_core_left_by_torch(monkeypatch):
    monkeypatch.setattr(passes, "cores", lambda: 2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert passes.at_once() == passes.at_once(torch.device("cpu")) == 2  # the app: one torch thread a model, 2 cores
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert passes.at_once() == 1  # torch's own threads already use every core
    monkeypatch.setattr(passes, "cores", lambda: 64)
    assert passes.at_once() == passes.MAX_AT_ONCE
    assert passes.at_once("meta") == 1  # not the CPU: an accelerator runs them one after another anyway
