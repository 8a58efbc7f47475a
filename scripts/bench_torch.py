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

3. compile: `torch.compile(backend="neuron")` of `python/examples/train_block.py`'s
   2-layer transformer block (training: forward and backward graphs). Each round starts
   two fresh processes on one new compile-cache folder: the first compiles (a cold
   cache), the second hits the cache. Each times its first training step (Dynamo's and
   AOTAutograd's tracing, the backend's compile or cache read, the step itself) and
   reports the backend's own share (`compile.stats()["compile_ns"]`); the first then
   times `--steps` steady steps of the compiled model and of the eager one, alternating,
   `--compile-rounds` times: wall, thread CPU and "traced" host time (wall minus the
   cut, what the trace shows the host spending) per training step and per forward call.

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


def timed(fn):
    """(result, wall ns, thread CPU ns, cut ns) of one call of `fn`."""
    cut0 = neuronprof_torch._C._cut_total_ns()
    wall0, cpu0 = time.perf_counter_ns(), time.thread_time_ns()
    out = fn()
    wall, cpu = time.perf_counter_ns() - wall0, time.thread_time_ns() - cpu0
    return out, wall, cpu, neuronprof_torch._C._cut_total_ns() - cut0


def compile_child(steps: int, rounds: int):
    """One process of the compile benchmark (`--compile-child`): its first compiled
    step, and with `rounds` > 0 the steady steps of the compiled and the eager model."""
    import neuronprof_torch.compile as ncompile
    import train_block

    def step_of(model, step_fn):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        x, t = train_block.data()

        def forward():
            optimizer.zero_grad(set_to_none=True)
            return step_fn(x, t)

        def step():
            loss = forward()
            loss.backward()
            optimizer.step()
            return loss

        return forward, step

    model = train_block.fresh_model()
    compiled = torch.compile(model, backend="neuron")
    c_forward, c_step = step_of(model, compiled)
    _, wall, cpu, cut = timed(lambda: (c_step(), torch.neuron.synchronize()))
    stats = ncompile.stats()
    out = {
        "first_step_ms": wall / 1e6,
        "first_step_thread_cpu_ms": cpu / 1e6,
        "backend_compile_ms": stats["compile_ns"] / 1e6,
        "cache_hits": stats["cache_hits"],
        "cache_misses": stats["cache_misses"],
    }
    if rounds:
        eager = train_block.fresh_model()
        e_forward, e_step = step_of(eager, eager)
        e_step()
        torch.neuron.synchronize()
        per = {"compiled": [], "eager": []}
        for _ in range(rounds):
            for name, (forward, step) in (
                ("compiled", (c_forward, c_step)),
                ("eager", (e_forward, e_step)),
            ):
                fwd = [timed(forward)[1:] for _ in range(steps)]
                torch.neuron.synchronize()
                full = [timed(step)[1:] for _ in range(steps)]
                torch.neuron.synchronize()
                per[name].append(
                    {
                        "forward_wall_us": statistics.median(f[0] for f in fwd) / 1e3,
                        "forward_traced_us": statistics.median(f[0] - f[2] for f in fwd) / 1e3,
                        "step_wall_us": statistics.median(f[0] for f in full) / 1e3,
                        "step_thread_cpu_us": statistics.median(f[1] for f in full) / 1e3,
                        "step_traced_us": statistics.median(f[0] - f[2] for f in full) / 1e3,
                    }
                )
        out["steady"] = {
            name: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
            for name, rs in per.items()
        }
    print("CHILD " + json.dumps(out), flush=True)


def run_child(cache: str, steps: int, rounds: int) -> dict:
    import subprocess

    env = dict(os.environ, NEURONPROF_COMPILE_CACHE=cache)
    command = [sys.executable, __file__, "--compile-child", "--steps", str(steps)]
    command += ["--compile-rounds", str(rounds)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    line = next((l for l in done.stdout.splitlines() if l.startswith("CHILD ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"compile benchmark child failed ({done.returncode}):\n{done.stderr}")
    return json.loads(line[len("CHILD "):])


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
    parser.add_argument("--only", choices=["launch", "profiler", "compile"], default=None)
    parser.add_argument(
        "--compile-rounds", type=int, default=5, help="steady-step rounds of the compile benchmark"
    )
    parser.add_argument("--compile-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compile_child:
        compile_child(args.steps, args.compile_rounds)
        return
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

    if args.only == "compile" or args.only is None:
        import tempfile

        cold, hit, steady = [], [], []
        for i in range(args.rounds):
            with tempfile.TemporaryDirectory(prefix="bench-compile-") as cache:
                first = run_child(cache, args.steps, args.compile_rounds if i == 0 else 0)
                again = run_child(cache, args.steps, 0)
            if first["cache_misses"] == 0 or again["cache_misses"] != 0:
                raise SystemExit(f"the cache did not behave: {first} {again}")
            cold.append(first)
            hit.append(again)
            if "steady" in first:
                steady.append(first["steady"])
        def medians(runs):
            keys = [k for k in runs[0] if k != "steady"]
            return {k: statistics.median(r[k] for r in runs) for k in keys}

        comp = {"cold": medians(cold), "cache_hit": medians(hit), "steady": steady[0]}
        s = comp["steady"]
        comp["forward_traced_ratio"] = (
            s["compiled"]["forward_traced_us"] / s["eager"]["forward_traced_us"]
        )
        comp["step_traced_ratio"] = s["compiled"]["step_traced_us"] / s["eager"]["step_traced_us"]
        out["compile"] = comp
        for name in ("cold", "cache_hit"):
            f = comp[name]
            print(
                f"first compiled step, {name:9}: {f['first_step_ms']:8.1f} ms wall, "
                f"of which the neuron backend {f['backend_compile_ms']:6.1f} ms "
                f"(hits {f['cache_hits']:.0f}, misses {f['cache_misses']:.0f})",
                flush=True,
            )
        for name in ("eager", "compiled"):
            f = s[name]
            print(
                f"steady step, {name:8}: forward {f['forward_wall_us']:8.1f} us wall "
                f"{f['forward_traced_us']:8.1f} us traced; step {f['step_wall_us']:8.1f} us "
                f"wall {f['step_thread_cpu_us']:8.1f} us thread CPU "
                f"{f['step_traced_us']:8.1f} us traced",
                flush=True,
            )
        print(
            f"compiled / eager host time (traced): forward x{comp['forward_traced_ratio']:.3f}, "
            f"step x{comp['step_traced_ratio']:.3f}",
            flush=True,
        )

    out["loadavg_start"] = load_start
    out["loadavg_end"] = os.getloadavg()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
