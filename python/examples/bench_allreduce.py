"""Host cost of one all_reduce: the `neuron` backend on neuron tensors against gloo on
CPU tensors, in one process group ("cpu:gloo,neuron:neuron"), small and large messages.
Run by torchrun (docs/PERFORMANCE.md):

    torchrun --nproc_per_node 2 python/examples/bench_allreduce.py [--rounds 5]

Rank 0 prints one JSON line per message size: the median over `--rounds` rounds
(each times `calls` calls on gloo, then on neuron) of the real (wall-clock, not cut)
time per call on each backend, and their ratio. `neuron` adds to
gloo's exchange the control exchange of the ready instants and the timing model.
"""

import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist

import neuronprof_torch  # noqa: F401


def per_call_us(tensor, calls):
    dist.barrier()
    start = time.perf_counter()
    for _ in range(calls):
        dist.all_reduce(tensor)
    if tensor.device.type == "neuron":
        torch.neuron.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    dist.init_process_group("cpu:gloo,neuron:neuron")
    rank = dist.get_rank()
    device = torch.device("neuron", rank)
    for elements, calls in [(256, 200), (4 << 20, 5)]:
        samples = {"gloo": [], "neuron": []}
        for _ in range(args.rounds):
            samples["gloo"].append(per_call_us(torch.ones(elements), calls))
            samples["neuron"].append(per_call_us(torch.ones(elements, device=device), calls))
        if rank == 0:
            gloo, neuron = (statistics.median(samples[k]) for k in ("gloo", "neuron"))
            print(json.dumps({"bytes": elements * 4, "calls": calls, "rounds": args.rounds,
                              "gloo_us": round(gloo, 1),
                              "neuron_us": round(neuron, 1), "ratio": round(neuron / gloo, 2)}),
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
