"""The warp: PyTorch's own host events onto the emulator's cut timeline.

The extension computes the device's numerics (and places its kernels) on the host
threads inside process-wide *cuts*: while one is open the process timeline stands still,
so the device's records and our runtime calls are on ``monotonic - cut``. PyTorch's
profiler stamps its host events with the real clock. Two places put them on the cut
timeline (``warped(t) = t - cut before t``; an instant inside a cut maps to its start):

- every trace PyTorch writes: ``torch.autograd.profiler.profile.export_chrome_trace``
  (which ``torch.profiler.profile.export_chrome_trace``, ``tensorboard_trace_handler``,
  the ``.gz`` path and the Python exporter, ``use_python_export=True``, all go through)
  is followed by a streaming rewrite of the file in Rust (``_C._warp_trace_file``): the
  ``ts``/``dur`` of every event except the plugin's (``privateuse1_runtime``, ``kernel``,
  ``gpu_memcpy``, ``gpu_memset``, ``gpu_user_annotation``, ``ac2g``), nothing else
  but one top-level ``neuronprof_cut`` member saying what was done;
- ``prof.events()`` / ``prof.key_averages()``: the ``FunctionEvent``s PyTorch parses
  from its results (``_parse_kineto_results``) get warped host time ranges, so a
  printed table shows host time without the numerics too.

When ``torch.profiler.profile`` stops a trace (``_KinetoProfile.stop_trace``, also each
cycle of a schedule), a process that compiled graphs adds the compile counts as the
trace's top-level ``neuron_compile`` member (``compile.trace_metadata``) with
``add_metadata_json``, PyTorch's own way to put metadata in a trace (Kineto writes it at
the top level, as it writes ``distributedInfo``).
"""

import ctypes
import os
import sys
import warnings

import torch
from torch.autograd import DeviceType
from torch.autograd import profiler as _autograd_profiler
from torch.autograd.profiler_util import Interval

from . import _C

