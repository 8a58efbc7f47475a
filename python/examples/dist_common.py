"""What the torchrun examples (train_ddp.py, train_fsdp.py, train_mesh.py) share: their
options, the process group and device, one JSON line per write, the synthetic task,
each rank's resident batches, the profiler that writes one trace per rank, and the
layer stack of the FSDP2 and mesh models."""

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.profiler import ProfilerActivity


def emit(line: dict) -> None:
    """Prints one JSON line with a single write. Under ``PYTHONUNBUFFERED=1`` (set on
    many CI machines, ours included) ``print`` writes the text and its newline in two
    calls, and four ranks sharing torchrun's stdout then interleave (``{...}{...}`` and
    an empty line). One write of a few hundred bytes to a pipe is atomic (POSIX: up to
    ``PIPE_BUF`` bytes)."""
    os.write(sys.stdout.fileno(), (json.dumps(line) + "\n").encode())


def make_data(samples: int, features: int, classes: int, seed: int):
    """A learnable synthetic task: labels from a fixed random linear teacher."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=gen)
    teacher = torch.randn(features, classes, generator=gen)
    return x, (x @ teacher).argmax(dim=1)


def resident_batches(steps: int, batch: int, shards: int, shard: int, features: int,
                     classes: int, device):
    """Shard ``shard`` of ``shards``' batches of every step, on ``device`` before the
    loop (a resident data set: a copy from pageable host memory inside the loop would
    make the host wait for the device)."""
    x_all, y_all = make_data(batch * steps * shards, features, classes, seed=1)
    batches = []
    for step in range(steps):
        lo = (step * shards + shard) * batch
        batches.append((x_all[lo:lo + batch].to(device), y_all[lo:lo + batch].to(device)))
    return batches


def start_profiler(parser, args, rank: int):
    """With ``--trace-dir``: a started torch.profiler that skips one step when there
    are 5 or more, warms up one and records the rest, one trace per rank
    (``rank<r>.<time>.pt.trace.json``); ``None`` without."""
    if not args.trace_dir:
        return None
    if args.steps < 2:
        parser.error("--trace-dir needs --steps >= 2 (one warm-up step, then recorded)")
    wait = 1 if args.steps >= 5 else 0
    activities = [ProfilerActivity.CPU]
    if args.device == "neuron":
        activities.append(ProfilerActivity.PrivateUse1)
    profiler = torch.profiler.profile(
        activities=activities,
        schedule=torch.profiler.schedule(wait=wait, warmup=1, active=args.steps - 1 - wait,
                                         repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(
            args.trace_dir, worker_name=f"rank{rank}"
        ),
        record_shapes=True,
    )
    profiler.start()
    return profiler


def example_parser(doc: str, steps: int) -> argparse.ArgumentParser:
    """The options every example takes: ``--device``, ``--steps``, ``--batch``,
    ``--width`` and ``--trace-dir``."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--device", default="neuron", choices=["neuron", "cpu"])
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--trace-dir")
    return parser


def init(device_type: str):
    """The process group (``neuron``, or gloo on the CPU) and this rank's device
    (``neuron:<LOCAL_RANK>``): ``(rank, world size, device)``."""
    dist.init_process_group("neuron" if device_type == "neuron" else "gloo")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("neuron", local) if device_type == "neuron" else torch.device("cpu")
    return dist.get_rank(), dist.get_world_size(), device


class Stack(nn.Module):
    """An input layer, ``blocks`` in order, an output layer."""

    def __init__(self, features: int, width: int, classes: int, blocks):
        super().__init__()
        self.embed = nn.Linear(features, width)
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)
