"""Writes the trace of this folder: the 2-layer transformer block of
python/examples/train_block.py, torch.compile(backend="neuron"), 6 SGD steps with the
last 2 profiled (shapes and FLOPs recorded). Usage, from the repository's root:

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=python python \
        analysis/tests/data/compiled-block/make.py /tmp/compiled-block
"""

import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

import neuronprof_torch  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python", "examples"))
from train_block import data, fresh_model  # noqa: E402

out = sys.argv[1]
model = fresh_model()
step_fn = torch.compile(model, backend="neuron")
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x, t = data()
with profile(
    activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
    record_shapes=True,
    with_flops=True,
    schedule=schedule(wait=3, warmup=1, active=2),
    on_trace_ready=tensorboard_trace_handler(out),
) as prof:
    for _ in range(6):
        optimizer.zero_grad(set_to_none=True)
        loss = step_fn(x, t)
        loss.backward()
        optimizer.step()
        loss.item()
        prof.step()
torch.neuron.synchronize()
