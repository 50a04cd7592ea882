"""The training loop and what it stands on: data loading and checks, length-bucketed batches, the device and
precision, atomic checkpoints, snapshots during training. It knows nothing about any task (training/tasks/)."""
