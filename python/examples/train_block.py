"""A 2-layer transformer block on `neuron`, eager or `torch.compile(backend="neuron")`.

The model of the torch.compile test (`python/capi/tests/torch_compile_driver.py`) and of
the compile benchmark (`scripts/bench-torch --only compile`): d 64, 4 heads, sequence
32, batch 4; attention written out (matmul, softmax, matmul) and an elementwise chain
after the MLP's first matmul (gelu, scale, shift), which a compiled graph fuses into
one pass. The loss is the mean squared distance to a fixed random target.

    PYTHONPATH=python python python/examples/train_block.py [--compile] [--steps 20]
"""

import argparse
import math

import torch

D, HEADS, SEQ, BATCH = 64, 4, 32, 4


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D)
        self.qkv = torch.nn.Linear(D, 3 * D)
        self.proj = torch.nn.Linear(D, D)
        self.ln2 = torch.nn.LayerNorm(D)
        self.fc1 = torch.nn.Linear(D, 4 * D)
        self.fc2 = torch.nn.Linear(4 * D, D)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(D, dim=-1)
        q = q.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        k = k.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        v = v.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // HEADS))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, D)
        x = x + self.proj(y)
        h = self.ln2(x)
        # An elementwise chain after the matmul: gelu, scale, bias-free residual add.
        h = torch.nn.functional.gelu(self.fc1(h)) * 0.5 + 0.1
        return x + self.fc2(h)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(Block(), Block())

    def forward(self, x, target):
        return (self.blocks(x) - target).square().mean()


def data(device="neuron"):
    """The input and the target (seeded: the same every call)."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH, SEQ, D, generator=g)
    t = torch.randn(BATCH, SEQ, D, generator=g)
    return x.to(device), t.to(device)


def fresh_model(device="neuron"):
    """The model with the same initial weights every call."""
    torch.manual_seed(0)
    return Model().to(device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile", action="store_true", help='torch.compile(backend="neuron")')
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    import neuronprof_torch  # noqa: F401  (registers the device)

    model = fresh_model()
    step_fn = torch.compile(model, backend="neuron") if args.compile else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, t = data()
    for step in range(args.steps):
        optimizer.zero_grad(set_to_none=True)
        loss = step_fn(x, t)
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
