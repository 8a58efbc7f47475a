"""Benchmarks of real PyTorch on the emulated neuron device (docs/PERFORMANCE.md, "PyTorch
on the emulated neuron device"); `scripts/bench-torch` runs it with the torch venv.

1. launch: the host cost of one small op, `torch.add` of two 16-float tensors, on
   `neuron` against the same op on the CPU. Rounds alternate cpu and neuron; each round
   times `--ops` adds (wall time and the thread's CPU time, per op) after a warm-up;
   the device is synchronized after the timed loop, outside it (the device keeps up:
   each add is far shorter on the modeled device than on the host, so no launch waits
   for a queue slot). For neuron it also gives the cut per op: what the trace's host
   clock leaves out — the emulation (numerics, timing model, recording inside cuts) and
   the thread's run delay (time it waited for a CPU, cut at runtime boundaries) — so
   "traced" = wall minus cut is what a trace shows an add costing the host.
2. profiler: one training step of `python/examples/train_gpt2.py`'s GPT-2 on neuron,
   without and with `torch.profiler` (CPU + PrivateUse1 activities, record_shapes,
   profile_memory: device activity recorded); rounds alternate the two, each times
   `--steps` steps after one warm-up step (the trace's processing when the profiler
   stops is not timed). Wall time and process CPU time per step.

Every figure is the median over `--rounds` rounds, all measured in this one run; the
ratios are of those medians. Prints one line per figure and a closing JSON line with the
figures and the machine's load average at the start and the end.

    PYTHONPATH=python target/torch-venv/bin/python scripts/bench_torch.py [--rounds 9]
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "examples"))
import neuronprof_torch  # noqa: E402
import train_gpt2  # noqa: E402


def sync(device):
    if device.type != "cpu":
        torch.accelerator.synchronize()


def launch_round(device, ops: int):
    """(wall ns, thread CPU ns, cut ns) per add over `ops` adds on `device`."""
    a = torch.ones(16, device=device)
    b = torch.full((16,), 2.0, device=device)
    for _ in range(200):
        torch.add(a, b)
    sync(device)
    cut0 = neuronprof_torch._C._cut_total_ns()
    wall0, cpu0 = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(ops):
        torch.add(a, b)
    wall, cpu = time.perf_counter_ns() - wall0, time.thread_time_ns() - cpu0
    cut = neuronprof_torch._C._cut_total_ns() - cut0
    sync(device)
    return wall / ops, cpu / ops, cut / ops


def profiler_round(step, batch, steps: int, profiled: bool):
    """(wall µs, process CPU µs) per training step."""
    step(batch)  # warm-up
    profiler = None
    if profiled:
        profiler = torch.profiler.profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
            record_shapes=True,
            profile_memory=True,
        )
        profiler.start()
    wall0, cpu0 = time.perf_counter_ns(), time.process_time_ns()
    for _ in range(steps):
        step(batch)
    wall, cpu = time.perf_counter_ns() - wall0, time.process_time_ns() - cpu0
    if profiler is not None:
        profiler.stop()
    return wall / steps / 1e3, cpu / steps / 1e3


def capi_loaded():
    """The libneuronprof_capi.so this process mapped."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith("libneuronprof_capi.so"):
                return line.split()[-1]
    return None


def median_of(rounds, index):
    return statistics.median(r[index] for r in rounds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--ops", type=int, default=5000, help="adds per launch round")
    parser.add_argument("--steps", type=int, default=3, help="GPT-2 steps per round")
    parser.add_argument("--only", choices=["launch", "profiler"], default=None)
    args = parser.parse_args()
    load_start = os.getloadavg()
    out = {
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "capi": capi_loaded(),
    }
    print(f"libneuronprof_capi.so: {out['capi']}", flush=True)
    neuron = torch.accelerator.current_accelerator()

    if args.only in (None, "launch"):
        rounds = {"cpu": [], "neuron": []}
        for _ in range(args.rounds):
            rounds["cpu"].append(launch_round(torch.device("cpu"), args.ops))
            rounds["neuron"].append(launch_round(neuron, args.ops))
        launch = {}
        for name, rs in rounds.items():
            launch[name] = {
                "wall_ns": median_of(rs, 0),
                "thread_cpu_ns": median_of(rs, 1),
                "cut_ns": median_of(rs, 2),
            }
        launch["neuron"]["traced_ns"] = statistics.median(w - c for w, _, c in rounds["neuron"])
        launch["wall_ratio"] = launch["neuron"]["wall_ns"] / launch["cpu"]["wall_ns"]
        launch["thread_cpu_ratio"] = (
            launch["neuron"]["thread_cpu_ns"] / launch["cpu"]["thread_cpu_ns"]
        )
        launch["traced_ratio"] = launch["neuron"]["traced_ns"] / launch["cpu"]["wall_ns"]
        out["launch"] = launch
        for name in ("cpu", "neuron"):
            f = launch[name]
            print(
                f"torch.add 16 floats on {name:6}: {f['wall_ns'] / 1e3:7.2f} us wall, "
                f"{f['thread_cpu_ns'] / 1e3:7.2f} us thread CPU"
                + (f", cut {f['cut_ns'] / 1e3:.2f} us, traced {f['traced_ns'] / 1e3:.2f} us"
                   if name == "neuron" else "")
                + " per op",
                flush=True,
            )
        print(
            f"neuron / cpu: wall x{launch['wall_ratio']:.2f}, thread CPU "
            f"x{launch['thread_cpu_ratio']:.2f}, traced (wall - cut) x{launch['traced_ratio']:.2f}",
            flush=True,
        )

    if args.only in (None, "profiler"):
        _, step = train_gpt2.setup(neuron)
        batch = train_gpt2.batches(1)[0]
        rounds = {"unprofiled": [], "profiled": []}
        for _ in range(args.rounds):
            rounds["unprofiled"].append(profiler_round(step, batch, args.steps, False))
            rounds["profiled"].append(profiler_round(step, batch, args.steps, True))
        prof = {
            name: {"wall_us": median_of(rs, 0), "process_cpu_us": median_of(rs, 1)}
            for name, rs in rounds.items()
        }
        prof["wall_ratio"] = prof["profiled"]["wall_us"] / prof["unprofiled"]["wall_us"]
        prof["process_cpu_ratio"] = (
            prof["profiled"]["process_cpu_us"] / prof["unprofiled"]["process_cpu_us"]
        )
        out["profiler"] = prof
        for name in ("unprofiled", "profiled"):
            f = prof[name]
            print(
                f"GPT-2 step on neuron, {name:10}: {f['wall_us'] / 1e3:8.1f} ms wall, "
                f"{f['process_cpu_us'] / 1e3:8.1f} ms process CPU",
                flush=True,
            )
        print(
            f"profiled / unprofiled: wall x{prof['wall_ratio']:.3f}, process CPU "
            f"x{prof['process_cpu_ratio']:.3f}",
            flush=True,
        )

    out["loadavg_start"] = load_start
    out["loadavg_end"] = os.getloadavg()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
