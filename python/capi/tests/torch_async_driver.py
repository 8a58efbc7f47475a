"""Driver of the asynchronous-device test (torch_async_device.rs): one Python process
runs the scenarios that need PyTorch, writes their traces, and prints one
`RESULT {json}` line.

argv: output folder. Each scenario writes `<out>/<scenario>/` (one trace per window):
- gemm: four fp32 Linear(4096, 4096) on a 4096-row batch, forward, backward and SGD
  (device-bound: each matmul is about 3.8 ms of device time at TensorE's published fp32
  rate, against the few hundred µs of host time an op takes on a loaded 2-core machine).
  fp32, not bf16: the numerics are PyTorch's CPU kernels, and on a CPU without AVX-512
  PyTorch 2.15's bf16 matmul is a scalar loop (0.3 GFLOP/s on the CI machine, against
  117 GFLOP/s for fp32): the former 8192-row bf16 step took over half an hour there;
- linear_bf16: four bf16 Linear(2048, 2048) on a 1024-row batch in no_grad (issue 31:
  device-bound, about 145 µs per matmul, kernels queued);
- tiny: a step of 300 elementwise ops on 64 floats (host-bound);
- streams: a host-to-device copy on a side stream while the default stream multiplies,
  a cross-stream wait, timed events; also `streams_raw.json`, the same window exported
  without the warp, and the FunctionEvents' host durations (key_averages' source).
"""

import json
import os
import shutil
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

import neuronprof_torch  # noqa: F401
import neuronprof_torch.profiler

out_dir = sys.argv[1]
result = {}
ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def gemm():
    device = torch.accelerator.current_accelerator()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        *[torch.nn.Linear(4096, 4096) for _ in range(4)]
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(4096, 4096).to(device)
    losses = []
    with profile(
        activities=ACTIVITIES,
        schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
        on_trace_ready=tensorboard_trace_handler(os.path.join(out_dir, "gemm")),
    ) as prof:
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            loss = model(x).float().square().mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            prof.step()
    result["gemm_losses"] = losses


def linear_bf16():
    """Four bf16 Linear(2048, 2048) in no_grad, two profiled steps (issue 31): each
    matmul is about 145 µs of device time, far more than PyTorch's own launch of a Linear
    on a host with a core to itself, so the device stays busy with kernels queued."""
    device = torch.device("neuron")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        *[torch.nn.Linear(2048, 2048) for _ in range(4)]
    ).to(device=device, dtype=torch.bfloat16)
    rows = int(os.environ.get("NEURONPROF_TEST_LINEAR_ROWS", "1024"))
    x = torch.randn(rows, 2048, dtype=torch.bfloat16).to(device)
    with torch.no_grad(), profile(
        activities=ACTIVITIES,
        schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
        on_trace_ready=tensorboard_trace_handler(os.path.join(out_dir, "linear_bf16")),
    ) as prof:
        for _ in range(3):
            y = model(x)
            prof.step()
    torch.neuron.synchronize()
    result["linear_bf16_finite"] = bool(torch.isfinite(y.float()).all())


def tiny():
    device = torch.device("neuron")
    x = torch.ones(64, device=device)
    with profile(
        activities=ACTIVITIES,
        schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
        on_trace_ready=tensorboard_trace_handler(os.path.join(out_dir, "tiny")),
    ) as prof:
        for _ in range(3):
            y = x
            for _ in range(150):
                y = y * 1.0001 + 0.0001
            result["tiny_value"] = y.sum().item()
            prof.step()


def streams():
    device = torch.device("neuron:0")
    # Four 4096^3 fp32 matmuls: 3.8 ms of device time each at TensorE's fp32 rate (and
    # about two seconds of CPU numerics each, off the host clock), against the 0.3-0.5 ms
    # of host time a launch takes here in a debug build: the device is more than 10 ms
    # ahead of the host when the copy is launched. (With bf16, 1.0 ms each, the device
    # was only about 2x ahead, and on a loaded machine the host caught up and launched
    # the copy after the last matmul had ended.)
    big = torch.randn(4096, 4096, dtype=torch.float32).to(device)
    host = torch.ones(16 << 20)  # 64 MiB, the "next batch"
    side = torch.neuron.Stream()
    start = torch.neuron.Event(enable_timing=True)
    end = torch.neuron.Event(enable_timing=True)
    copied = torch.neuron.Event(enable_timing=True)
    torch.neuron.synchronize()
    with profile(activities=ACTIVITIES) as prof:
        start.record()
        for _ in range(4):
            b = big @ big
        # While the default stream multiplies, the next batch goes over on a side stream.
        with torch.neuron.stream(side):
            on_device = host.to(device, non_blocking=True)
            copied.record()
        end.record()
        torch.neuron.current_stream().wait_stream(side)
        total = on_device.sum()
        end.synchronize()
        copied.synchronize()
        result["elapsed_ms"] = start.elapsed_time(end)
        result["copy_elapsed_ms"] = start.elapsed_time(copied)
        result["event_query_after_sync"] = end.query()
        result["side_query_after_sync"] = side.query()
        result["side_stream"] = side.stream_id
        total = float(total)
    result["sum_close"] = total == float(host.numel())
    result["b_finite"] = bool(torch.isfinite(b.float()).all())
    # PyTorch saves a window once: export it unwarped, then warp a copy with the
    # function the export hook calls.
    raw = os.path.join(out_dir, "streams_raw.json")
    torch.autograd.profiler.profile.export_chrome_trace.__wrapped__(prof.profiler, raw)
    os.makedirs(os.path.join(out_dir, "streams"), exist_ok=True)
    warped = os.path.join(out_dir, "streams", "streams.pt.trace.json")
    shutil.copyfile(raw, warped)
    result["warp_stats"] = neuronprof_torch.profiler.warp_trace(warped)
    try:
        neuronprof_torch.profiler.warp_trace(warped)
        result["second_warp"] = "accepted"
    except RuntimeError as e:
        result["second_warp"] = str(e)
    # key_averages' source: the FunctionEvents' host time per operator name, µs.
    per_name = {}
    for fe in prof.events():
        if fe.device_type == torch.autograd.DeviceType.CPU and fe.activity_type == "cpu_op":
            per_name[fe.name] = per_name.get(fe.name, 0.0) + (fe.time_range.end - fe.time_range.start)
    result["function_event_us"] = per_name
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    result["table"] = table


for scenario in sys.argv[2:] or ["gemm", "tiny", "streams"]:
    globals()[scenario]()
result["cut_total_ns"] = neuronprof_torch._C._cut_total_ns()
print("RESULT " + json.dumps(result), flush=True)
