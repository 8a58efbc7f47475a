"""``torch_neuronx.profiling``: TorchNeuron's profiling configuration on the emulated device.

As AWS documents it (Neuron Explorer, "Capture PyTorch profiles"; facts in
shared/reference/neuron-explorer.md), a script passes a ``NeuronConfig`` to
``torch.profiler.profile`` as its ``experimental_config`` and a ``NeuronProfiler``'s
``export_trace`` as its ``on_trace_ready``::

    from torch_neuronx.profiling import NeuronConfig, ProfileMode, NeuronProfiler

    config = NeuronConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME],
                          profile_output_dir="./profile_output")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                 experimental_config=config,
                 on_trace_ready=NeuronProfiler(config).export_trace):
        ...

What each mode means here (what the emulator records; the files a real device writes,
``.ntff``/``.neff``/``ntrace.pb``/``*.pb``, have no published schema, so everything goes
into the one ``trace.json`` our tools read):

- ``DEVICE``: each kernel's engine instructions and DMA transfers, for the length of the
  session (``NEURONPROF_DETAIL=instructions`` for the whole process): the
  ``neuron_instruction`` / ``neuron_dma`` rows under their kernels. Without it the
  session records kernels only (whatever ``NEURONPROF_DETAIL`` says).
- ``RUNTIME``: the runtime calls on the host threads (``privateuse1_runtime``: launches,
  synchronizations, copies' waits) and their flows to the device rows. Without it they
  are left out of the trace (the device rows stay).
- ``CPU_UTIL``: ``CPU utilization`` counters (``ph: "C"``, percent per logical CPU and
  in total, and this process's share), sampled from ``/proc`` every
  ``SAMPLE_INTERVAL_S`` during the session.
- ``HOST_MEMORY``: ``Host memory`` counters (this process's resident bytes, the system's
  used bytes), sampled alike.

The counters are the real machine's: the emulator computes the device's numerics on
this host, and keeps the device's memory in host memory, so both show in them. Their
instants are put on the trace's timeline (the cut timeline: python/README.md, "The cut
and the warp") like PyTorch's own events.

``capture_enabled_for_nc`` ("0,1,2-5") keeps only the device rows of those logical
cores; ``max_events_per_nc`` keeps the first that many device rows per core (the trace's
``neuron_profile`` member counts what was left out). ``neff_cache_dir`` and
``precache_node_info`` are accepted and have nothing to act on: the emulated device runs
eager ops without compiling NEFFs.

``NeuronProfiler(config).export_trace(prof)`` writes the session's trace as TorchNeuron
lays its output out: ``<profile_output_dir>/<instance>_pid_<pid>/<timestamp>/trace.json``
(``<instance>`` is the host name: there is no EC2 instance id), and returns its path.
"""

import enum
import json
import os
import socket
import threading
import time
from pathlib import Path

from torch._C._profiler import _ExperimentalConfig

from neuronprof_torch import _C

# NEURON_RT_INSPECT_OUTPUT_DIR's default (Neuron Explorer's environment variables).
DEFAULT_OUTPUT_DIR = "./output"
# How often CPU_UTIL and HOST_MEMORY are sampled during a session.
SAMPLE_INTERVAL_S = 0.01
# The trace's file name in a session folder (TorchNeuron's framework trace).
TRACE_FILE = "trace.json"

# Device rows (pid = the logical core) and the runtime rows' category.
_DEVICE_CATEGORIES = frozenset(
    {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "neuron_instruction", "neuron_dma"}
)
_RUNTIME_CATEGORY = "privateuse1_runtime"


class ProfileMode(enum.Enum):
    """What a session records (see the module's documentation for each)."""

    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


DEFAULT_MODES = (ProfileMode.DEVICE, ProfileMode.RUNTIME)


