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
# The side stream's work: COPIES copies of 64 MiB from the host (about 1 ms each at the
# host link's rate), queued back to back. The source stays alive: the host work between
# the last launch and the free is a few calls, never the free of a 64 MiB host tensor
# (hundreds of µs of munmap, about what one copy lasts).
COPIES = 8
host = torch.ones(16 * MIB)
with torch.neuron.stream(side):
    c = torch.empty(MIB, device="neuron")
    reuse["other_stream_gets_other_block"] = address(c) != address(b)
    del c
    staged = torch.empty(16 * MIB, device="neuron")
    copies_start = torch.neuron.Event(enable_timing=True)
    copies_end = torch.neuron.Event(enable_timing=True)
    copies_start.record()
    for _ in range(COPIES):
        staged.copy_(host)
    copies_end.record()
    b.record_stream(side)
reuse["side_busy_at_free"] = not side.query()
at_free = torch.neuron.Event(enable_timing=True)
at_free.record(torch.neuron.default_stream())  # the default stream is idle: the host's instant
before = torch.neuron.memory_stats()
del b
after = torch.neuron.memory_stats()
reuse["allocated_drop"] = before["allocated_bytes.all.current"] - after["allocated_bytes.all.current"]
reuse["active_drop"] = before["active_bytes.all.current"] - after["active_bytes.all.current"]
d = torch.empty(MIB, device="neuron")
reuse["reused_while_side_busy"] = address(d) == a_addr
reuse["side_busy_after"] = not side.query()
side.synchronize()
reuse["copies"] = COPIES
reuse["copy_bytes"] = staged.nbytes
reuse["copies_ms"] = copies_start.elapsed_time(copies_end)
reuse["side_ahead_at_free_ms"] = at_free.elapsed_time(copies_end)
e = torch.empty(MIB, device="neuron")
reuse["reused_after_side_passed"] = address(e) == a_addr
reuse["active_after"] = torch.neuron.memory_stats()["active_bytes.all.current"]
reuse["allocated_after"] = torch.neuron.memory_stats()["allocated_bytes.all.current"]
del staged, d, e, keep
out["stream_reuse"] = reuse

# Memory snapshots: recorded history and segments in torch.cuda's format, read by
# PyTorch's own visualizer, with the numbers of the allocations made.
import pickle  # noqa: E402
import tempfile  # noqa: E402

from torch.cuda import _memory_viz  # noqa: E402

torch.neuron.synchronize()
torch.neuron.memory._record_memory_history(stacks="python")
x = torch.empty(5 * MIB // 4, device="neuron")  # 5 MiB  (SNAPSHOT_ALLOC_LINE)
y = torch.empty(250, device="neuron")  # 1000 bytes: a 1 KiB block
z = torch.empty(MIB, device="neuron")
x_line = sys._getframe().f_lineno - 3
with torch.neuron.stream(side):
    held = torch.empty(16 * MIB, device="neuron")
    for _ in range(COPIES):
        held.copy_(host)  # the side stream busy for milliseconds (as above)
    z.record_stream(side)
addresses = {"x": address(x), "y": address(y), "z": address(z)}
del y, z  # y: reusable at once; z: pending until the side stream passes
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "snap.pickle")
    torch.neuron.memory._dump_snapshot(path)
    with open(path, "rb") as f:
        snap = pickle.load(f)
stats = torch.neuron.memory_stats()
snapshot = {"addresses": addresses, "x_line": x_line, "driver": os.path.basename(__file__)}
snapshot["keys"] = sorted(snap)
seg0 = [seg for seg in snap["segments"] if seg["device"] == 0]
snapshot["sums"] = {
    "total_size": sum(seg["total_size"] for seg in seg0),
    "allocated_size": sum(seg["allocated_size"] for seg in seg0),
    "active_size": sum(seg["active_size"] for seg in seg0),
    "reserved_bytes": stats["reserved_bytes.all.current"],
    "allocated_bytes": stats["allocated_bytes.all.current"],
    "active_bytes": stats["active_bytes.all.current"],
}
blocks = {b["address"]: (b, seg) for seg in seg0 for b in seg["blocks"]}
snapshot["states"] = {k: blocks[a][0]["state"] if a in blocks else None for k, a in addresses.items()}
snapshot["x_block"] = {
    "size": blocks[addresses["x"]][0]["size"],
    "requested_size": blocks[addresses["x"]][0]["requested_size"],
    "frames": [[f["filename"], f["line"]] for f in blocks[addresses["x"]][0]["frames"]][:8],
}
snapshot["tiled"] = all(sum(b["size"] for b in seg["blocks"]) == seg["total_size"] for seg in seg0)
trace = snap["device_traces"][0]
snapshot["actions"] = {
    k: [e["action"] for e in trace if e["addr"] == a] for k, a in addresses.items()
}
snapshot["sizes"] = {k: [e["size"] for e in trace if e["addr"] == a][:1] for k, a in addresses.items()}
snapshot["times_ordered"] = all(a["time_us"] <= b["time_us"] for a, b in zip(trace, trace[1:]))
side.synchronize()
torch.empty(16, device="neuron")  # the next allocation sees z reusable
snap2 = torch.neuron.memory._snapshot()
snapshot["z_after"] = [e["action"] for e in snap2["device_traces"][0] if e["addr"] == addresses["z"]]
# PyTorch's visualizer reads it: the plots (HTML with the pickle embedded), the
# segment summary (which asserts that blocks tile their segments) and the text trace.
snapshot["trace_plot"] = len(_memory_viz.trace_plot(snap))
snapshot["segment_plot"] = len(_memory_viz.segment_plot(snap))
snapshot["segsum"] = len(_memory_viz.segsum(snap))
torch.neuron.memory._record_memory_history(enabled=None)
del x, held, host
out["snapshot"] = snapshot
print("RESULT " + json.dumps(out), flush=True)
