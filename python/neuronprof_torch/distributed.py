"""The c10d backend ``neuron`` (python/README.md, "Distributed").

Registered on import (and through the ``torch.distributed.backends`` entry point), so
``dist.init_process_group("neuron")``, ``dist.init_process_group()`` on a neuron device
and ``"cpu:gloo,neuron:neuron"`` all work. One process per rank; ``LOCAL_RANK`` picks
the process's device (``neuron:<LOCAL_RANK>``): every rank process has its own
emulated device, and a node with more local ranks than the profile has logical cores is
refused with an error (two ranks sharing one core would need one timeline for both
processes, which separate emulators do not have).

The backend (``csrc/distributed.cpp``) moves the data with gloo on CPU views of the
device memory and models the time of each collective on the device: see the C++ file.
"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist

NAME = "neuron"


def local_device_index() -> int | None:
    """``LOCAL_RANK`` as a device index (``None`` when unset); an error names the
    profile's core count when there are more local ranks than logical cores."""
    text = os.environ.get("LOCAL_RANK")
    if text is None or text == "":
        return None
    try:
        index = int(text)
    except ValueError:
        raise RuntimeError(f"LOCAL_RANK={text!r} is not a number") from None
    from . import _C

    count = _C.device_count()
    if not 0 <= index < count:
        profile = os.environ.get("NEURONPROF_DEVICE_PROFILE") or "trn2"
        raise RuntimeError(
            f"LOCAL_RANK={index}: the {profile} profile has {count} logical NeuronCores "
            f"(neuron:0..neuron:{count - 1}) and each rank process needs its own; run at "
            f"most {count} processes per node, or pick a profile with more cores "
            "(NEURONPROF_DEVICE_PROFILE=trn2-lnc1 has 8)"
        )
    return index


def _create(options, _pg_options=None):
    """c10d's creator (extended API): a gloo group for the data, one for control
    messages, and the neuron backend over them."""
    from . import _C

    index = local_device_index()
    if index is not None:
        torch.neuron.set_device(index)
    store = options.store
    timeout = options.timeout
    if not isinstance(timeout, timedelta):
        timeout = timedelta(seconds=float(timeout))
    rank, size = options.group_rank, options.group_size
    data = dist.ProcessGroupGloo(dist.PrefixStore("neuron-data/", store), rank, size, timeout)
    control = dist.ProcessGroupGloo(dist.PrefixStore("neuron-ctl/", store), rank, size, timeout)
    ranks = list(options.global_ranks_in_group) or list(range(size))
    if options.group_id == "0":
        # The default group: its rank is this process's rank in the job, the tag of its
        # live-monitoring entry (`neuronprof monitor`, `neuron-top`).
        _C.monitor_set_rank(rank, size)
    return _C.NeuronBackend(
        store, rank, size, data, control, timeout.total_seconds(), ranks
    )


def register() -> None:
    """Registers the backend with c10d (idempotent); the entry point's registrar."""
    from . import _C  # noqa: F401  (builds and loads the extension)

    if NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(NAME, _create, extended_api=True, devices=[NAME])
