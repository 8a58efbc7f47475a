"""Driver of the torch_neuronx test (torch_neuronx.rs): TorchNeuron's import surface on
the emulated device — streams, synchronize, and ``torch_neuronx.profiling``'s sessions in
each mode — and that a real ``torch_neuronx`` wins over the shim. Prints one
``RESULT {json}`` line.

argv: work folder.
"""

import glob
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

import neuronprof_torch  # noqa: F401  (what autoloading does at `import torch`)

work = Path(sys.argv[1])
result = {"find_spec": importlib.util.find_spec("torch_neuronx") is not None}

import torch_neuronx  # noqa: E402
from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode  # noqa: E402

result["shim"] = bool(getattr(torch_neuronx, "__neuronprof__", False))
result["shim_file"] = torch_neuronx.__file__

# Streams: TorchNeuron's multi-rank example's calls.
device = torch.device("neuron")
side = torch_neuronx.Stream(device)
a = torch.randn(256, 256, device=device)
with torch_neuronx.stream(side):
    inside = torch_neuronx.current_stream()
    b = a @ a
side.synchronize()
torch_neuronx.synchronize()
result["streams"] = {
    "side_is_stream": isinstance(side, torch.Stream),
    "side_device": str(side.device),
    "current_inside_is_side": inside == side,
    "current_after_is_default": torch_neuronx.current_stream() == torch_neuronx.default_stream(),
    "side_stream_id": side.stream_id,
    "value_ok": bool(torch.allclose(b.cpu(), a.cpu() @ a.cpu())),
}


def session(name, **config_args):
    """One profiled session of work on cores 0 and 1; the exported trace's path."""
    config = NeuronConfig(profile_output_dir=str(work / name), **config_args)
    exporter = NeuronProfiler(config)
    x0 = torch.randn(512, 512, device="neuron:0")
    x1 = torch.randn(512, 512, device="neuron:1")
    torch_neuronx.synchronize(0)
    torch_neuronx.synchronize(1)
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
        experimental_config=config,
        on_trace_ready=exporter.export_trace,
    ):
        for _ in range(3):
            y0 = torch.relu(x0 @ x0)
            y1 = torch.tanh(x1 @ x1)
        torch_neuronx.synchronize(0)
        torch_neuronx.synchronize(1)
        float(y0.sum() + y1.sum().cpu())
    return exporter.last_trace


result["sessions"] = {
    "all": session(
        "all",
        modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY],
    ),
    "core0": session("core0", capture_enabled_for_nc="0"),
    "runtime_only": session("runtime_only", modes=[ProfileMode.RUNTIME]),
    "device_only": session("device_only", modes=[ProfileMode.DEVICE]),
    "max_events": session("max_events", max_events_per_nc=4, modes=["runtime"]),
}
result["layout"] = [
    os.path.relpath(p, work) for p in sorted(glob.glob(str(work / "*" / "*" / "*" / "trace.json")))
]

errors = {}
for name, args in {
    "bad_core": {"capture_enabled_for_nc": "0,x"},
    "bad_range": {"capture_enabled_for_nc": "5-2"},
    "bad_mode": {"modes": ["GPU"]},
    "bad_max": {"max_events_per_nc": 0},
}.items():
    try:
        NeuronConfig(**args)
        errors[name] = None
    except ValueError as e:
        errors[name] = str(e)
result["errors"] = errors

# A real torch_neuronx (a package of that name on sys.path) wins over the shim.
fake = work / "site" / "torch_neuronx"
fake.mkdir(parents=True)
(fake / "__init__.py").write_text("REAL = True\n")
probe = (
    "import importlib.util, neuronprof_torch, torch_neuronx; "
    "print(getattr(torch_neuronx, 'REAL', False), importlib.util.find_spec('torch_neuronx').origin)"
)
env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")]))
out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
result["real_wins"] = out.stdout.split()
# NEURONPROF_TORCH_NEURONX=0: no shim.
env = dict(os.environ, NEURONPROF_TORCH_NEURONX="0")
out = subprocess.run(
    [sys.executable, "-c", "import importlib.util, neuronprof_torch; print(importlib.util.find_spec('torch_neuronx'))"],
    env=env, capture_output=True, text=True, check=True,
)
result["disabled"] = out.stdout.strip()
print("RESULT " + json.dumps(result))
