#!/usr/bin/env python3
"""Measures eager PyTorch's host cost per op on the CPU: the calibration of
neuron-backend's `HostCost` (what an op costs the host in the built-in workloads).

Run with the project's torch venv (torch 2.15):

    target/torch-venv/bin/python scripts/host_cost_reference.py [--repeats 7]

Every op runs on 1-element (or 2x2) tensors on one CPU thread, so the CPU kernel's own
arithmetic is a few nanoseconds and what is left is PyTorch's host path: the Python
call, the dispatcher, autograd's graph recording, the output allocation and the
kernel call. Each figure is the median over `--repeats` rounds of the mean over a
loop of ops, in the thread's CPU time (time.thread_time_ns), so that other load on the
machine does not count. Prints one JSON object (ns per op) and the environment.

Classes (the names `HostCost` uses):
- forward_op_ns: an op on tensors that require grad (Python -> dispatcher -> autograd
  node -> kernel), the forward of a training step;
- plain_op_ns: the same op under torch.no_grad() (optimizer updates, inference);
- backward_node_ns, backward_op_ns: the autograd engine's backward (C++, no Python).
  loss.backward() over a chain of n one-op nodes (y = y * x, x constant) costs n
  times (node + op); over a chain y = y * w with w requiring grad each node runs one
  more op and the engine accumulates w's gradient (one more op), so the difference
  per node is two ops: backward_op_ns = difference / 2, backward_node_ns = the
  one-op chain's cost per node minus one op;
- view_op_ns: a view (Tensor.view) of a tensor that requires grad;
- collective_ns: torch.distributed.all_reduce on a 1-rank gloo group (the c10d call
  path, Work object included; the data movement of one rank is nothing).
"""

import argparse
import json
import os
import platform
import statistics
import tempfile
import time

import torch


def per_op_ns(body, ops, rounds):
    """Median over rounds of (seconds of body() / ops), in ns."""
    samples = []
    for _ in range(rounds):
        start = time.thread_time_ns()
        body()
        samples.append((time.thread_time_ns() - start) / ops)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ops", type=int, default=20000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n = args.ops
    x = torch.ones(1)
    w = torch.ones(1, requires_grad=True)
    m = torch.ones(2, 2)
    mw = torch.ones(2, 2, requires_grad=True)

    def forward_chain():
        y = w
        for _ in range(n):
            y = y * x
        return y

    def forward_ops():
        forward_chain()

    def plain_ops():
        with torch.no_grad():
            y = x
            for _ in range(n):
                y = y * x

    def forward_mm():
        y = mw
        for _ in range(n):
            y = torch.mm(y, m)

    def views():
        y = mw
        for _ in range(n // 2):
            y = y.view(4)
            y = y.view(2, 2)

    # Warm up every path (first calls allocate caches and load kernels).
    for body in (forward_ops, plain_ops, forward_mm, views):
        body()

    def chain_with_weight():
        y = w
        for _ in range(n):
            y = y * w
        return y

    # Backward: time only loss.backward() over a chain of n nodes built beforehand.
    def backward_ns(chain):
        samples = []
        for _ in range(args.repeats):
            y = chain().sum()
            start = time.thread_time_ns()
            y.backward()
            samples.append((time.thread_time_ns() - start) / (n + 1))
            w.grad = None
        return statistics.median(samples)

    result = {
        "forward_op_ns": per_op_ns(forward_ops, n, args.repeats),
        "forward_mm_ns": per_op_ns(forward_mm, n, args.repeats),
        "plain_op_ns": per_op_ns(plain_ops, n, args.repeats),
        "backward_one_op_node_ns": backward_ns(forward_chain),
        "backward_two_op_node_ns": backward_ns(chain_with_weight),
        "view_op_ns": per_op_ns(views, n, args.repeats),
    }

    import torch.distributed as dist

    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group(
            "gloo", init_method=f"file://{tmp}/store", rank=0, world_size=1
        )
        t = torch.ones(1)
        calls = max(n // 10, 100)

        def collectives():
            for _ in range(calls):
                dist.all_reduce(t)

        collectives()
        result["collective_ns"] = per_op_ns(collectives, calls, args.repeats)
        dist.destroy_process_group()

    two_ops = result["backward_two_op_node_ns"] - result["backward_one_op_node_ns"]
    result["backward_op_ns"] = max(two_ops / 2, 0)
    result["backward_node_ns"] = result["backward_one_op_node_ns"] - result["backward_op_ns"]
    result = {k: round(v) for k, v in result.items()}
    result["environment"] = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "ops_per_round": n,
        "rounds": args.repeats,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
