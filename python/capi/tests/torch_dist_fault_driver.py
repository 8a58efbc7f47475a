"""Driver of tests/torch_distributed.rs's fault scenario: four rank processes started
directly (RANK, WORLD_SIZE, MASTER_ADDR/PORT; not torchrun, whose agent would stop the
others at the first death); each step all-reduces on neuron under torch.profiler
(cycles of 2 steps, so traces are written as the run goes); rank 2 kills itself with
SIGKILL in step 5. The others must fail within the process group's timeout with the
backend's error (printed on standard error by the uncaught exception).

Usage: torch_dist_fault_driver.py OUT_DIR TIMEOUT_S
"""

import os
import signal
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity

import neuronprof_torch  # noqa: F401

out, timeout_s = sys.argv[1], int(sys.argv[2])
dist.init_process_group("neuron", timeout=timedelta(seconds=timeout_s))
rank = dist.get_rank()
device = torch.device("neuron", int(os.environ["LOCAL_RANK"]))
t = torch.ones(1024, device=device)
profiler = torch.profiler.profile(
    activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
    schedule=torch.profiler.schedule(wait=0, warmup=0, active=2, repeat=0),
    on_trace_ready=torch.profiler.tensorboard_trace_handler(
        os.path.join(out, "traces"), worker_name=f"rank{rank}"),
)
profiler.start()
for step in range(100):
    if step == 5 and rank == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    t = t * 0.5
    dist.all_reduce(t)
    torch.neuron.synchronize()
    print(f"step {step}", flush=True)
    profiler.step()
profiler.stop()
