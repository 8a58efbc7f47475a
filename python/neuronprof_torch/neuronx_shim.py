"""The module name ``torch_neuronx`` for code written for AWS's TorchNeuron.

Hugging Face's accelerate decides whether a Neuron device is present with
``importlib.util.find_spec("torch_neuronx")`` (``accelerate.utils.imports.
is_neuron_available``), and scripts written for TorchNeuron import
``torch_neuronx`` (streams, ``synchronize``) and ``torch_neuronx.profiling``
(``NeuronConfig``, ``ProfileMode``, ``NeuronProfiler``). The package
``neuronprof_torch.torch_neuronx`` is that surface on the emulated device; this module
makes it importable under the name ``torch_neuronx``.

It never shadows a real ``torch_neuronx``: the finder is appended at the *end* of
``sys.meta_path``, so Python asks it only after every other finder, the standard one
over ``sys.path`` (site-packages) included, found no ``torch_neuronx``. On a machine
with AWS's package installed, ``import torch_neuronx`` imports AWS's.
``NEURONPROF_TORCH_NEURONX=0`` leaves the name alone altogether.
"""

import importlib.abc
import importlib.util
import os
import sys
from pathlib import Path

MODULE = "torch_neuronx"
PACKAGE_DIR = Path(__file__).resolve().parent / "torch_neuronx"


class TorchNeuronxFinder(importlib.abc.MetaPathFinder):
    """Finds ``torch_neuronx`` as ``neuronprof_torch/torch_neuronx`` (its submodules,
    ``torch_neuronx.profiling``, through the package's ``__path__``)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != MODULE:
            return None
        return importlib.util.spec_from_file_location(
            MODULE, PACKAGE_DIR / "__init__.py", submodule_search_locations=[str(PACKAGE_DIR)]
        )


def install() -> bool:
    """Appends the finder to ``sys.meta_path`` (once); false when
    ``NEURONPROF_TORCH_NEURONX=0`` says not to."""
    if os.environ.get("NEURONPROF_TORCH_NEURONX", "").strip() == "0":
        return False
    if not any(isinstance(f, TorchNeuronxFinder) for f in sys.meta_path):
        sys.meta_path.append(TorchNeuronxFinder())
    return True


__all__ = ["MODULE", "TorchNeuronxFinder", "install"]
