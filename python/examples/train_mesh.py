"""Tensor parallel x data parallel on a 2 x 2 device mesh under torch.profiler, one process
per rank, run by torchrun:

    torchrun --nproc_per_node 4 python/examples/train_mesh.py --trace-dir traces/mesh
    torchrun --nproc_per_node 4 python/examples/train_mesh.py --device cpu   # gloo

Plain PyTorch plus ``import neuronprof_torch``. ``init_device_mesh(device, (2, 2),
mesh_dim_names=("dp", "tp"))`` makes the mesh [[0, 1], [2, 3]]: ranks 0 and 1 (and 2
and 3) are one tensor-parallel group, ranks 0 and 2 (and 1 and 3) one data-parallel
group, each a process group of its own. The MLP blocks are tensor parallel over
``tp`` (``parallelize_module``: the first linear layer ``ColwiseParallel``, the second
``RowwiseParallel``, whose partial sums DTensor all-reduces over ``tp`` in forward; in
backward the column-parallel layer's input gradient is all-reduced over ``tp`` too).
Both ranks of a tp group train on the same batch (their dp rank's); after backward
each rank all-reduces its local gradient shards over ``dp`` and divides by the dp
size (data parallelism by hand, as DDP does it, on DTensor's local tensors). After the
loop every rank prints one JSON line per step (``{"rank", "step", "loss"}``), and with
``--trace-dir`` the trace handler writes one trace per rank
(``rank<r>.<time>.pt.trace.json``), in which the all-reduces of the two groups carry
their own ``Process Group Name``/``Ranks``. Same seeds and data on both devices, so the
losses are equal.
"""


import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)

import neuronprof_torch  # noqa: F401  (the `neuron` device and its c10d backend)
from dist_common import Stack, emit, example_parser, init, resident_batches, start_profiler


class Block(nn.Module):
    """A residual MLP block; ``up`` and ``down`` are split over the tp group."""

    def __init__(self, width: int):
        super().__init__()
        self.up = nn.Linear(width, width * 4)
        self.down = nn.Linear(width * 4, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


def main():
    parser = example_parser(__doc__, steps=6)
    parser.add_argument("--blocks", type=int, default=2)
    args = parser.parse_args()

    rank, world, device = init(args.device)
    if world != 4:
        parser.error(f"the mesh is 2 x 2: run 4 ranks, not {world}")
    mesh = init_device_mesh(args.device, (2, 2), mesh_dim_names=("dp", "tp"))
    dp_group = mesh.get_group("dp")
    dp_rank, dp_size = mesh.get_local_rank("dp"), mesh["dp"].size()

    features, classes = 32, 10
    torch.manual_seed(0)
    blocks = [Block(args.width) for _ in range(args.blocks)]
    model = Stack(features, args.width, classes, blocks).to(device)
    for block in model.blocks:
        parallelize_module(block, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
    # One tensor at a time: the parameters mix DTensors (the tp layers) and plain tensors,
    # which the _foreach_ kernels (SGD's default on neuron, not on the CPU) refuse.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=False)
    loss_fn = nn.CrossEntropyLoss()
    batches = resident_batches(args.steps, args.batch, dp_size, dp_rank, features,
                               classes, device)

    profiler = start_profiler(parser, args, rank)
    losses = []
    for step in range(args.steps):
        x, y = batches[step]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        # Data parallelism over dp: every gradient (a DTensor's local shard for the
        # tensor-parallel layers) summed over the dp group, then averaged.
        for param in model.parameters():
            grad = param.grad
            local_grad = grad.to_local() if hasattr(grad, "to_local") else grad
            dist.all_reduce(local_grad, group=dp_group)
            local_grad /= dp_size
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
