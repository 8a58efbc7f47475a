"""Driver of the FFT test (torch_fft.rs): every ``torch.fft`` function (and ``stft`` /
``istft``, which are made of them) on ``neuron`` and on the CPU, float32 and float64,
real and complex inputs, and the values compared; then one profiled call, whose trace
must show the FFT kernels on the device. Prints one ``RESULT {json}`` line.

argv: trace folder.
"""

import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import neuronprof_torch  # noqa: F401

trace_dir = sys.argv[1]
torch.manual_seed(0)


def real(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


def cplx(*shape, dtype=torch.complex64):
    return torch.randn(*shape, dtype=dtype)


fft = torch.fft
# (name, function, CPU inputs): every function of torch.fft.
CASES = [
    ("fft", lambda x: fft.fft(x), [real(64)]),
    ("fft complex n dim norm", lambda x: fft.fft(x, n=48, dim=0, norm="ortho"), [cplx(32, 5)]),
    ("ifft", lambda x: fft.ifft(x), [cplx(8, 32)]),
    ("fft2", lambda x: fft.fft2(x), [real(3, 16, 16)]),
    ("ifft2", lambda x: fft.ifft2(x, s=(8, 12)), [cplx(2, 10, 10)]),
    ("fftn", lambda x: fft.fftn(x), [real(4, 6, 8)]),
    ("ifftn", lambda x: fft.ifftn(x, dim=(0, 2), norm="forward"), [cplx(4, 6, 8)]),
    ("rfft", lambda x: fft.rfft(x), [real(5, 64)]),
    ("irfft", lambda x: fft.irfft(x, n=64), [cplx(5, 33)]),
    ("rfft2", lambda x: fft.rfft2(x), [real(2, 16, 20)]),
    ("irfft2", lambda x: fft.irfft2(x), [cplx(2, 16, 11)]),
    ("rfftn", lambda x: fft.rfftn(x, norm="ortho"), [real(4, 8, 6)]),
    ("irfftn", lambda x: fft.irfftn(x, s=(4, 8, 10)), [cplx(4, 8, 6)]),
    ("hfft", lambda x: fft.hfft(x), [cplx(33)]),
    ("ihfft", lambda x: fft.ihfft(x), [real(64)]),
    ("hfft2", lambda x: fft.hfft2(x), [cplx(8, 9)]),
    ("ihfft2", lambda x: fft.ihfft2(x), [real(8, 16)]),
    ("hfftn", lambda x: fft.hfftn(x), [cplx(4, 6, 5)]),
    ("ihfftn", lambda x: fft.ihfftn(x), [real(4, 6, 8)]),
    ("fftshift", lambda x: fft.fftshift(x), [real(6, 7)]),
    ("ifftshift", lambda x: fft.ifftshift(x, dim=1), [cplx(6, 7)]),
    ("fftfreq", lambda d: fft.fftfreq(9, d=0.5, device=d), "device"),
    ("rfftfreq", lambda d: fft.rfftfreq(16, device=d), "device"),
    ("fft float64", lambda x: fft.fft(x), [real(31, dtype=torch.float64)]),
    ("rfft of a transposed view", lambda x: fft.rfft(x.t()), [real(16, 6)]),
    ("fft of a conjugate view", lambda x: fft.fft(x.conj()), [cplx(16)]),
    (
        "stft",
        lambda x, w: torch.stft(x, 32, hop_length=8, window=w, return_complex=True),
        [real(2, 256), torch.hann_window(32)],
    ),
    (
        "istft",
        lambda x, w: torch.istft(x, 32, hop_length=8, window=w, length=256),
        [torch.stft(real(2, 256), 32, hop_length=8, window=torch.hann_window(32), return_complex=True),
         torch.hann_window(32)],
    ),
]


def run(fn, inputs, device):
    if inputs == "device":
        return fn(device)
    return fn(*[t.to(device) for t in inputs])


cases = []
for name, fn, inputs in CASES:
    case = {"name": name}
    cpu = run(fn, inputs, "cpu")
    try:
        got = run(fn, inputs, "neuron")
        torch.neuron.synchronize()
    except Exception as e:  # noqa: BLE001  (an unsupported op must be an exception)
        case["error"] = f"{type(e).__name__}: {e}"
        cases.append(case)
        continue
    back = got.cpu()
    case["device"] = str(got.device)
    case["dtype"] = [str(cpu.dtype), str(back.dtype)]
    case["shape"] = [list(cpu.shape), list(back.shape)]
    case["equal"] = bool(torch.equal(back, cpu))
    case["max_abs_diff"] = float((back - cpu).abs().max()) if back.shape == cpu.shape else None
    cases.append(case)

# One profiled FFT pipeline: its kernels must be device rows.
x = real(8, 1024).to("neuron")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
    spectrum = fft.rfft(x)
    y = fft.irfft(spectrum * spectrum.conj(), n=1024)
    torch.neuron.synchronize()
path = f"{trace_dir}/fft.pt.trace.json"
prof.export_chrome_trace(path)
print("RESULT " + json.dumps({"cases": cases, "trace": path}))
