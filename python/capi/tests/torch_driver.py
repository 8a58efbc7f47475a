"""Driver of the real-PyTorch test (torch_training_profiles_neuron.rs): one Python
process runs every check that needs PyTorch and prints one `RESULT {json}` line.

argv: trace folder of the profiled neuron run, path for the CPU-only trace, path for
the trace of one scaled_dot_product_attention on neuron.
"""

import contextlib
import json
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import neuronprof_torch  # noqa: E402,F401
import train_mlp  # noqa: E402

trace_dir, cpu_only_trace, attention_trace = sys.argv[1], sys.argv[2], sys.argv[3]
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

# A small transformer layer (attention, layer norm, softmax, embedding, bmm) on
# neuron:1 gives the CPU's outputs and gradients.
def transformer(device):
    torch.manual_seed(3)
    emb = torch.nn.Embedding(100, 32)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0
    )
    emb.to(device)
    layer.to(device)
    tokens = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(4))
    out = layer(emb(tokens.to(device)))
    out.square().mean().backward()
    return [out.detach().cpu(), emb.weight.grad.cpu(), layer.linear1.weight.grad.cpu(),
            layer.self_attn.in_proj_weight.grad.cpu()]


out["transformer_max_diff"] = max(
    float((a - b).abs().max()) for a, b in zip(transformer("neuron:1"), transformer("cpu"))
)
out["transformer_memory_on_1"] = torch.neuron.max_memory_allocated(1)


# One causal attention, forward and backward: neuron takes the CPU's choice of kernel
# (flash attention for the CPU; math when flash is switched off, as on the CPU), so
# the output and gradients are the CPU's bit for bit. The output's grad_fn names the
# kernel the choice took. `strided_mask`: a float mask whose last dimension is strided
# instead of causal (the CPU's flash kernel takes it, the GPUs' do not).
def attention(device, math=False, strided_mask=False):
    g = torch.Generator().manual_seed(5)
    leaves = [torch.randn(2, 4, 8, 16, generator=g).to(device).requires_grad_() for _ in range(3)]
    mask = {"is_causal": True}
    if strided_mask:
        mask = {"attn_mask": torch.randn(8, 8, generator=g).to(device).t()}
    with sdpa_kernel(SDPBackend.MATH) if math else contextlib.nullcontext():
        choice = int(torch._fused_sdp_choice(*leaves, **mask))
        y = torch.nn.functional.scaled_dot_product_attention(*leaves, **mask)
    y.square().sum().backward()
    values = [y.detach().cpu()] + [t.grad.cpu() for t in leaves]
    return {"choice": choice, "grad_fn": y.grad_fn.name(), "values": values}


for path, math, strided in (
    ("flash", False, False),
    ("math", True, False),
    ("flash_strided_mask", False, True),
):
    runs = {device: attention(device, math, strided) for device in ("neuron", "cpu")}
    out[f"attention_{path}"] = {
        device: {"choice": r["choice"], "grad_fn": r["grad_fn"]} for device, r in runs.items()
    }
    out[f"attention_{path}"]["max_diff"] = max(
        float((a - b).abs().max())
        for a, b in zip(runs["neuron"]["values"], runs["cpu"]["values"])
    )
with torch.profiler.profile(
    activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
) as prof:
    attention("neuron")
    torch.neuron.synchronize()
prof.export_chrome_trace(attention_trace)

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
