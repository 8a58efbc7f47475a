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

# torch.accelerator.memory.* read the extension's c10::DeviceAllocator; torch.neuron.*
# reads the device allocator directly: both must agree, and with the tensors' sizes.
acc = torch.accelerator.memory
torch.neuron.synchronize()
acc.reset_accumulated_memory_stats()
acc.reset_peak_memory_stats()
base = acc.memory_allocated()
large = torch.empty(3 * MIB // 4, device="neuron")  # 3 MiB: the large pool
small = torch.empty(250, device="neuron")  # 1000 bytes: the small pool, a 1 KiB block
mem = {
    "equal": dict(acc.memory_stats()) == dict(torch.neuron.memory_stats()),
    "keys_differ": sorted(set(acc.memory_stats()) ^ set(torch.neuron.memory_stats())),
    "allocated": acc.memory_allocated() - base,
    "neuron_allocated": torch.neuron.memory_allocated() - base,
}
del large
stats = acc.memory_stats()
mem["after_free"] = acc.memory_allocated() - base
mem["peak"] = acc.max_memory_allocated() - base
mem["neuron_peak"] = torch.neuron.max_memory_allocated() - base
for key in ["allocation.all.allocated", "allocation.all.freed", "allocated_bytes.large_pool.allocated",
            "allocated_bytes.large_pool.freed", "allocated_bytes.small_pool.current",
            "requested_bytes.small_pool.current", "active_bytes.all.current",
            "allocated_bytes.all.current"]:
    mem[key] = stats[key]
acc.reset_peak_memory_stats()
mem["peak_after_reset"] = acc.max_memory_allocated() - base
mem["neuron_peak_after_reset"] = torch.neuron.max_memory_allocated() - base
acc.reset_accumulated_memory_stats()
mem["allocs_after_reset"] = torch.neuron.memory_stats()["allocation.all.allocated"]
mem["info"] = [list(acc.get_memory_info()), list(torch.neuron.mem_get_info())]
mem["equal_at_end"] = dict(acc.memory_stats()) == dict(torch.neuron.memory_stats())
del small
out["accelerator_memory"] = mem

# Stream-ordered reuse. A block serves only the stream it was allocated for; a block
# another stream used (record_stream) is reused only once that stream passed its free.
address = neuronprof_torch._C._device_address
side = torch.neuron.Stream()
reuse = {}
a = torch.ones(MIB, device="neuron")  # 4 MiB on the default stream
keep = torch.ones(MIB, device="neuron")  # its neighbour, so a's block stays 4 MiB
torch.neuron.synchronize()
a_addr = address(a)
del a
b = torch.empty(MIB, device="neuron")
reuse["own_stream_reuses_at_once"] = address(b) == a_addr
with torch.neuron.stream(side):
    c = torch.empty(MIB, device="neuron")
    reuse["other_stream_gets_other_block"] = address(c) != address(b)
    del c
    # A 64 MiB copy from the host: milliseconds of the side stream's time.
    staged = torch.ones(16 * MIB).to("neuron")
    b.record_stream(side)
reuse["side_busy_at_free"] = not side.query()
before = torch.neuron.memory_stats()
del b
after = torch.neuron.memory_stats()
reuse["allocated_drop"] = before["allocated_bytes.all.current"] - after["allocated_bytes.all.current"]
reuse["active_drop"] = before["active_bytes.all.current"] - after["active_bytes.all.current"]
d = torch.empty(MIB, device="neuron")
reuse["reused_while_side_busy"] = address(d) == a_addr
reuse["side_busy_after"] = not side.query()
side.synchronize()
e = torch.empty(MIB, device="neuron")
reuse["reused_after_side_passed"] = address(e) == a_addr
reuse["active_after"] = torch.neuron.memory_stats()["active_bytes.all.current"]
reuse["allocated_after"] = torch.neuron.memory_stats()["allocated_bytes.all.current"]
del staged, d, e, keep
out["stream_reuse"] = reuse
print("RESULT " + json.dumps(out), flush=True)
