"""Data-parallel training with DistributedDataParallel under torch.profiler, one process
per rank, run by torchrun:

    torchrun --nproc_per_node 4 python/examples/train_ddp.py --trace-dir traces/ddp
    torchrun --nproc_per_node 4 python/examples/train_ddp.py --device cpu   # gloo
    NEURONPROF_STRAGGLER=2:2 NEURONPROF_DEVICE_PROFILE=trn2-lnc1 torchrun \
        --nproc_per_node 4 python/examples/train_ddp.py --trace-dir traces/slow \
        --width 2048 --batch 4096 --steps 5 --bucket-mb 1000   # device-bound: a straggler

Plain PyTorch plus ``import neuronprof_torch``: on ``neuron`` the process group is
``init_process_group("neuron")`` and each rank trains on ``neuron:<LOCAL_RANK>``; on
the CPU it is gloo. After the loop every rank prints one JSON line per step (``{"rank",
"step", "loss"}``: its local loss, and ``"mean"``, the all-reduced mean over the ranks, on rank
0), and with ``--trace-dir`` the trace handler writes one trace per rank
(``rank<r>.<time>.pt.trace.json``). Same seeds and data on both devices, so the losses
are equal.

The default shape is small and *host-bound*: each step's device work (~0.2 ms) is far
below the host's Python and launch time per step (several ms), so the collectives start
when the slowest *host* issues them, and a slower device (``NEURONPROF_STRAGGLER``)
changes no arrival. A straggler shows only when the device is the bottleneck: with
``--width 2048 --batch 4096`` a step is ~620 GFLOP of FP32 matmuls, about 35 ms of
TensorE time on one trn2 physical core (``trn2-lnc1``), and the loop never waits for
the device (the losses are read after it), so the big layers' gradient buckets are
ready when the device has produced them rather than when the host issued them, and
rank 2 at half speed arrives last: ``neuronprof analyze`` names it and the time the
others waited. Its cost is the numerics on the CPU: about 7 CPU seconds per rank and
step, so use few steps (the profiler waits one
step when there are 5 or more, warms up one, and records the rest).
"""


import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import neuronprof_torch  # noqa: F401  (the `neuron` device and its c10d backend)
from dist_common import emit, example_parser, init, resident_batches, start_profiler


def main():
    parser = example_parser(__doc__, steps=8)
    parser.add_argument("--bucket-mb", type=float, default=0.01,
                        help="DDP bucket size (small: several all-reduces per step)")
    args = parser.parse_args()

    rank, world, device = init(args.device)

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
    batches = resident_batches(args.steps, args.batch, world, rank, features,
                               classes, device)

    profiler = start_profiler(parser, args, rank)
    losses = []
    for step in range(args.steps):
        x, y = batches[step]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        optimizer.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # a sum (gloo has no AVG)
        mean /= world
        # No `.item()` in the loop: the host does not wait for the device each step.
        losses.append((loss.detach(), mean))
        if profiler is not None:
            profiler.step()
    if profiler is not None:
        profiler.stop()
    for step, (loss, mean) in enumerate(losses):
        line = {"rank": rank, "step": step, "loss": loss.item()}
        if rank == 0:
            line["mean"] = mean.item()
        emit(line)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
