"""Driver of tests/torch_distributed.rs, one process per rank (torchrun): every
collective of the c10d backend `neuron` on neuron tensors, checked against the values
each rank can compute itself from every rank's inputs; subgroups; send/recv and
batch_isend_irecv; async work handles; then a profiled window of collectives whose
trace the Rust test reads (one per rank).

Usage: torchrun --nproc_per_node 4 torch_dist_driver.py OUT_DIR
Each rank writes OUT_DIR/rank<r>.json: {"checks": [...names...], "failures": [...],
"queue": collective stream, "completed_before_wait": bool, ...} and its trace into
OUT_DIR/traces.
"""

import json
import os
import sys
import traceback

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity

import neuronprof_torch  # noqa: F401

OUT = sys.argv[1]
dist.init_process_group("neuron")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
DEV = torch.device("neuron", int(os.environ["LOCAL_RANK"]))
checks, failures = [], []


def check(name, got, want, exact=True):
    got = got.to("cpu") if isinstance(got, torch.Tensor) else got
    try:
        if isinstance(want, torch.Tensor):
            ok = (torch.equal(got, want) if exact
                  else torch.allclose(got, want, rtol=1e-6, atol=1e-6))
        else:
            ok = got == want
    except Exception as e:  # noqa: BLE001
        ok, got = False, f"{got} ({e})"
    checks.append(name)
    if not ok:
        failures.append(f"rank {RANK}: {name}: got {got}, want {want}")


def inp(r, n=6, dtype=torch.float32):
    """Rank r's input: distinct on every rank and element."""
    return (torch.arange(n, dtype=torch.float64) * 0.5 + r * 10 + 1).to(dtype)


def every(n=6, dtype=torch.float32):
    return [inp(r, n, dtype) for r in range(WORLD)]


