"""``torch.neuron.memory``: memory snapshots of the neuron device, with torch.cuda.memory's
names and format, so PyTorch's memory visualizer (``torch.cuda._memory_viz``, and
https://pytorch.org/memory_viz) reads them. The recording and the format are described
in ``csrc/memory.cpp``.

```python
torch.neuron.memory._record_memory_history(max_entries=100000)
train(model)
torch.neuron.memory._dump_snapshot("snap.pickle")
# python -m torch.cuda._memory_viz trace_plot snap.pickle -o snap.html
```
"""

import atexit
import pickle
import sys

from . import _C


def _record_memory_history(
    enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None
) -> None:
    """Records the allocator's history on every neuron device, as
    ``torch.cuda.memory._record_memory_history``: ``enabled`` None stops, ``"state"``
    keeps the frames of live blocks, ``"all"`` also the trace of allocations and frees
    (``alloc``, ``free_requested``, ``free_completed``, ``oom``) up to ``max_entries``
    per device. ``context`` (None, ``"state"``, ``"alloc"``, ``"all"``) says which
    events keep frames, ``stacks`` ``"python"`` or ``"all"`` (Python and C++ frames; the
    C++ ones are slow to symbolize). ``device`` is accepted for torch.cuda's signature:
    the allocator of every device records. Enabling again starts afresh."""
    if enabled is False:
        enabled = None
    elif enabled is True:
        enabled = "all"
    limit = min(int(max_entries), (1 << 63) - 1)
    _C._record_memory_history(enabled, context, stacks, limit)


def _snapshot(device=None) -> dict:
    """The allocator's state and recorded history: ``segments`` (each with its
    ``blocks``) of every device, ``device_traces`` (one list per device), and
    ``allocator_settings``; the format of ``torch.cuda.memory._snapshot``. ``device``
    is accepted for its signature; every device is in the snapshot."""
    return _C._memory_snapshot()


def _dump_snapshot(filename="dump_snapshot.pickle") -> None:
    """Writes :func:`_snapshot` as a pickle, as ``torch.cuda.memory._dump_snapshot``."""
    snapshot = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


@atexit.register
def _stop_recording() -> None:
    # Frames hold Python objects: stop gathering them before the interpreter goes.
    _C._record_memory_history(None, None, "python", 0)


__all__ = ["_dump_snapshot", "_record_memory_history", "_snapshot"]
