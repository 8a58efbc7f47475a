"""Driver of the torch.compile test (torch_compile.rs): prints one `RESULT {json}` line.

argv: scenario, output folder.
- `train`: a 2-layer transformer block (`python/examples/train_block.py`: d 64, 4
  heads, sequence 32, batch 4) trains 20 steps with SGD on `neuron`, eagerly and then
  compiled with `backend="neuron"`, from the same initial weights and data; the last 2
  steps of each are profiled
  (`<out>/eager/`, `<out>/compiled/`). Also a function with a data-dependent branch (a
  graph break) called with two sizes (a recompile), profiled (`<out>/breaks/`), an op
  the lowerings do not know inside a graph, scaled_dot_product_attention in a graph
  (forward and backward, profiled: `<out>/attention/`), and the default
  `torch.compile` (Inductor) on a neuron model.
- `again`: a second process compiles the same block (the compile cache of the first
  run must serve it: `NEURONPROF_COMPILE_CACHE` names the same folder) and profiles its
  first compiled steps (`<out>/again/`); the test runs it with
  `NEURONPROF_DETAIL=instructions`, so that trace has the engine rows too.
"""

import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

import neuronprof_torch
import neuronprof_torch.compile as ncompile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from train_block import data, fresh_model  # noqa: E402

scenario, out_dir = sys.argv[1], sys.argv[2]
ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
STEPS = 20


def train(model, step_fn, trace_dir, steps=STEPS, active=2):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, t = data()
    losses = []
    warmup = 1 if steps > active else 0
    with profile(
        activities=ACTIVITIES,
        schedule=schedule(wait=steps - active - warmup, warmup=warmup, active=active, repeat=1),
        on_trace_ready=tensorboard_trace_handler(trace_dir),
    ) as prof:
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            loss = step_fn(x, t)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            prof.step()
    torch.neuron.synchronize()
    return losses


result = {}
if scenario == "train":
    eager = fresh_model()
    result["eager_losses"] = train(eager, eager, os.path.join(out_dir, "eager"))
    model = fresh_model()
    compiled = torch.compile(model, backend="neuron")
    result["compiled_losses"] = train(model, compiled, os.path.join(out_dir, "compiled"))
    result["stats_after_train"] = ncompile.stats()

    # A data-dependent branch: Dynamo breaks the graph at the .item() in the condition.
    # Called again with another size (static shapes): a guard fails and Dynamo compiles
    # the frame again. Profiled into <out>/breaks/, whose trace carries the counts.
    def branchy(x):
        y = x * 2
        if y.sum().item() > 0:
            return y + 1
        return y - 1

    torch._dynamo.reset()
    xb = torch.ones(8, device="neuron")
    cb = torch.compile(branchy, backend="neuron", dynamic=False)
    with profile(
        activities=ACTIVITIES, on_trace_ready=tensorboard_trace_handler(os.path.join(out_dir, "breaks"))
    ):
        result["branch_value"] = cb(xb).cpu().tolist()
        result["branch_value_16"] = cb(torch.ones(16, device="neuron")).cpu().tolist()
        torch.neuron.synchronize()
    result["stats_after_breaks"] = ncompile.stats()

    # An op the lowerings do not know, inside a graph: an eager kernel of its own.
    def unknown(x):
        return torch.renorm(x * 0.5, p=2, dim=0, maxnorm=1.0) + 1

    xu = torch.linspace(-1, 1, 16, device="neuron").reshape(4, 4)
    with profile(
        activities=ACTIVITIES, on_trace_ready=tensorboard_trace_handler(os.path.join(out_dir, "unknown"))
    ):
        yu = torch.compile(unknown, backend="neuron")(xu)
        torch.neuron.synchronize()
    result["unknown_max_error"] = (yu.cpu() - unknown(xu.cpu())).abs().max().item()

    # scaled_dot_product_attention in a graph: traced with the CPU's choice (flash
    # attention for the CPU), whose kernels the program lowers as eager does (no eager
    # fallback); forward and backward equal eager's bit for bit.
    def attend(q, k, v):
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.square().sum()

    def attention_values(fn):
        g = torch.Generator().manual_seed(7)
        leaves = [
            torch.randn(2, 4, 16, 16, generator=g).to("neuron").requires_grad_() for _ in range(3)
        ]
        loss = fn(*leaves)
        loss.backward()
        return [loss.detach().cpu()] + [t.grad.cpu() for t in leaves]

    torch._dynamo.reset()
    with profile(
        activities=ACTIVITIES, on_trace_ready=tensorboard_trace_handler(os.path.join(out_dir, "attention"))
    ):
        compiled_values = attention_values(torch.compile(attend, backend="neuron"))
        torch.neuron.synchronize()
    result["attention_max_diff"] = max(
        float((a - b).abs().max()) for a, b in zip(compiled_values, attention_values(attend))
    )
    result["stats"] = ncompile.stats()

    # Inductor (the default backend) on a neuron model: a clear error.
    torch._dynamo.reset()
    try:
        torch.compile(torch.nn.Linear(4, 4).to("neuron"))(torch.ones(2, 4, device="neuron"))
        result["default_error"] = None
    except Exception as e:  # noqa: BLE001 - the message is what is checked
        result["default_error"] = str(e)
elif scenario == "again":
    model = fresh_model()
    compiled = torch.compile(model, backend="neuron")
    result["compiled_losses"] = train(
        model, compiled, os.path.join(out_dir, "again"), steps=2, active=2
    )
    result["stats"] = ncompile.stats()
else:
    raise SystemExit(f"unknown scenario {scenario}")
print("RESULT " + json.dumps(result), flush=True)
