"""``torch_neuronx`` on neuronprof's emulated device: the names scripts written for AWS's
TorchNeuron use (python/README.md, "torch_neuronx").

Imported as ``torch_neuronx`` (``neuronprof_torch.neuronx_shim`` puts the name there only
when no real ``torch_neuronx`` is installed). The device itself is ``neuronprof_torch``'s
PrivateUse1 device ``neuron``, so everything here is ``torch.neuron``'s:

- ``Stream(device)``, ``stream(s)`` (``with torch_neuronx.stream(s):``),
  ``current_stream``, ``default_stream``, ``set_stream``, ``Event``: the device's
  queues and events (``torch.neuron.Stream`` …);
- ``synchronize(device=None)``: waits for the device's modeled work;
- ``device_count``, ``current_device``, ``set_device``, ``is_available``;
- ``profiling``: ``NeuronConfig``, ``ProfileMode``, ``NeuronProfiler`` (``profiling.py``).

``__neuronprof__`` is true here (and absent from AWS's package), so code can tell the
emulated device from a real one.
"""

import neuronprof_torch  # noqa: F401  (the device: loaded already when autoloaded)
from neuronprof_torch import device as _device

__neuronprof__ = True
# The package version of neuronprof_torch (the emulated device), not a TorchNeuron release.
__version__ = "0.1.0+neuronprof"

Stream = _device.Stream
Event = _device.Event
StreamContext = _device.StreamContext
stream = _device.stream
current_stream = _device.current_stream
default_stream = _device.default_stream
set_stream = _device.set_stream
synchronize = _device.synchronize
device_count = _device.device_count
current_device = _device.current_device
set_device = _device.set_device
is_available = _device.is_available

from . import profiling  # noqa: E402

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device_count",
    "is_available",
    "profiling",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
]
