"""Step time of the example MLP (train_mlp.py's model, batch 64, AdamW) on the CPU, on
the emulated neuron device, and on neuron under torch.profiler (CPU + PrivateUse1
activities, profile_memory, every step recorded; the trace's processing at the end is
not timed). Rounds alternate between the configurations; each round times `--steps`
steps after `--warmup` steps; the figure is the median over rounds of the mean process
CPU time per step, in µs.

    PYTHONPATH=python python python/examples/bench_steps.py --rounds 7
"""

import argparse
import json
import statistics
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity

import neuronprof_torch  # noqa: F401


def setup(device: str):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    x = torch.randn(64, 64).to(device)
    y = torch.randint(0, 10, (64,)).to(device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def time_steps(step, steps: int) -> float:
    # CPU time of the whole process (the autograd thread included): on a machine shared
    # with other work it varies far less than wall time, and the emulated device's
    # waits are almost never taken (its kernels end before the host's next op).
    start = time.process_time_ns()
    for _ in range(steps):
        step()
    return (time.process_time_ns() - start) / steps / 1e3


def round_of(config: str, warmup: int, steps: int) -> float:
    device = "cpu" if config == "cpu" else "neuron"
    step = setup(device)
    for _ in range(warmup):
        step()
    if not config.startswith("neuron, profiled"):
        return time_steps(step, steps)
    activities = [ProfilerActivity.CPU]
    if config == "neuron, profiled":
        activities.append(ProfilerActivity.PrivateUse1)
    with torch.profiler.profile(activities=activities, profile_memory=True):
        return time_steps(step, steps)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    configs = ["cpu", "neuron", "neuron, profiled cpu", "neuron, profiled"]
    per_round = {c: [] for c in configs}
    for _ in range(args.rounds):
        for config in configs:
            per_round[config].append(round_of(config, args.warmup, args.steps))
    medians = {c: statistics.median(v) for c, v in per_round.items()}
    for config in configs:
        print(f"{config:20} {medians[config]:9.1f} us CPU/step  "
              f"x{medians[config] / medians['cpu']:.2f} vs cpu")
    overhead = medians["neuron, profiled"] / medians["neuron"] - 1
    plugin = medians["neuron, profiled"] / medians["neuron, profiled cpu"] - 1
    print(f"profiling overhead on neuron: {100 * overhead:+.1f} %, of which the device "
          f"activity (plugin + recording) {100 * plugin:+.1f} % over a CPU-only profile")
    print(json.dumps({"median_us_per_step": medians, "rounds": per_round}))


if __name__ == "__main__":
    main()
