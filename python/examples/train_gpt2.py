"""A Hugging Face Transformers GPT-2 trained on the accelerator, profiled with
torch.profiler (schedule + tensorboard_trace_handler).

The model is ``GPT2LMHeadModel`` built from a small ``GPT2Config`` (2 layers, width 128,
4 heads, 4096 tokens, sequences of 64): nothing is downloaded, the weights are the
seeded initialisation. Dropout is off, so a run on the CPU computes the same losses.
The data is a learnable task: each sequence counts up from a random start by a random
stride of 1 to 3, modulo 256 (the first 256 of the 4096 tokens), so the next token
follows from the two before it.
Plain PyTorch and Transformers: the only line for the neuron device is ``import
neuronprof_torch``, and the device is ``torch.accelerator.current_accelerator()``.

    python python/examples/train_gpt2.py --trace-dir traces/gpt2
    python python/examples/train_gpt2.py --device cpu

It prints one JSON line per step (``{"step": i, "loss": ...}``); with ``--trace-dir``
steps 4-6 are profiled (wait 2, warm-up 2, active 3) and the trace handler writes
``<worker>.<time>.pt.trace.json`` there.
"""

import argparse
import json
import os

# A model from a config needs no hub; say so, so that nothing tries to reach one.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from torch.profiler import ProfilerActivity  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

import neuronprof_torch  # noqa: E402,F401  (gives PyTorch the `neuron` device)

BATCH, SEQ = 8, 64
CONFIG = dict(
    vocab_size=4096,
    n_positions=SEQ,
    n_embd=128,
    n_layer=2,
    n_head=4,
    resid_pdrop=0.0,
    embd_pdrop=0.0,
    attn_pdrop=0.0,
    # GPT2Config's defaults name token 50256, outside this vocabulary.
    bos_token_id=0,
    eos_token_id=0,
)
# The sequences use the first 256 tokens: a model learns that within a few steps, and
# the stride rule after.
DATA_TOKENS = 256


def batches(steps: int, seed: int = 7):
    """`steps` batches of token ids, [BATCH, SEQ] each."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        start = torch.randint(0, DATA_TOKENS, (BATCH, 1), generator=gen)
        stride = torch.randint(1, 4, (BATCH, 1), generator=gen)
        out.append((start + stride * torch.arange(SEQ)) % DATA_TOKENS)
    return out


def setup(device, seed: int = 0):
    """The model on `device` and a function running one training step on a batch
    (returns the loss as a float: `.item()`, which waits for the device)."""
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(**CONFIG)).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    def step(ids):
        ids = ids.to(device)
        optimizer.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        return loss.item()

    return model, step


def train(device=None, steps: int = 8, trace_dir: str | None = None, on_trace_ready=None,
          after_step=None):
    """Trains `steps` steps on `device` (default: the current accelerator); returns the
    losses. With `trace_dir` (or another `on_trace_ready` handler) the run is profiled
    (wait 2, warm-up 2, active 3). `after_step(i)`, if given, runs after step `i` (and
    the profiler's step), while the model and the optimizer's state are alive."""
    device = torch.device(device) if device is not None else torch.accelerator.current_accelerator()
    _, step = setup(device)
    activities = [ProfilerActivity.CPU]
    if device.type != "cpu":
        activities.append(ProfilerActivity.PrivateUse1)
    profiler = None
    if trace_dir is not None and on_trace_ready is None:
        on_trace_ready = torch.profiler.tensorboard_trace_handler(trace_dir)
    if on_trace_ready is not None:
        profiler = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=2, warmup=2, active=3, repeat=1),
            on_trace_ready=on_trace_ready,
            record_shapes=True,
            profile_memory=True,
        )
        profiler.start()
    losses = []
    for i, ids in enumerate(batches(steps)):
        losses.append(step(ids))
        print(json.dumps({"device": str(device), "step": i, "loss": losses[-1]}), flush=True)
        if profiler is not None:
            profiler.step()
        if after_step is not None:
            after_step(i)
    if profiler is not None:
        profiler.stop()
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="default: the current accelerator")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--trace-dir", default=None)
    args = parser.parse_args()
    train(args.device, args.steps, args.trace_dir)


if __name__ == "__main__":
    main()
