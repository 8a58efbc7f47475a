"""Driver of the real-PyTorch test (torch_training_profiles_neuron.rs): one Python
process runs every check that needs PyTorch and prints one `RESULT {json}` line.

argv: trace folder of the profiled neuron run, path for the CPU-only trace.
"""

import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import neuronprof_torch  # noqa: E402,F401
import train_mlp  # noqa: E402

trace_dir, cpu_only_trace = sys.argv[1], sys.argv[2]
out = {
    "backend": torch._C._get_privateuse1_backend_name(),
    "accelerator": str(torch.accelerator.current_accelerator()),
    "accelerator_count": torch.accelerator.device_count(),
    "neuron_count": torch.neuron.device_count(),
}
out["neuron_losses"] = train_mlp.train("neuron", 12, trace_dir)
out["fallback_counts"] = neuronprof_torch._C._fallback_counts()
torch.neuron.synchronize()
torch.accelerator.synchronize()
out["memory_allocated"] = torch.neuron.memory_allocated()
out["max_memory_allocated"] = torch.neuron.max_memory_allocated()
out["cpu_losses"] = train_mlp.train("cpu", 12, None)
# The fallback's copying path (cpu_fallback), which ops the direct path declines take.
neuronprof_torch._C._set_aliased_fallback(False)
out["neuron_copying_losses"] = train_mlp.train("neuron", 12, None)
out["fallback_counts_after_copying"] = neuronprof_torch._C._fallback_counts()
neuronprof_torch._C._set_aliased_fallback(True)

# PyTorch lists the PrivateUse1 runtime among CPU-only activities too: a CPU-only
# profile after a device profile must hold no device activity.
with torch.profiler.profile(activities=[ProfilerActivity.CPU]) as prof:
    (torch.ones(8, device="neuron") * 2).sum().item()
prof.export_chrome_trace(cpu_only_trace)

# key_averages() gains the device's columns.
with torch.profiler.profile(
    activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
) as prof:
    a = torch.randn(64, 64).to("neuron")
    (a @ a).sum().item()
out["table"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8)
print("RESULT " + json.dumps(out), flush=True)
