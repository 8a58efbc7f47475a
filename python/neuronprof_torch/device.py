"""``torch.neuron``: the device module PyTorch expects of an accelerator backend."""

import torch

from . import _C


def _index(device=None) -> int:
    if device is None:
        return _C.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return device.index if device.index is not None else _C.current_device()


def is_available() -> bool:
    return _C.device_count() > 0


def device_count() -> int:
    return _C.device_count()


def current_device() -> int:
    return _C.current_device()


def set_device(device) -> None:
    _C.set_device(_index(device))


def synchronize(device=None) -> None:
    """Waits until the device's work is done (the modeled completion)."""
    _C.synchronize(_index(device))


def memory_stats(device=None) -> dict:
    return dict(_C.memory_stats(_index(device)))


def memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def empty_cache() -> None:
    for index in range(_C.device_count()):
        _C.empty_cache(index)


# Ops run on the CPU (ATen's CPU kernels through the fallback), so random numbers come
# from the CPU generator: torch.manual_seed already seeds it.
def manual_seed(seed: int) -> None:
    torch.random.default_generator.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    torch.random.default_generator.manual_seed(seed)


def _is_in_bad_fork() -> bool:
    return False


def get_rng_state(device=None):
    return torch.random.get_rng_state()


def set_rng_state(new_state, device=None) -> None:
    torch.random.set_rng_state(new_state)