def parse_cores(spec) -> frozenset:
    """The logical cores of ``"0,1,2-5"`` (or of a list of indices); ``ValueError``
    naming the part that is not an index or a range."""
    if isinstance(spec, int):
        spec = [spec]
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    cores = set()
    for part in parts:
        text = str(part).strip()
        low, sep, high = text.partition("-")
        try:
            first = int(low)
            last = int(high) if sep else first
        except ValueError:
            raise ValueError(
                f"capture_enabled_for_nc={spec!r}: {text!r} is neither a core index nor a "
                "range like 2-5"
            ) from None
        if first < 0 or last < first:
            raise ValueError(f"capture_enabled_for_nc={spec!r}: {text!r} is not a range of cores")
        cores.update(range(first, last + 1))
    if not cores:
        raise ValueError(f"capture_enabled_for_nc={spec!r} names no core")
    return frozenset(cores)


def _mode(value) -> ProfileMode:
    if isinstance(value, ProfileMode):
        return value
    if isinstance(value, str):
        for mode in ProfileMode:
            if value.strip().upper() in (mode.name, mode.value.upper()):
                return mode
    raise ValueError(
        f"NeuronConfig: {value!r} is not a ProfileMode (DEVICE, RUNTIME, CPU_UTIL, HOST_MEMORY)"
    )


class NeuronConfig(_ExperimentalConfig):
    """The Neuron part of a ``torch.profiler.profile`` session, passed as its
    ``experimental_config`` (it is one: other ``_ExperimentalConfig`` options go through
    as keyword arguments).

    ``modes``: the ``ProfileMode``s to record (default ``[DEVICE, RUNTIME]``);
    ``max_events_per_nc``: device rows kept per logical core; ``capture_enabled_for_nc``:
    the cores whose rows are kept (``"0,1,2-5"``); ``profile_output_dir``: where
    ``NeuronProfiler.export_trace`` writes (default ``./output``); ``neff_cache_dir``
    (default ``TORCH_NEURONX_NEFF_CACHE_DIR``) and ``precache_node_info`` (default true):
    accepted, nothing to act on here.
    """

    def __init__(
        self,
        modes=None,
        max_events_per_nc=None,
        capture_enabled_for_nc=None,
        profile_output_dir=DEFAULT_OUTPUT_DIR,
        neff_cache_dir=None,
        precache_node_info=True,
        **experimental,
    ):
        super().__init__(**experimental)
        self.modes = [_mode(m) for m in (DEFAULT_MODES if modes is None else modes)]
        if max_events_per_nc is not None:
            if isinstance(max_events_per_nc, bool) or int(max_events_per_nc) != max_events_per_nc:
                raise ValueError(f"max_events_per_nc={max_events_per_nc!r}: expected a whole number")
            if max_events_per_nc <= 0:
                raise ValueError(f"max_events_per_nc={max_events_per_nc!r}: expected at least 1")
            max_events_per_nc = int(max_events_per_nc)
        self.max_events_per_nc = max_events_per_nc
        self.capture_enabled_for_nc = capture_enabled_for_nc
        self._cores = None if capture_enabled_for_nc is None else parse_cores(capture_enabled_for_nc)
        self.profile_output_dir = os.fspath(profile_output_dir)
        self.neff_cache_dir = neff_cache_dir or os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
        self.precache_node_info = bool(precache_node_info)
        self._detail_before = None
        self._sampler = None
        self._samples = []

    def __repr__(self):
        modes = ", ".join(f"ProfileMode.{m.name}" for m in self.modes)
        return (
            f"NeuronConfig(modes=[{modes}], max_events_per_nc={self.max_events_per_nc!r}, "
            f"capture_enabled_for_nc={self.capture_enabled_for_nc!r}, "
            f"profile_output_dir={self.profile_output_dir!r})"
        )

    # A session (torch.profiler's start_trace / stop_trace, patched below).

    def _begin(self) -> None:
        self._detail_before = _C._set_record_detail(ProfileMode.DEVICE in self.modes)
        self._samples = []
        kinds = {m for m in self.modes if m in (ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY)}
        if kinds:
            self._sampler = _Sampler(kinds)
            self._sampler.start()

    def _end(self) -> None:
        if self._detail_before is not None:
            _C._set_record_detail(self._detail_before)
            self._detail_before = None
        if self._sampler is not None:
            self._samples = self._sampler.stop()
            self._sampler = None