# Kineto activity types of the plugin's activities (already on the cut timeline).
PLUGIN_ACTIVITY_TYPES = frozenset(
    {"privateuse1_runtime", "kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
)

# PyTorch's host ops: left out where they lie inside one cut (warp.rs's HOST_OP_CATEGORIES).
HOST_OP_ACTIVITY_TYPES = frozenset({"cpu_op", "python_function"})


def warp_trace(path) -> dict:
    """Warps the host events of the trace PyTorch wrote at ``path`` in place; returns
    counts (events, warped, kept, inexact, cut_ns, engine_rows, engine_rows_dropped,
    host_ops_in_cuts). A trace warped before is refused."""
    return _C._warp_trace_file(os.fspath(path))


def _warp_function_events(events, trace_start_ns: int) -> list:
    """Puts the host FunctionEvents on the cut timeline and returns the events without
    the host ops that lay inside one cut (the emulator's own, as the trace file leaves
    them out: ``python/capi/src/warp.rs``); the tree is built from the list later."""
    host = [
        fe
        for fe in events
        if fe.device_type == DeviceType.CPU and fe.activity_type not in PLUGIN_ACTIVITY_TYPES
    ]
    if not host:
        return events
    values = []
    for fe in host:
        values.append(trace_start_ns + round(fe.time_range.start * 1000))
        values.append(trace_start_ns + round(fe.time_range.end * 1000))
    warped, inside = _C._warp_unix_intervals(values)
    left_out = set()
    for i, fe in enumerate(host):
        if inside[i] and fe.activity_type in HOST_OP_ACTIVITY_TYPES:
            left_out.add(id(fe))
            continue
        start = (warped[2 * i] - trace_start_ns) / 1000
        end = (warped[2 * i + 1] - trace_start_ns) / 1000
        fe.time_range = Interval(start, end)
    if not left_out:
        return events
    return [fe for fe in events if id(fe) not in left_out]


_OPENMP_WARNED = False


def _warn_spinning_openmp(path) -> None:
    """Once per process: the numerics of every op run on the host's OpenMP threads, which
    by default spin for a while after each op (libgomp's ``OMP_WAIT_POLICY``, read when
    it loads); spinning threads take CPU time from the host threads' own work between
    ops, which is not cut and so shows as host time (python/README.md, "The OpenMP
    threads")."""
    global _OPENMP_WARNED
    if _OPENMP_WARNED or torch.get_num_threads() < 2:
        return
    if os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE":
        return
    _OPENMP_WARNED = True
    warnings.warn(
        f"neuron: {path}: OMP_WAIT_POLICY is not PASSIVE, so the OpenMP threads computing "
        "the emulator's numerics spin after each op and take CPU time from this "
        "process's own host work, which the trace then shows as host time (on 2 cores, "
        "a GEMM step that keeps the device 96 % busy read 34-90 % in 5 of 14 runs). "
        "Start Python with OMP_WAIT_POLICY=PASSIVE.",
        stacklevel=3,
    )


def install() -> None:
    """Wraps PyTorch's trace export and result parsing (once)."""
    profile = _autograd_profiler.profile
    if getattr(profile, "_neuronprof_warp", False):
        return
    export = profile.export_chrome_trace
    parse = profile._parse_kineto_results

    def export_chrome_trace(self, path, *args, **kwargs):
        result = export(self, path, *args, **kwargs)
        done = warp_trace(path)
        _warn_spinning_openmp(path)
        dropped = done.get("engine_rows_dropped", 0)
        if dropped:
            warnings.warn(
                f"neuron: {path}: the profiled window had {dropped} more engine "
                f"instruction/DMA rows than the extension keeps (NEURONPROF_DETAIL="
                f"instructions keeps the first 1,000,000); the trace has "
                f"{done.get('engine_rows', 0)} of them, and every kernel",
                stacklevel=2,
            )
        return result

    def _parse_kineto_results(self, result, *args, **kwargs):
        events = parse(self, result, *args, **kwargs)
        return _warp_function_events(events, result.trace_start_ns())

    export_chrome_trace.__doc__ = export.__doc__
    export_chrome_trace.__wrapped__ = export
    _parse_kineto_results.__wrapped__ = parse
    profile.export_chrome_trace = export_chrome_trace
    profile._parse_kineto_results = _parse_kineto_results
    profile._neuronprof_warp = True
    _install_compile_metadata()


def _install_compile_metadata() -> None:
    from torch.profiler import profiler as _torch_profiler

    kineto = _torch_profiler._KinetoProfile
    stop = kineto.stop_trace

    def stop_trace(self) -> None:
        if self.profiler is not None:
            from . import compile as _compile

            meta = _compile.trace_metadata_json()
            if meta is not None:
                self.add_metadata_json(_compile.TRACE_KEY, meta)
        return stop(self)

    stop_trace.__doc__ = stop.__doc__
    stop_trace.__wrapped__ = stop
    kineto.stop_trace = stop_trace


# libkineto::devicePropertiesJson(), exported by libtorch_cpu (returns a std::string).
_KINETO_DEVICE_PROBE = "_ZN9libkineto20devicePropertiesJsonB5cxx11Ev"


def quiet_kineto_device_probe() -> bool:
    """Runs Kineto's CUDA device probe once, with standard error sent to /dev/null.

    The probe asks the CUDA runtime for devices and logs an ERROR line
    (``gpuGetDeviceCount failed with code 35``) when there is none: PyPI's CUDA wheel on
    a machine without a GPU. It runs once per process and keeps its answer, so running it
    here, at import, keeps the line out of every profile of a normal run (the wheel
    exports no way to set Kineto's log level). Output other threads write to standard
    error during the probe is lost. Returns whether the probe was found.
    """
    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        probe = getattr(lib, _KINETO_DEVICE_PROBE)
    except (OSError, AttributeError):
        return False
    probe.restype = None
    probe.argtypes = [ctypes.c_void_p]
    # Room for the std::string the probe returns (32 bytes in libstdc++), destroyed by
    # nobody: its text is a few hundred bytes at most, once.
    result = ctypes.create_string_buffer(64)
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        probe(result)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
    return True


__all__ = ["PLUGIN_ACTIVITY_TYPES", "install", "quiet_kineto_device_probe", "warp_trace"]

