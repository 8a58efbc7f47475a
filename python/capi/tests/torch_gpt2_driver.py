"""Driver of the Hugging Face GPT-2 test (torch_gpt2.rs): one Python process trains
`python/examples/train_gpt2.py`'s GPT-2 on the current accelerator (neuron) and on the
CPU, each profiled (steps 4-6), and prints one `RESULT {json}` line.

argv: trace folder of the neuron run, trace folder of the CPU run.
"""

import json
import os
import sys

import torch
import transformers
from torch.cuda import _memory_viz

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import train_gpt2  # noqa: E402  (imports neuronprof_torch)

neuron_trace_dir, cpu_trace_dir = sys.argv[1], sys.argv[2]
model = train_gpt2.GPT2LMHeadModel(train_gpt2.GPT2Config(**train_gpt2.CONFIG))
result = {
    "device": str(torch.accelerator.current_accelerator()),
    "torch": torch.__version__,
    "transformers": transformers.__version__,
    "attn_implementation": model.config._attn_implementation,
    "hf_offline": [os.environ.get("HF_HUB_OFFLINE"), os.environ.get("TRANSFORMERS_OFFLINE")],
    "tied_on_cpu": model.lm_head.weight is model.transformer.wte.weight,
}
# GPT-2's LM head is its token embedding: Module.to keeps the one Parameter (as on CUDA).
model.to(torch.accelerator.current_accelerator())
result["tied_on_device"] = model.lm_head.weight is model.transformer.wte.weight
del model
# Memory snapshot taken during the run: after step 6 (the one that closes the profiled
# window: wait 2, warm-up 2, active 3), with the model, its gradients' blocks and AdamW's
# state alive, read by PyTorch's own visualizer; its segments' totals are those of
# memory_stats at that moment. The allocation history is recorded from the start.
torch.neuron.memory._record_memory_history(stacks="python", max_entries=200000)


def snapshot_during_run(i):
    if i != 6:
        return
    snap = torch.neuron.memory._snapshot()
    stats = torch.neuron.memory_stats()
    seg0 = [s for s in snap["segments"] if s["device"] == 0]
    trace0 = snap["device_traces"][0]
    result["snapshot"] = {
        "after_step": i,
        "segments": [sum(s[k] for s in seg0) for k in ("total_size", "allocated_size", "active_size")],
        "stats": [stats[k + ".all.current"] for k in ("reserved_bytes", "allocated_bytes", "active_bytes")],
        "actions": {a: sum(e["action"] == a for e in trace0)
                    for a in ("alloc", "free_requested", "free_completed")},
        "segment_plot": len(_memory_viz.segment_plot(snap)),
        "trace_plot": len(_memory_viz.trace_plot(snap)),
    }


result["neuron_losses"] = train_gpt2.train(None, 8, neuron_trace_dir, after_step=snapshot_during_run)
torch.accelerator.synchronize()
result["max_memory_allocated"] = torch.neuron.max_memory_allocated()
torch.neuron.memory._record_memory_history(enabled=None)
# The CPU run's trace as PyTorch writes it, on the real clock, unwarped: its operators
# compute their values, so their durations are the numerics the neuron run's host
# operators must not hold. (The warp would shrink them by the process's run delay.)
os.makedirs(cpu_trace_dir, exist_ok=True)


def export_unwarped(prof):
    torch.autograd.profiler.profile.export_chrome_trace.__wrapped__(
        prof.profiler, os.path.join(cpu_trace_dir, "cpu.pt.trace.json")
    )


result["cpu_losses"] = train_gpt2.train("cpu", 8, on_trace_ready=export_unwarped)
print("RESULT " + json.dumps(result), flush=True)
