"""``torch.neuron``: the device module PyTorch expects of an accelerator backend, with
torch.cuda's names: devices, streams and events, synchronization, memory statistics,
seeds. Streams and events are the generic ``torch.Stream`` / ``torch.Event`` (they go
through the extension's device guard); ``torch.neuron.Stream()`` and
``torch.neuron.Event()`` make them as ``torch.cuda.Stream()`` and ``torch.cuda.Event()``
do.
"""

import atexit
import sys

import torch

from . import _C
from . import memory  # noqa: F401  (torch.neuron.memory: snapshots)

# PyTorch's device type code of PrivateUse1 (c10::DeviceType::PrivateUse1).
_DEVICE_TYPE = 20


def _index(device=None) -> int:
    if device is None:
        return _C.current_device()
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "neuron":
            raise ValueError(f"expected a neuron device, got {device}")
        return device.index if device.index is not None else _C.current_device()
    raise TypeError(f"expected a neuron device, an index or None, got {device!r}")


def is_available() -> bool:
    return _C.device_count() > 0


def is_initialized() -> bool:
    return True


def init() -> None:
    """The runtime starts when the package is imported; nothing to do."""


def device_count() -> int:
    return _C.device_count()


def current_device() -> int:
    return _C.current_device()


def set_device(device) -> None:
    _C.set_device(_index(device))


class device:
    """Context manager that makes ``device`` the current neuron device meanwhile."""

    def __init__(self, device):
        self.index = _index(device) if device is not None else -1
        self.previous = -1

    def __enter__(self):
        if self.index >= 0:
            self.previous = _C.current_device()
            _C.set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.index >= 0:
            _C.set_device(self.previous)
        return False


def synchronize(device=None) -> None:
    """Waits until the device's work on every stream is done (the modeled completion);
    raises the error of a kernel that failed since the last synchronization (once: see
    csrc/errors.cpp)."""
    _C.synchronize(_index(device))


@atexit.register
def _report_unreported_errors() -> None:
    """An error of a queued kernel that no synchronizing call reported is printed when
    the process ends, so none is lost."""
    while (message := _C._take_pending_error(-1)) is not None:
        print(f"{message}\n  (never reported: no synchronizing call followed it)", file=sys.stderr)


# ---------------------------------------------------------------------------------
# Streams and events.


class _NeuronType(type):
    """Makes ``isinstance(x, torch.neuron.Stream)`` true for a ``torch.Stream`` of a
    neuron device (and likewise for events): the factories below return PyTorch's own
    objects, because PyTorch's stream and event methods accept no subclass of them."""

    def __instancecheck__(cls, obj):
        base = torch.Stream if cls.__name__ == "Stream" else torch.Event
        return isinstance(obj, base) and obj.device.type == "neuron"


class Stream(metaclass=_NeuronType):
    """An in-order queue of device work, as ``torch.cuda.Stream``.

    ``Stream(device=None, priority=0)`` takes a stream from the device's pool of user
    streams (round-robin over 32, like CUDA's pool; the priority has no effect on the
    timing model) and returns it as a ``torch.Stream`` (``query``, ``synchronize``,
    ``wait_event``, ``wait_stream``, ``record_event``, ``with stream:``). Each stream is
    its own row of the device in a trace.
    """

    def __new__(cls, device=None, priority=0, **kwargs):
        if kwargs:
            # An existing stream: stream_id, device_index, device_type.
            return torch.Stream(**kwargs)
        return torch.Stream(device=torch.device("neuron", _index(device)), priority=priority)


def current_stream(device=None) -> torch.Stream:
    """This thread's current stream of ``device``."""
    return torch.accelerator.current_stream(_index(device))


def default_stream(device=None) -> torch.Stream:
    """The default stream of ``device`` (stream 0)."""
    return torch.Stream(stream_id=0, device_index=_index(device), device_type=_DEVICE_TYPE)


