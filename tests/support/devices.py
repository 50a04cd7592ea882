"""A torch function mode that fails any torch call mixing devices, on a model living on the `meta` device: what a
GPU run needs, checked on a CPU (the training tasks' tests and the pipelines'). A `meta` tensor holds no values, so
the mode answers the few reads of a value with stand-ins (see training/test_device.py)."""

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

Tensor = torch.Tensor


READS = {Tensor.__int__, Tensor.__float__, Tensor.__bool__, Tensor.__index__, Tensor.item, Tensor.tolist}


COPIES = {Tensor.cpu, Tensor.to}  # a copy to the CPU of a meta tensor gets stand-in values


def stand_in_value(t: torch.Tensor):
    """True, 1 or 0.5 by dtype."""
    return True if t.dtype == torch.bool else 0.5 if t.is_floating_point() else 1


def stand_in(t: torch.Tensor):
    """A value for a read of a meta tensor: stand_in_value (nested lists for tolist)."""
    value = stand_in_value(t)
    out = value
    for n in reversed(t.shape):
        out = [out] * n if not isinstance(out, list) else [list(out) for _ in range(n)]
    return out


DEVICE = torch.device("meta")


class FollowsDevice(TorchFunctionMode):
    """Fails a torch call that mixes devices (0-dim CPU scalars aside, as torch allows them); on meta tensors,
    answers value reads and copies to the CPU with stand-ins and boolean-mask selection with all rows."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.calls += 1
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        devices = {str(t.device) for t in tensors if t.dim() > 0}
        if len(devices) > 1:
            raise AssertionError(f"{getattr(func, '__qualname__', func)} mixes devices {sorted(devices)}")
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if first is not None and first.is_meta:
            if func in READS:
                return stand_in(first)
            if func is Tensor.__getitem__:
                return self.select(first, args[1])
            if func in COPIES:
                try:
                    return func(*args, **kwargs)
                except NotImplementedError:  # "Cannot copy out of meta tensor": the same copy of stand-ins
                    values = torch.full(first.shape, stand_in_value(first), dtype=first.dtype)
                    return func(values, *args[1:], **kwargs)
        return func(*args, **kwargs)

    @staticmethod
    def select(t: torch.Tensor, index):
        """t[index] on meta: a boolean mask selects every row (how many it selects is data), and a 0-dim
        index tensor reads as 0."""
        if isinstance(index, torch.Tensor) and index.dtype == torch.bool:
            return t.flatten(0, index.dim() - 1)
        parts = index if isinstance(index, tuple) else (index,)
        parts = tuple(0 if isinstance(i, torch.Tensor) and i.dim() == 0 else i for i in parts)
        return t[parts if isinstance(index, tuple) else parts[0]]
