"""Driver of torch_kernel_errors.rs: errors of queued kernels on real PyTorch.

Without NEURON_LAUNCH_BLOCKING, launches are asynchronous: errors at the next
synchronizing call, and the process ends with one error never reported. With
NEURON_LAUNCH_BLOCKING=1: errors at the op. Prints one `RESULT {json}` line.
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import neuronprof_torch  # noqa: E402,F401

mode = "blocking" if os.environ.get("NEURON_LAUNCH_BLOCKING") == "1" else "async"
out = {"mode": mode, "blocking_env": os.environ.get("NEURON_LAUNCH_BLOCKING")}
weight = torch.arange(40, dtype=torch.float32).reshape(10, 4).to("neuron")
bad = torch.tensor([1, 12, 3]).to("neuron")
good = torch.tensor([1, 9, 3]).to("neuron")


def caught(fn):
    """(exception type name, message) of what fn raises, or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the test checks the type)
        return [type(e).__name__, str(e)]
    return None


def stream_idle_after_copy():
    """Whether the current stream has finished a 64 MiB host-to-device copy (modeled in
    milliseconds) right after its launch."""
    host = torch.ones(16 << 20)
    on_device = host.to("neuron")  # kept: a free would wait for the copy to end
    idle = torch.neuron.current_stream().query()
    del on_device
    return idle


out["idle_after_launch"] = stream_idle_after_copy()
torch.neuron.synchronize()

# An argument error (a shape check the meta kernel makes too) raises at the op in both modes.
out["argument_error"] = caught(lambda: torch.index_select(weight, 5, good))

if mode == "blocking":
    out["at_op"] = caught(lambda: F.embedding(bad, weight))
    out["sync_after"] = caught(torch.neuron.synchronize)
else:
    # The launch returns; the program runs on with the (zero) result.
    results = {}

    def launch():
        y = F.embedding(bad, weight)
        results["shape"] = list(y.shape)
        results["then"] = list((y * 2 + 1).shape)

    out["at_op"] = caught(launch)
    out["launched_shape"] = results.get("shape")
    out["ran_on"] = results.get("then")
    out["at_sync"] = caught(torch.neuron.synchronize)
    out["second_sync"] = caught(torch.neuron.synchronize)
    # The device keeps working after the error.
    out["after_values"] = F.embedding(good, weight).cpu().tolist()
    out["expected_values"] = F.embedding(good.cpu(), weight.cpu()).tolist()
    # Each synchronizing call reports one.
    index = torch.tensor([[0, 17]]).to("neuron")
    out["at_item"] = caught(lambda: torch.gather(weight, 0, index).sum().item())
    out["at_cpu"] = caught(lambda: torch.index_select(weight, 0, bad).cpu())
    event = torch.neuron.Event()

    def event_sync():
        torch.index_select(weight, 0, bad)
        event.record()
        event.synchronize()

    out["at_event"] = caught(event_sync)

    def stream_sync():
        torch.index_select(weight, 0, bad)
        torch.neuron.current_stream().synchronize()

    out["at_stream"] = caught(stream_sync)

    def event_query():
        torch.index_select(weight, 0, bad)
        e = torch.neuron.Event()
        e.record()
        e.query()

    out["at_event_query"] = caught(event_query)

    def stream_query():
        torch.index_select(weight, 0, bad)
        torch.neuron.current_stream().query()

    out["at_stream_query"] = caught(stream_query)
    # With no error pending, a query answers (and reports nothing).
    out["query_clean"] = caught(lambda: torch.neuron.current_stream().query())

    def two_then_sync():
        torch.index_select(weight, 0, bad)
        torch.index_select(weight, 0, bad)
        torch.accelerator.synchronize()

    out["two_errors"] = caught(two_then_sync)
    out["clean_after"] = caught(torch.neuron.synchronize)
    # One left for the end of the process: printed, not lost.
    torch.index_select(weight, 0, torch.tensor([-20]).to("neuron"))
print("RESULT " + json.dumps(out), flush=True)