class _Sampler:
    """CPU utilization and host memory from ``/proc``, every ``SAMPLE_INTERVAL_S``, on a
    daemon thread, from start to stop (a sample at each end too)."""

    def __init__(self, kinds):
        self.kinds = kinds
        self.samples = []  # (unix ns, counter name, {series: value})
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="neuron-profile-sampler", daemon=True)
        self.cpu_before = None
        self.page_bytes = os.sysconf("SC_PAGE_SIZE")

    def start(self):
        self.cpu_before = _read_cpu_times()
        self._sample()
        self.thread.start()

    def stop(self):
        self.stop_event.set()
        self.thread.join()
        self._sample()
        return self.samples

    def _run(self):
        while not self.stop_event.wait(SAMPLE_INTERVAL_S):
            self._sample()

    def _sample(self):
        now = time.time_ns()
        if ProfileMode.CPU_UTIL in self.kinds:
            cpu_now = _read_cpu_times()
            values = _cpu_percent(self.cpu_before, cpu_now)
            self.cpu_before = cpu_now
            if values:
                self.samples.append((now, "CPU utilization", values))
        if ProfileMode.HOST_MEMORY in self.kinds:
            self.samples.append((now, "Host memory", _host_memory(self.page_bytes)))


def _read_cpu_times():
    """({cpu name: (busy, total) jiffies}, this process's CPU jiffies, monotonic s)."""
    cpus = {}
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu"):
                break
            name, *fields = line.split()
            values = [int(v) for v in fields]
            idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
            total = sum(values[:8])  # user … steal (guest time is inside user)
            cpus[name] = (total - idle, total)
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    process = int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)
    return cpus, process, time.monotonic()


def _cpu_percent(before, after) -> dict:
    (cpus0, proc0, t0), (cpus1, proc1, t1) = before, after
    out = {}
    for name, (busy1, total1) in cpus1.items():
        busy0, total0 = cpus0.get(name, (busy1, total1))
        if total1 > total0:
            series = "total" if name == "cpu" else name
            out[f"{series} %"] = round(100.0 * (busy1 - busy0) / (total1 - total0), 1)
    if out and t1 > t0:
        hz = os.sysconf("SC_CLK_TCK")
        out["process %"] = round(100.0 * (proc1 - proc0) / hz / (t1 - t0), 1)
    return out


def _host_memory(page_bytes: int) -> dict:
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    meminfo = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            meminfo[key] = int(rest.split()[0]) * 1024
    used = meminfo.get("MemTotal", 0) - meminfo.get("MemAvailable", 0)
    return {"process resident bytes": resident_pages * page_bytes, "system used bytes": used}


class NeuronProfiler:
    """Writes sessions configured by a ``NeuronConfig`` where TorchNeuron writes them;
    ``export_trace`` is the ``on_trace_ready`` handler."""

    def __init__(self, config=None):
        if config is not None and not isinstance(config, NeuronConfig):
            raise TypeError(f"NeuronProfiler: expected a NeuronConfig, got {type(config).__name__}")
        self.config = config if config is not None else NeuronConfig()
        self.last_trace = None

    def session_dir(self) -> Path:
        """A new ``<profile_output_dir>/<instance>_pid_<pid>/<timestamp>`` folder."""
        base = Path(self.config.profile_output_dir) / f"{socket.gethostname()}_pid_{os.getpid()}"
        now = time.time()
        stamp = time.strftime("%Y%m%d_%H%M%S", time.gmtime(now)) + f"_{int(now * 1000) % 1000:03d}"
        folder, n = base / stamp, 1
        while folder.exists():
            folder, n = base / f"{stamp}_{n}", n + 1
        folder.mkdir(parents=True)
        return folder

    def export_trace(self, prof) -> str:
        """Exports ``prof``'s session (PyTorch's trace, warped) as ``trace.json`` in a new
        session folder, keeps what the config's modes say, adds its counters; returns
        the file's path."""
        path = self.session_dir() / TRACE_FILE
        prof.export_chrome_trace(str(path))
        config = getattr(prof, "experimental_config", None)
        if not isinstance(config, NeuronConfig):
            config = self.config
        _apply_config(path, config)
        self.last_trace = str(path)
        return self.last_trace


