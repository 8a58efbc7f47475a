"""Fully sharded data-parallel training (FSDP2, ``fully_shard``) under torch.profiler, one
process per rank, run by torchrun:

    torchrun --nproc_per_node 4 python/examples/train_fsdp.py --trace-dir traces/fsdp
    torchrun --nproc_per_node 4 python/examples/train_fsdp.py --device cpu   # gloo

Plain PyTorch plus ``import neuronprof_torch``: on ``neuron`` the process group is
``init_process_group("neuron")`` and each rank trains on ``neuron:<LOCAL_RANK>``; on
the CPU it is gloo. Every block of the model and then the model itself is
``fully_shard``-ed over the 1-D mesh of all ranks, so each rank keeps a quarter of every
parameter: before a block runs forward (and again in backward, as the parameters are
resharded after forward) FSDP2 all-gathers its parameters on its all-gather stream
(``ncclKernel_AllGather_*`` rows), and after its backward it reduce-scatters the
gradients on its reduce-scatter stream (``ncclKernel_ReduceScatter_*``), averaged over
the ranks. After the loop every rank prints one JSON line per step (``{"rank", "step",
"loss"}``), and with ``--trace-dir`` the trace handler writes one trace per rank
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
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.profiler import ProfilerActivity

import neuronprof_torch  # noqa: F401  (the `neuron` device and its c10d backend)


def emit(line: dict) -> None:
    """One JSON line in a single write (four ranks share torchrun's stdout; see
    train_ddp.py)."""
    os.write(sys.stdout.fileno(), (json.dumps(line) + "\n").encode())


def make_data(samples: int, features: int, classes: int, seed: int):
    """A learnable synthetic task: labels from a fixed random linear teacher."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=gen)
    teacher = torch.randn(features, classes, generator=gen)
    return x, (x @ teacher).argmax(dim=1)


class Block(nn.Module):
    """A residual MLP block: FSDP2's unit of all-gather and reduce-scatter."""

    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, width * 2)
        self.down = nn.Linear(width * 2, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Model(nn.Module):
    def __init__(self, features: int, width: int, classes: int, blocks: int):
        super().__init__()
        self.embed = nn.Linear(features, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(blocks))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="neuron", choices=["neuron", "cpu"])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--trace-dir")
    args = parser.parse_args()

    dist.init_process_group("neuron" if args.device == "neuron" else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(args.device, local) if args.device == "neuron" else torch.device("cpu")
    mesh = init_device_mesh(args.device, (world,), mesh_dim_names=("dp",))

    features, classes = 32, 10
    # The same initial weights on every rank and device (made on the CPU, then moved):
    # fully_shard keeps this rank's shard of each.
    torch.manual_seed(0)
    model = Model(features, args.width, classes, args.blocks).to(device)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    x_all, y_all = make_data(args.batch * args.steps * world, features, classes, seed=1)
    batches = []
    for step in range(args.steps):
        lo = (step * world + rank) * args.batch
        batches.append((x_all[lo:lo + args.batch].to(device), y_all[lo:lo + args.batch].to(device)))

    profiler = None
    if args.trace_dir:
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
    losses = []
    for step in range(args.steps):
        x, y = batches[step]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())  # read after the loop: no host wait per step
        if profiler is not None:
            profiler.step()
    if profiler is not None:
        profiler.stop()
    for step, loss in enumerate(losses):
        emit({"rank": rank, "step": step, "loss": loss.item()})
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
