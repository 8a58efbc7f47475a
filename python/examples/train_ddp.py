"""Data-parallel training with DistributedDataParallel under torch.profiler, one process
per rank, run by torchrun:

    torchrun --nproc_per_node 4 python/examples/train_ddp.py --trace-dir traces/ddp
    torchrun --nproc_per_node 4 python/examples/train_ddp.py --device cpu   # gloo

Plain PyTorch plus ``import neuronprof_torch``: on ``neuron`` the process group is
``init_process_group("neuron")`` and each rank trains on ``neuron:<LOCAL_RANK>``; on
the CPU it is gloo. Every rank prints one JSON line per step (``{"rank", "step",
"loss"}``: its local loss, and ``"mean"``, the all-reduced mean over the ranks, on rank
0), and with ``--trace-dir`` the trace handler writes one trace per rank
(``rank<r>.<time>.pt.trace.json``). Same seeds and data on both devices, so the losses
are equal.
"""

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity

import neuronprof_torch  # noqa: F401  (the `neuron` device and its c10d backend)


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


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="neuron", choices=["neuron", "cpu"])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--trace-dir")
    parser.add_argument("--bucket-mb", type=float, default=0.01,
                        help="DDP bucket size (small: several all-reduces per step)")
    args = parser.parse_args()

    dist.init_process_group("neuron" if args.device == "neuron" else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(args.device, local) if args.device == "neuron" else torch.device("cpu")

    torch.manual_seed(0)
    features, classes = args.width, 10
    model = nn.Sequential(
        nn.Linear(features, args.width * 2),
        nn.GELU(),
        nn.Linear(args.width * 2, args.width * 2),
        nn.ReLU(),
        nn.Linear(args.width * 2, classes),
    ).to(device)
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x_all, y_all = make_data(args.batch * args.steps * world, features, classes, seed=1)

    profiler = None
    if args.trace_dir:
        activities = [ProfilerActivity.CPU]
        if args.device == "neuron":
            activities.append(ProfilerActivity.PrivateUse1)
        profiler = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=args.steps - 2, repeat=1),
            on_trace_ready=torch.profiler.tensorboard_trace_handler(
                args.trace_dir, worker_name=f"rank{rank}"
            ),
            record_shapes=True,
        )
        profiler.start()
    for step in range(args.steps):
        lo = (step * world + rank) * args.batch
        x = x_all[lo:lo + args.batch].to(device)
        y = y_all[lo:lo + args.batch].to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # a sum (gloo has no AVG)
        mean /= world
        line = {"rank": rank, "step": step, "loss": loss.item()}
        if rank == 0:
            line["mean"] = mean.item()
        emit(line)
        if profiler is not None:
            profiler.step()
    if profiler is not None:
        profiler.stop()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
