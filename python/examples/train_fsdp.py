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


import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import neuronprof_torch  # noqa: F401  (the `neuron` device and its c10d backend)
from dist_common import Stack, emit, example_parser, init, resident_batches, start_profiler


class Block(nn.Module):
    """A residual MLP block: FSDP2's unit of all-gather and reduce-scatter."""

    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, width * 2)
        self.down = nn.Linear(width * 2, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def main():
    parser = example_parser(__doc__, steps=6)
    parser.add_argument("--blocks", type=int, default=3)
    args = parser.parse_args()

    rank, world, device = init(args.device)
    mesh = init_device_mesh(args.device, (world,), mesh_dim_names=("dp",))

    features, classes = 32, 10
    # The same initial weights on every rank and device (made on the CPU, then moved):
    # fully_shard keeps this rank's shard of each.
    torch.manual_seed(0)
    blocks = [Block(args.width) for _ in range(args.blocks)]
    model = Stack(features, args.width, classes, blocks).to(device)
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    batches = resident_batches(args.steps, args.batch, world, rank, features,
                               classes, device)

    profiler = start_profiler(parser, args, rank)
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