def set_stream(stream) -> None:
    """Makes ``stream`` this thread's current stream of its device."""
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """Makes ``stream`` current (and its device current) meanwhile; ``None`` does
    nothing. As ``torch.cuda.StreamContext``."""

    def __init__(self, stream):
        self.stream = stream
        self.saved = None

    def __enter__(self):
        if self.stream is None:
            return None
        index = self.stream.device_index
        self.saved = (_C.current_device(), current_stream(index), current_stream())
        if index != _C.current_device():
            _C.set_device(index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None or self.saved is None:
            return False
        device, on_stream_device, on_current = self.saved
        set_stream(on_stream_device)
        _C.set_device(device)
        set_stream(on_current)
        return False


def stream(stream) -> StreamContext:
    """``with torch.neuron.stream(s):`` — work in the block goes to ``s``."""
    return StreamContext(stream)


class Event(metaclass=_NeuronType):
    """A point in a stream's work, as ``torch.cuda.Event``, returned as a ``torch.Event``
    of the current neuron device: ``record``, ``wait``, ``query``, ``synchronize``,
    ``elapsed_time`` (milliseconds of modeled device time; both events need
    ``enable_timing=True``)."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        return torch.Event(
            device=torch.device("neuron", _C.current_device()),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )


# ---------------------------------------------------------------------------------
# Memory.


_POOLS = ("all", "small_pool", "large_pool")


def memory_stats(device=None) -> "collections.OrderedDict[str, int]":
    """The device allocator's statistics with torch.cuda.memory_stats' keys, sorted:
    ``{stat}.{all|small_pool|large_pool}.{current|peak|allocated|freed}`` for
    ``allocation``, ``segment``, ``active``, ``inactive_split`` (counts) and
    ``allocated_bytes``, ``reserved_bytes``, ``active_bytes``, ``inactive_split_bytes``,
    ``requested_bytes``, then ``num_alloc_retries``, ``num_ooms``,
    ``num_sync_all_streams``, ``num_device_alloc``, ``num_device_free`` and
    ``max_split_size`` (-1: no limit). A block freed while another stream still uses it
    (``Tensor.record_stream``) leaves ``allocated_bytes`` at once and ``active_bytes``
    when that stream passes the free. ``oversize_*`` are 0: without a max split size no
    block is oversize. Read from the same allocator as
    ``torch.accelerator.memory.memory_stats``."""
    import collections

    raw = _C._device_stats(_index(device))
    flat = []
    for name, value in raw.items():
        if name == "capacity_bytes":
            continue
        if isinstance(value, list):
            for pool, stat in zip(_POOLS, value):
                flat.extend((f"{name}.{pool}.{metric}", n) for metric, n in stat.items())
        else:
            flat.append((name, value))
    for name in ("oversize_allocations", "oversize_segments"):
        flat.extend((f"{name}.{metric}", 0) for metric in ("current", "peak", "allocated", "freed"))
    flat.append(("max_split_size", -1))
    flat.sort()
    return collections.OrderedDict(flat)


def memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None) -> None:
    """Sets the peaks of ``memory_stats`` (allocated, reserved) to the current values."""
    _C.reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device=None) -> None:
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    """Zeroes the counts of ``memory_stats`` (allocations, frees, out-of-memory errors)."""
    _C.reset_accumulated_memory_stats(_index(device))


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device's HBM, as ``torch.cuda.mem_get_info``: free is
    the capacity less what the caching allocator reserved (this process is the device's
    only user)."""
    raw = _C._device_stats(_index(device))
    total = raw["capacity_bytes"]
    return total - raw["reserved_bytes"][0]["current"], total


class _NeuronDeviceProperties:
    """What ``get_device_properties`` returns (torch.cuda's ``_CudaDeviceProperties``
    has the same ``name`` and ``total_memory``): the device's ``deviceProperties`` entry
    of the traces. Trainium has no CUDA compute capability, so there is no
    ``major``/``minor``; ``peak_tflops`` is per dtype."""

    def __init__(self, entry: dict):
        self.index = entry["id"]
        self.name = entry["name"]
        self.total_memory = entry["totalGlobalMem"]
        self.type = entry["deviceType"]
        self.profile = entry["profile"]
        self.core_version = entry["coreVersion"]
        self.lnc = entry["lnc"]
        self.peak_tflops = dict(entry["peakTflops"])
        self.compute_queues = entry["computeQueues"]
        self.collective_queues = entry["collectiveQueues"]
        self.tensor_op_queues = entry["tensorOpQueues"]

    def __repr__(self):
        return (
            f"_NeuronDeviceProperties(name='{self.name}', profile='{self.profile}', "
            f"lnc={self.lnc}, total_memory={self.total_memory // (1 << 20)}MB, "
            f"peak_tflops={self.peak_tflops})"
        )


def get_device_properties(device=None) -> _NeuronDeviceProperties:
    import json

    return _NeuronDeviceProperties(json.loads(_C._device_properties(_index(device))))


def get_device_name(device=None) -> str:
    """The device's name, as in its trace rows: ``NeuronCore 0 (trn2, LNC=2)``."""
    return get_device_properties(device).name


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bf16 is a native dtype of every NeuronCore (the Tensor engine's fast path)."""
    return True


def empty_cache() -> None:
    """Releases the cached, fully free segments of every device (a block freed while
    another stream still uses it stays until that stream passes it)."""
    for index in range(_C.device_count()):
        _C.empty_cache(index)


# Ops run on the CPU (ATen's CPU kernels through the fallback), so random numbers come
# from the CPU generator: torch.manual_seed already seeds it.
def manual_seed(seed: int) -> None:
    torch.random.default_generator.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    torch.random.default_generator.manual_seed(seed)


def seed() -> None:
    torch.random.default_generator.seed()


def seed_all() -> None:
    torch.random.default_generator.seed()


def initial_seed() -> int:
    return torch.random.default_generator.initial_seed()


def _is_in_bad_fork() -> bool:
    return False


def get_rng_state(device=None):
    return torch.random.get_rng_state()


def set_rng_state(new_state, device=None) -> None:
    torch.random.set_rng_state(new_state)


def get_rng_state_all():
    return [torch.random.get_rng_state() for _ in range(_C.device_count())]


def set_rng_state_all(new_states) -> None:
    for state in new_states:
        torch.random.set_rng_state(state)


__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "get_device_properties",
    "init",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "mem_get_info",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
]