def _apply_config(path: Path, config: NeuronConfig) -> None:
    """Rewrites the exported trace as the config's modes and filters say, and adds the
    session's counters and the ``neuron_profile`` member."""
    with open(path) as f:
        trace = json.load(f)
    events = trace.get("traceEvents", [])
    keep_runtime = ProfileMode.RUNTIME in config.modes
    left_out = {"runtime": 0, "core_not_captured": 0, "over_max_events": 0}
    # Device rows past max_events_per_nc, per core in time order.
    over = set()
    if config.max_events_per_nc is not None:
        per_core = {}
        rows = [e for e in events if e.get("cat") in _DEVICE_CATEGORIES and e.get("ph") == "X"]
        for e in sorted(rows, key=lambda e: e.get("ts", 0)):
            per_core[e.get("pid")] = per_core.get(e.get("pid"), 0) + 1
            if per_core[e.get("pid")] > config.max_events_per_nc:
                over.add(id(e))
    dropped, dropped_flows = set(), set()
    for e in events:
        cat, why = e.get("cat"), None
        if cat == _RUNTIME_CATEGORY and not keep_runtime:
            why = "runtime"
        elif cat in _DEVICE_CATEGORIES and e.get("ph") == "X":
            core = e.get("pid")
            if config._cores is not None and isinstance(core, int) and core not in config._cores:
                why = "core_not_captured"
            elif id(e) in over:
                why = "over_max_events"
        if why is not None:
            left_out[why] += 1
            dropped.add(id(e))
            correlation = e.get("args", {}).get("correlation")
            if correlation is not None:
                dropped_flows.add(correlation)
    # A flow whose either end was left out goes with it (both ends).
    kept = [
        e for e in events
        if id(e) not in dropped and not (e.get("cat") == "ac2g" and e.get("id") in dropped_flows)
    ]
    if config._samples:
        pid = os.getpid()
        # Kineto's `ts`: microseconds after the trace's baseTimeNanoseconds.
        base_ns = int(trace.get("baseTimeNanoseconds", 0))
        warped = _C._warp_unix_ns([ns for ns, _, _ in config._samples])
        for (_, name, values), ns in zip(config._samples, warped):
            kept.append(
                {"ph": "C", "cat": "neuron_host_counters", "name": name, "pid": pid, "tid": 0,
                 "ts": (ns - base_ns) / 1000.0, "args": values}
            )
    trace["traceEvents"] = kept
    trace["neuron_profile"] = {
        "modes": [m.name for m in config.modes],
        "capture_enabled_for_nc": sorted(config._cores) if config._cores is not None else None,
        "max_events_per_nc": config.max_events_per_nc,
        "left_out": left_out,
        "counter_samples": len(config._samples),
        "emulated": True,
    }
    with open(path, "w") as f:
        json.dump(trace, f)


def _install_session_hooks() -> None:
    """Makes ``torch.profiler`` begin and end a ``NeuronConfig``'s session with its own
    (``_KinetoProfile.start_trace`` / ``stop_trace``), once."""
    from torch.profiler import profiler as _torch_profiler

    kineto = _torch_profiler._KinetoProfile
    if getattr(kineto.start_trace, "_neuronx_session", False):
        return
    start, stop = kineto.start_trace, kineto.stop_trace

    def start_trace(self) -> None:
        config = getattr(self, "experimental_config", None)
        if isinstance(config, NeuronConfig):
            config._begin()
        return start(self)

    def stop_trace(self) -> None:
        try:
            return stop(self)
        finally:
            config = getattr(self, "experimental_config", None)
            if isinstance(config, NeuronConfig):
                config._end()

    for new, old in ((start_trace, start), (stop_trace, stop)):
        new.__doc__, new.__wrapped__, new._neuronx_session = old.__doc__, old, True
    kineto.start_trace, kineto.stop_trace = start_trace, stop_trace


_install_session_hooks()

__all__ = ["NeuronConfig", "NeuronProfiler", "ProfileMode", "parse_cores"]