def run_all():
    # all_reduce with each reduction
    for op, fold in [
        (dist.ReduceOp.SUM, lambda xs: sum(xs[1:], xs[0].clone())),
        (dist.ReduceOp.AVG, lambda xs: sum(xs[1:], xs[0].clone()) / WORLD),
        (dist.ReduceOp.MAX, lambda xs: torch.stack(xs).max(0).values),
        (dist.ReduceOp.MIN, lambda xs: torch.stack(xs).min(0).values),
        (dist.ReduceOp.PRODUCT, lambda xs: torch.stack(xs).prod(0)),
    ]:
        t = inp(RANK).to(DEV)
        dist.all_reduce(t, op=op)
        check(f"all_reduce {op}", t, fold(every()), exact=op != dist.ReduceOp.AVG)
    for dtype in (torch.int64, torch.bfloat16):
        t = inp(RANK, dtype=dtype).to(DEV)
        dist.all_reduce(t)
        acc = every(dtype=dtype)
        want = acc[0].clone()
        for x in acc[1:]:
            want = want + x
        check(f"all_reduce {dtype}", t, want, exact=dtype == torch.int64)
    # broadcast, reduce
    t = inp(RANK).to(DEV)
    dist.broadcast(t, src=1)
    check("broadcast", t, inp(1))
    t = inp(RANK).to(DEV)
    dist.reduce(t, dst=3)
    if RANK == 3:
        check("reduce", t, sum(every()[1:], every()[0].clone()))
    # scatter and gather, rooted at rank 2
    out = torch.empty(6, device=DEV)
    dist.scatter(out, [inp(r).to(DEV) for r in range(WORLD)] if RANK == 2 else None, src=2)
    check("scatter", out, inp(RANK))
    outs = [torch.empty(6, device=DEV) for _ in range(WORLD)] if RANK == 2 else None
    dist.gather(inp(RANK).to(DEV), outs, dst=2)
    if RANK == 2:
        for r in range(WORLD):
            check(f"gather [{r}]", outs[r], inp(r))
    # all_gather (list), all_gather_into_tensor
    outs = [torch.empty(6, device=DEV) for _ in range(WORLD)]
    dist.all_gather(outs, inp(RANK).to(DEV))
    for r in range(WORLD):
        check(f"all_gather [{r}]", outs[r], inp(r))
    out = torch.empty(WORLD * 6, device=DEV)
    dist.all_gather_into_tensor(out, inp(RANK).to(DEV))
    check("all_gather_into_tensor", out, torch.cat(every()))
    # reduce_scatter_tensor (sum, avg), reduce_scatter (list)
    big = [inp(r, 6 * WORLD) for r in range(WORLD)]
    total = sum(big[1:], big[0].clone())
    for op, scale in [(dist.ReduceOp.SUM, 1), (dist.ReduceOp.AVG, WORLD)]:
        out = torch.empty(6, device=DEV)
        dist.reduce_scatter_tensor(out, inp(RANK, 6 * WORLD).to(DEV), op=op)
        check(f"reduce_scatter_tensor {op}", out, total[RANK * 6:(RANK + 1) * 6] / scale,
              exact=scale == 1)
    out = torch.empty(6, device=DEV)
    dist.reduce_scatter(out, list(inp(RANK, 6 * WORLD).to(DEV).chunk(WORLD)))
    check("reduce_scatter (list)", out, total[RANK * 6:(RANK + 1) * 6])
    # all_to_all_single: equal and uneven splits
    src = inp(RANK, 2 * WORLD).to(DEV)
    out = torch.empty(2 * WORLD, device=DEV)
    dist.all_to_all_single(out, src)
    check("all_to_all_single", out,
          torch.cat([inp(r, 2 * WORLD)[RANK * 2:RANK * 2 + 2] for r in range(WORLD)]))
    # rank r sends (j + 1) elements to rank j
    src = inp(RANK, sum(j + 1 for j in range(WORLD))).to(DEV)
    out = torch.empty(WORLD * (RANK + 1), device=DEV)
    dist.all_to_all_single(out, src, output_split_sizes=[RANK + 1] * WORLD,
                           input_split_sizes=[j + 1 for j in range(WORLD)])
    start = sum(j + 1 for j in range(RANK))
    check("all_to_all_single uneven", out,
          torch.cat([inp(r, sum(j + 1 for j in range(WORLD)))[start:start + RANK + 1]
                     for r in range(WORLD)]))
    dist.barrier()
    checks.append("barrier")
    # send/recv: evens send first
    right, left = (RANK + 1) % WORLD, (RANK - 1) % WORLD
    got = torch.empty(6, device=DEV)
    if RANK % 2 == 0:
        dist.send(inp(RANK).to(DEV), dst=right)
        dist.recv(got, src=left)
    else:
        dist.recv(got, src=left)
        dist.send(inp(RANK).to(DEV), dst=right)
    check("send/recv", got, inp(left))
    got = torch.empty(6, device=DEV)
    reqs = dist.batch_isend_irecv([
        dist.P2POp(dist.isend, inp(RANK).to(DEV), right),
        dist.P2POp(dist.irecv, got, left),
    ])
    for r in reqs:
        r.wait()
    check("batch_isend_irecv", got, inp(left))
    # async work handle and its future
    t = inp(RANK).to(DEV)
    work = dist.all_reduce(t, async_op=True)
    check("is_completed is a bool", isinstance(work.is_completed(), bool), True)
    work.wait()
    fut = dist.all_reduce(t, async_op=True).get_future()
    value = fut.wait()
    check("future value", value[0], sum(every()[1:], every()[0].clone()) * WORLD)
    torch.neuron.synchronize()
    check("is_completed after synchronize", work.is_completed(), True)
    # subgroups: evens and odds
    evens, odds = dist.new_group([0, 2]), dist.new_group([1, 3])
    mine = evens if RANK % 2 == 0 else odds
    t = inp(RANK).to(DEV)
    dist.all_reduce(t, group=mine)
    check("subgroup all_reduce", t, inp(RANK % 2) + inp(RANK % 2 + 2))
    return mine


def profiled(mine):
    """A profiled window: all_reduces of a small and a large message, an all_gather on
    a subgroup, a barrier."""
    trace_dir = os.path.join(OUT, "traces")
    with torch.profiler.profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
        on_trace_ready=torch.profiler.tensorboard_trace_handler(trace_dir,
                                                                worker_name=f"rank{RANK}"),
    ):
        a = torch.ones(256, device=DEV)
        b = torch.ones(1 << 20, device=DEV)
        for _ in range(2):
            a = a * 2
            dist.all_reduce(a)
            dist.all_reduce(b)
        outs = [torch.empty(256, device=DEV) for _ in range(2)]
        dist.all_gather(outs, a, group=mine)
        dist.barrier()
        torch.neuron.synchronize()


try:
    group = run_all()
    profiled(group)
except Exception:  # noqa: BLE001
    failures.append(f"rank {RANK}: {traceback.format_exc()}")
with open(os.path.join(OUT, f"rank{RANK}.json"), "w") as f:
    json.dump({"rank": RANK, "world": WORLD, "checks": checks, "failures": failures,
               "backend": dist.get_backend()}, f)
dist.destroy_process_group()
