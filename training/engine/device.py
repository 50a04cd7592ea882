"""Where training runs and in what precision: batches follow the model's device; bf16 autocast on CUDA.

On CUDA, matrix products run in bf16 under autocast (weights, optimizer state and the loss stay fp32) and the
remaining fp32 matmuls use TF32; on a CPU everything stays fp32.
"""

import contextlib
from dataclasses import dataclass

import torch


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of the model's weights (where its inputs must be)."""
    return next(model.parameters()).device


def to_device(batch, device: torch.device):
    """A batch (tuple or list of tensors and plain values) with every tensor on `device`."""
    return type(batch)(t.to(device, non_blocking=True) if torch.is_tensor(t) else t for t in batch)


@dataclass(frozen=True)
class Precision:
    """The arithmetic of a run: "bf16" (autocast, CUDA) or "fp32"."""

    device: torch.device
    name: str

    @classmethod
    def for_device(cls, device: torch.device, choice: str = "auto") -> "Precision":
        """choice "auto": bf16 on a CUDA device that supports it, fp32 elsewhere (a CPU)."""
        device = torch.device(device)
        if choice == "auto":
            bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
            choice = "bf16" if bf16 else "fp32"
        if choice == "bf16" and device.type != "cuda":
            raise ValueError("bf16 autocast is for CUDA devices; a CPU trains in fp32")
        return cls(device, choice)

    def autocast(self):
        """The context forward passes and losses run in."""
        if self.name == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def enable_tf32(self) -> None:
        """TF32 tensor cores for the fp32 matmuls left outside autocast (CUDA only; a no-op on a CPU)."""
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True

    def describe(self) -> str:
        extra = ", TF32 matmuls" if self.device.type == "cuda" else ""
        return ("bf16 autocast" if self.name == "bf16" else "fp32") + extra


def describe_device(device: torch.device) -> str:
    """'cuda:0 (NVIDIA H100 80GB HBM3)' or 'cpu' for the logs."""
    device = torch.device(device)
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return str(device)
