"""Driver of the convolution and RNN test (torch_conv_rnn.rs): convolutions (1-3 d,
transposed, groups, dilation, stride, every padding mode, with and without bias) and
RNNs (nn.LSTM, nn.GRU, LSTMCell, GRUCell) run forward and backward on ``neuron`` and on
the CPU from the same weights and inputs, and their outputs and gradients are compared;
then a small CNN + LSTM step is profiled. Prints one ``RESULT {json}`` line.

argv: trace folder.
"""

import copy
import json
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

import neuronprof_torch  # noqa: F401

trace_dir = sys.argv[1]

# (name, module factory, input shape)
CONVS = [
    ("conv1d", lambda: nn.Conv1d(4, 8, 3), (2, 4, 32)),
    ("conv1d stride dilation no bias", lambda: nn.Conv1d(4, 6, 5, stride=2, dilation=2, bias=False), (3, 4, 40)),
    ("conv1d groups reflect", lambda: nn.Conv1d(8, 8, 3, groups=4, padding=1, padding_mode="reflect"), (2, 8, 20)),
    ("conv2d", lambda: nn.Conv2d(3, 16, 3, padding=1), (2, 3, 16, 16)),
    ("conv2d stride 2 same groups", lambda: nn.Conv2d(8, 12, 3, padding="same", groups=4), (2, 8, 9, 9)),
    ("conv2d dilation replicate", lambda: nn.Conv2d(4, 4, 3, dilation=2, padding=2, padding_mode="replicate"), (1, 4, 12, 12)),
    ("conv2d circular stride", lambda: nn.Conv2d(3, 5, (3, 5), stride=(2, 1), padding=(1, 2), padding_mode="circular"), (2, 3, 10, 11)),
    ("conv2d depthwise", lambda: nn.Conv2d(6, 6, 3, groups=6, padding=1), (2, 6, 8, 8)),
    ("conv2d 1x1 channels_last", lambda: nn.Conv2d(16, 32, 1), (2, 16, 7, 7)),
    ("conv3d", lambda: nn.Conv3d(2, 4, 3, padding=1), (1, 2, 6, 6, 6)),
    ("conv3d stride groups", lambda: nn.Conv3d(4, 4, (1, 3, 3), stride=(1, 2, 2), groups=2), (2, 4, 3, 9, 9)),
    ("conv_transpose1d", lambda: nn.ConvTranspose1d(4, 6, 4, stride=2, padding=1), (2, 4, 16)),
    ("conv_transpose2d", lambda: nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1), (2, 8, 8, 8)),
    ("conv_transpose2d groups dilation", lambda: nn.ConvTranspose2d(6, 9, 3, groups=3, dilation=2, bias=False), (1, 6, 7, 7)),
    ("conv_transpose3d", lambda: nn.ConvTranspose3d(4, 2, 2, stride=2), (1, 4, 3, 4, 4)),
]

RNNS = [
    ("lstm 2 layers", lambda: nn.LSTM(10, 16, num_layers=2, batch_first=True), (4, 7, 10)),
    ("lstm bidirectional no bias", lambda: nn.LSTM(6, 8, bidirectional=True, bias=False), (5, 3, 6)),
    ("gru 2 layers", lambda: nn.GRU(10, 12, num_layers=2, batch_first=True), (4, 7, 10)),
    ("gru bidirectional", lambda: nn.GRU(6, 8, bidirectional=True), (5, 3, 6)),
    ("lstm cell", lambda: nn.LSTMCell(10, 16), (4, 10)),
    ("gru cell", lambda: nn.GRUCell(10, 16), (4, 10)),
]


def compare(name, module, shape, channels_last=False):
    torch.manual_seed(sum(map(ord, name)))
    cpu = module()
    dev = copy.deepcopy(cpu).to("neuron")
    x = torch.randn(*shape)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    xs = {"cpu": x.clone().requires_grad_(), "neuron": x.to("neuron").requires_grad_()}
    outs = {}
    for where, m in (("cpu", cpu), ("neuron", dev)):
        out = m(xs[where])
        if isinstance(out, tuple):  # RNNs: (output, hidden)
            flat = [out[0]] + (list(out[1]) if isinstance(out[1], tuple) else [out[1]])
        else:
            flat = [out]
        # A loss that weighs every element differently, so every gradient path matters.
        loss = sum((o * torch.linspace(-1, 1, o.numel(), device=o.device).view_as(o)).sum() for o in flat)
        loss.backward()
        outs[where] = [o.detach().cpu() for o in flat] + [xs[where].grad.cpu()] + [
            p.grad.cpu() for p in m.parameters()
        ]
    pairs = list(zip(outs["cpu"], outs["neuron"]))
    diffs = [float((a - b).abs().max()) for a, b in pairs]
    scale = [float(a.abs().max()) for a, _ in pairs]
    return {
        "name": name,
        "tensors": len(pairs),
        "equal": all(torch.equal(a, b) for a, b in pairs),
        "max_abs_diff": max(diffs),
        "max_rel_diff": max(d / s if s > 0 else d for d, s in zip(diffs, scale)),
        "output_device": "neuron",
    }


cases = []
for name, factory, shape in CONVS:
    try:
        cases.append(compare(name, factory, shape, channels_last="channels_last" in name))
    except Exception as e:  # noqa: BLE001
        cases.append({"name": name, "error": f"{type(e).__name__}: {e}"})
for name, factory, shape in RNNS:
    try:
        cases.append(compare(name, factory, shape))
    except Exception as e:  # noqa: BLE001
        cases.append({"name": name, "error": f"{type(e).__name__}: {e}"})


class Net(nn.Module):
    """A small audio-style front end: convolutions, then an LSTM, then a GRU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.ConvTranspose2d(8, 4, 2, stride=2))
        self.lstm = nn.LSTM(4 * 16, 32, batch_first=True)
        self.gru = nn.GRU(32, 16, batch_first=True)

    def forward(self, x):
        h = self.conv(x)  # (B, 4, 16, T)
        h = h.flatten(1, 2).transpose(1, 2)  # (B, T, 64)
        h, _ = self.lstm(h)
        h, _ = self.gru(h)
        return h.pow(2).mean()


torch.manual_seed(0)
net = Net().to("neuron")
opt = torch.optim.SGD(net.parameters(), lr=0.1)
batch = torch.randn(2, 1, 8, 12).to("neuron")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
    loss = net(batch)
    loss.backward()
    opt.step()
    torch.neuron.synchronize()
path = f"{trace_dir}/conv_rnn.pt.trace.json"
prof.export_chrome_trace(path)
print("RESULT " + json.dumps({"cases": cases, "loss": float(loss.detach()), "trace": path}))
