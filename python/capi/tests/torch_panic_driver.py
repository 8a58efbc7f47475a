"""Driver of torch_capi_panic.rs: an entry point of the C ABI that panics (asked to by
NEURONPROF_CAPI_PANIC, the test's choice) raises a Python exception at the call that
reached it, and the process goes on. Prints one `RESULT {json}` line.
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import neuronprof_torch  # noqa: E402,F401

out = {"asked": os.environ.get("NEURONPROF_CAPI_PANIC")}
x = torch.ones(4, 4).to("neuron")
try:
    torch.neuron.memory._snapshot()
    out["snapshot"] = None
except Exception as e:  # noqa: BLE001  (the test checks the type)
    out["snapshot"] = [type(e).__name__, str(e)]
# The device still works after the panic.
out["after"] = (x + x).cpu().sum().item()
print("RESULT " + json.dumps(out), flush=True)
