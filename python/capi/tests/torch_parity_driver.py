"""Driver of torch_device_module_parity.rs: the torch.cuda functions profilers and
training loops call, on torch.neuron. Prints one `RESULT {json}` line."""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import neuronprof_torch  # noqa: E402,F401

MIB = 1 << 20
out = {}
props = torch.neuron.get_device_properties(0)
out["props"] = {"name": props.name, "total_memory": props.total_memory, "lnc": props.lnc,
                "profile": props.profile, "peak_tflops": props.peak_tflops, "repr": repr(props)}
out["names"] = [torch.neuron.get_device_name(i) for i in range(torch.neuron.device_count())]
out["name_of_device"] = torch.neuron.get_device_name(torch.device("neuron:1"))
out["bf16"] = torch.neuron.is_bf16_supported()

free0, total0 = torch.neuron.mem_get_info()
big = torch.empty(64 * MIB // 4, device="neuron")
free1, total1 = torch.neuron.mem_get_info(0)
out["mem_get_info"] = [free0, total0, free1, total1]
out["reserved_after"] = torch.neuron.memory_reserved()
del big
out["peak_before_reset"] = torch.neuron.max_memory_allocated()
torch.neuron.reset_peak_memory_stats()
out["peak_after_reset"] = torch.neuron.max_memory_allocated()
out["allocated_after_reset"] = torch.neuron.memory_allocated()
out["reserved_peak_after_reset"] = torch.neuron.max_memory_reserved()
out["reserved_after_reset"] = torch.neuron.memory_reserved()
out["allocs_before"] = torch.neuron.memory_stats()["allocation.all.allocated"]
torch.neuron.reset_accumulated_memory_stats()
out["allocs_after"] = torch.neuron.memory_stats()["allocation.all.allocated"]

# synchronize(device) takes what torch.cuda.synchronize takes.
for d in (None, 1, "neuron:1", torch.device("neuron", 1)):
    torch.neuron.synchronize(d)
out["synchronized"] = True


def draws(seed_fn):
    seed_fn(7)
    a = torch.randn(5, device="neuron").cpu().tolist()
    seed_fn(7)
    return a, torch.randn(5, device="neuron").cpu().tolist()


out["manual_seed"] = draws(torch.neuron.manual_seed)
out["manual_seed_all"] = draws(torch.neuron.manual_seed_all)
out["torch_manual_seed"] = draws(torch.manual_seed)
out["other_seed"] = (torch.neuron.manual_seed(8), torch.randn(5, device="neuron").cpu().tolist())[1]
print("RESULT " + json.dumps(out), flush=True)
