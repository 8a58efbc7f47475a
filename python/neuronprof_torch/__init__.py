"""The emulated Trainium device ``neuron`` for PyTorch, with a Kineto plugin.

``import neuronprof_torch`` is all a script adds (or nothing, with PyTorch's backend
autoloading, once the package is installed: it registers a ``torch.backends`` entry
point). Then ``device="neuron"`` works like any accelerator, ``torch.neuron`` and
``torch.accelerator`` know the device, and ``torch.profiler`` with
``ProfilerActivity.PrivateUse1`` records the device's kernels, copies, runtime calls
and memory. See python/README.md for the design.

Environment: ``NEURONPROF_DEVICE_PROFILE`` (``trn2`` by default; ``trn2-lnc1``,
``trn3``, ...) picks the emulated device; ``NEURONPROF_DETAIL=instructions`` adds each
kernel's engine instructions and DMA transfers to the traces (``kernels`` by default);
the build's variables are in ``_build``.
"""

import os

import torch

from . import _build

_C = _build.load(verbose=bool(os.environ.get("NEURONPROF_TORCH_VERBOSE")))
_device_count = _C._init(os.environ.get("NEURONPROF_DEVICE_PROFILE", ""))

from . import device as _device_module  # noqa: E402  (needs _C)
from . import profiler as _profiler  # noqa: E402

if torch._C._get_privateuse1_backend_name() != "neuron":
    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", _device_module)
    torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
# PyTorch's host events onto the cut timeline (profiler.py), and no Kineto CUDA-probe
# error line in profiles.
_profiler.install()
_profiler.quiet_kineto_device_probe()

if torch.distributed.is_available():
    from . import distributed as _distributed  # noqa: E402

    _distributed.register()
    # One process per rank: LOCAL_RANK (torchrun's) is the process's device.
    # (An out-of-range LOCAL_RANK is refused by init_process_group, not by the import.)
    try:
        _local = _distributed.local_device_index()
    except RuntimeError:
        _local = None
    if _local is not None:
        torch.neuron.set_device(_local)


# torch.compile(backend="neuron") (compile.py); Inductor's device hook.
from . import compile as _compile  # noqa: E402

_compile.install()

# The module name `torch_neuronx` (TorchNeuron's), unless a real one is installed: how
# accelerate and transformers' Trainer find the device (neuronx_shim.py).
from . import neuronx_shim as _neuronx_shim  # noqa: E402

_neuronx_shim.install()


def _autoload():
    """Entry point of PyTorch's backend autoloading (importing is all it takes)."""


__all__ = ["device_count"]


def device_count() -> int:
    """Number of emulated devices (logical NeuronCores)."""
    return _device_count
