"""A small PyTorch training script: an MLP classifier with AdamW, profiled with
torch.profiler (schedule + tensorboard_trace_handler).

Plain PyTorch: the only line it has for the neuron device is ``import neuronprof_torch``.
Run it on the emulated device or on the CPU:

    python python/examples/train_mlp.py --device neuron --trace-dir traces/neuron
    python python/examples/train_mlp.py --device cpu --trace-dir traces/cpu

It prints one JSON line per step (``{"step": i, "loss": ...}``) and the trace handler
writes ``<worker>.<time>.pt.trace.json`` into the trace folder.
"""

import argparse
import json

import torch
from torch import nn
from torch.profiler import ProfilerActivity

import neuronprof_torch  # noqa: F401  (gives PyTorch the `neuron` device)


def make_data(samples: int, features: int, classes: int, seed: int):
    """A learnable synthetic task: labels from a fixed random linear teacher."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=gen)
    teacher = torch.randn(features, classes, generator=gen)
    y = (x @ teacher).argmax(dim=1)
    return x, y


def train(device: str, steps: int = 12, trace_dir: str | None = None, batch: int = 64,
          features: int = 64, hidden: int = 128, classes: int = 10, seed: int = 0):
    """Trains for `steps` steps on `device`; returns the losses. With `trace_dir`, the
    run is profiled (wait 2, warm-up 2, active 4) and the trace written there."""
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(features, hidden),
        nn.GELU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, classes),
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x_all, y_all = make_data(batch * steps, features, classes, seed)

    activities = [ProfilerActivity.CPU]
    if torch.device(device).type != "cpu":
        activities.append(ProfilerActivity.PrivateUse1)
    profiler = None
    if trace_dir is not None:
        profiler = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=2, warmup=2, active=4, repeat=1),
            on_trace_ready=torch.profiler.tensorboard_trace_handler(trace_dir),
            record_shapes=True,
            profile_memory=True,
            with_flops=True,
        )
        profiler.start()
    losses = []
    for step in range(steps):
        x = x_all[step * batch:(step + 1) * batch].to(device)
        y = y_all[step * batch:(step + 1) * batch].to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(json.dumps({"device": device, "step": step, "loss": losses[-1]}), flush=True)
        if profiler is not None:
            profiler.step()
    if profiler is not None:
        profiler.stop()
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="neuron")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--trace-dir", default=None)
    args = parser.parse_args()
    train(args.device, args.steps, args.trace_dir)


if __name__ == "__main__":
    main()
