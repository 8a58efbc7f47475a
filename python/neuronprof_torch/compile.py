"""``torch.compile(model, backend="neuron")``: compiled graphs as device programs.

The Dynamo backend ``"neuron"`` runs AOTAutograd (forward and backward graphs for
training, an inference graph otherwise) and compiles each ATen graph for the emulated
device (python/README.md, "Compiled graphs"):

- The first call with given input shapes, dtypes and strides runs the graph's nodes with
  ATen's CPU kernels (inside the cut, as every op is) while the extension records each
  node's ATen name and tensors; the emulator then lowers every node with the same
  lowerings as eager and schedules them into one device program
  (``neuron-backend/src/external/program.rs``: elementwise chains fused into their
  producer's pass, passes started when their inputs are ready, SBUF capacity kept).
  That is the *compile*, shown as a host range ``neuron_compile``.
- Every call runs the nodes the same way (the numerics are eager's, bit for bit) with no
  launch per node, then launches the program: one ``nrt_execute`` runtime call and one
  kernel named after the graph (``graph_0_0_forward``), with args that say what it
  fused and how long each pass took. A node the lowerings do not know is launched as
  its own eager kernel between the program's parts (counted, named in the args).
- The compile cache (like a NEFF cache) keeps each graph's recorded nodes on disk,
  keyed by the graph's code, the input shapes/dtypes/strides and the device profile:
  ``$NEURONPROF_COMPILE_CACHE``, else ``$XDG_CACHE_HOME/neuronprof/compile``, else
  ``~/.cache/neuronprof/compile``. A hit (in this process or a later one) skips the
  recording run and shows no ``neuron_compile`` range. Clear it with
  :func:`clear_cache` or by deleting the folder. :func:`stats` counts hits, misses,
  graphs, calls, fallbacks, and Dynamo's graph breaks and recompiles (with reasons).
- Every trace ``torch.profiler`` writes in a process that compiled something gets those
  counts as its top-level member ``neuron_compile`` (:func:`trace_metadata`, added when
  the profiler stops); ``neuronprof analyze`` shows them with the trace's own compiled
  regions (Dynamo's ``Torch-Compiled Region: F/C`` ranges) and graph kernels.

Default ``torch.compile(model)`` (Inductor) on a neuron model fails with a message
naming ``backend="neuron"``: Inductor has no code generator for the device.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import json
import os
import sys
import threading
import time
from pathlib import Path

import torch

from . import _C

# Bumped when what the cache holds changes.
_CACHE_FORMAT = 1

_lock = threading.Lock()
_stats = {
    "graphs": 0,
    "calls": 0,
    "kernels_launched": 0,
    "cache_hits": 0,
    "cache_misses": 0,
    "compile_ns": 0,
    "eager_fallback_ops": {},
}


def cache_dir() -> Path:
    """The compile cache's folder (see the module docs)."""
    named = os.environ.get("NEURONPROF_COMPILE_CACHE")
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "neuronprof" / "compile"


def clear_cache() -> int:
    """Deletes every entry of the compile cache; returns how many."""
    folder = cache_dir()
    count = 0
    if folder.is_dir():
        for entry in folder.glob("*.json"):
            entry.unlink()
            count += 1
    return count


def stats() -> dict:
    """Counts since the process started: graphs compiled, calls, kernels launched, cache
    hits and misses, the wall time of the backend's compiles (``compile_ns``: the
    recording run, lowering and scheduling, or the cache read and scheduling of a hit;
    Dynamo's and AOTAutograd's tracing before it are not in it), eager fallbacks by op,
    and Dynamo's graph breaks (by reason) and recompiles."""
    with _lock:
        out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in _stats.items()}
    out.update(_dynamo_counts())
    return out


# A recompile or graph-break reason is kept to this many characters (Dynamo's reasons
# can carry a whole explanation and hint).
_REASON_CHARS = 400


def _dynamo_counts() -> dict:
    """Dynamo's own counts (PyTorch 2.15, torch/_dynamo/utils.py): graph breaks by reason
    (``counters["graph_break"]``, one per break Dynamo took), graphs it captured
    (``counters["stats"]["unique_graphs"]``), and recompiles: the compiles whose
    ``CompilationMetrics.recompile_reason`` is set (Dynamo sets it when a frame that
    already has a cache entry is compiled again because a guard failed), with the frame's
    compile id, function and the first failed guard. Dynamo keeps the metrics of its last
    compiles only (``get_compilation_metrics()``, a bounded deque): ``compiles_kept`` says
    how many the counts come from, and ``compiles_kept_limit`` the bound."""
    dynamo = sys.modules.get("torch._dynamo.utils")
    if dynamo is None:
        return {
            "graph_breaks": {},
            "unique_graphs": 0,
            "recompiles": 0,
            "recompile_reasons": [],
            "compiles_kept": 0,
            "compiles_kept_limit": None,
        }
    counters = dynamo.counters
    breaks = {str(reason): int(n) for reason, n in counters["graph_break"].items()}
    unique = int(counters["stats"].get("unique_graphs", 0))
    metrics = dynamo.get_compilation_metrics()
    reasons = [
        {
            "compile_id": str(m.compile_id),
            "function": str(m.co_name),
            "reason": str(m.recompile_reason)[:_REASON_CHARS],
        }
        for m in metrics
        if m.recompile_reason is not None
    ]
    limit = getattr(getattr(dynamo, "_compilation_metrics", None), "maxlen", None)
    return {
        "graph_breaks": breaks,
        "unique_graphs": unique,
        "recompiles": len(reasons),
        "recompile_reasons": reasons,
        "compiles_kept": len(metrics),
        "compiles_kept_limit": limit,
    }


# The top-level member of a profiled trace with these counts (python/README.md).
TRACE_KEY = "neuron_compile"


def trace_metadata() -> dict | None:
    """What a trace's top-level ``neuron_compile`` member holds: :func:`stats` with the
    graph breaks as a list (reason, count; most frequent first), counted since the
    process started (``"counted_since": "process start"``) — a graph is usually
    compiled in a step before the profiler's active window. ``None`` when nothing was
    compiled in this process (no neuron graph, no Dynamo graph)."""
    out = stats()
    if out["graphs"] == 0 and out["unique_graphs"] == 0 and not out["graph_breaks"]:
        return None
    breaks = sorted(out["graph_breaks"].items(), key=lambda kv: (-kv[1], kv[0]))
    out["graph_breaks"] = [
        {"reason": _trace_safe(reason[:_REASON_CHARS]), "count": n} for reason, n in breaks
    ]
    for recompile in out["recompile_reasons"]:
        for key in ("function", "reason"):
            recompile[key] = _trace_safe(recompile[key])
    out["eager_fallback_ops"] = {
        _trace_safe(op): n for op, n in out["eager_fallback_ops"].items()
    }
    out["backend"] = "neuron"
    out["counted_since"] = "process start"
    return out


def trace_metadata_json() -> str | None:
    """:func:`trace_metadata` as the JSON text Kineto writes verbatim (``None`` as
    there). Kineto turns every backslash of a metadata value into ``/`` (seen with
    PyTorch 2.15: a ``\\n`` escape arrived as ``/n``, so a ``\\"`` would end the
    string), so the text has no escapes at all: strings are :func:`_trace_safe` and
    non-ASCII characters are written as they are."""
    meta = trace_metadata()
    return None if meta is None else json.dumps(meta, ensure_ascii=False)


def _trace_safe(text: str) -> str:
    """``text`` with nothing JSON would escape: a line break becomes ``; ``, a double
    quote ``'``, a backslash ``/``, other control characters a space."""
    text = text.replace("\r\n", "\n").replace("\n", "; ")
    text = text.replace('"', "'").replace("\\", "/")
    return "".join(" " if ord(c) < 0x20 else c for c in text)


def _signature(args) -> tuple:
    sig = []
    for a in args:
        if isinstance(a, torch.Tensor):
            sig.append((str(a.device.type), tuple(a.shape), tuple(a.stride()), str(a.dtype)))
        else:
            sig.append(repr(type(a).__name__))
    return tuple(sig)


def _device_of(args) -> int | None:
    for a in args:
        if isinstance(a, torch.Tensor) and a.device.type == "neuron":
            return a.device.index or 0
    return None


def _short(name: str) -> str:
    name = name.split("::", 1)[-1]
    return name.split(".", 1)[0]


# The emulator's dtype tags as the performance model spells them in compute specs
# (perf-model's `DType::short_name`).
_SPEC_DTYPE = {
    "f64": "fp64",
    "f32": "fp32",
    "bf16": "bf16",
    "f16": "fp16",
    "f8e4m3": "fp8",
    "f8e5m2": "fp8",
    "i64": "int64",
    "i32": "int32",
    "i16": "int16",
    "i8": "int8",
    "u8": "int8",
    "bool": "bool",
}


def _pass_costs(nodes, seg) -> str:
    """Each pass's FLOPs, HBM bytes (after fusion) and compute spec, in pass order:
    `flops bytes matrix_fp32; ...` (the kernel arg `pass_costs`, which the roofline of
    `neuronprof analyze` reads). A pass's spec is its units (a matmul's TensorE, else the
    vector engines) and its first node's dtype."""
    parts = []
    for group, (flops, nbytes, unit) in zip(seg["groups"], seg["group_costs"]):
        tag = nodes[group[0]]["dtype"]
        parts.append(f"{int(flops)} {int(nbytes)} {unit}_{_SPEC_DTYPE.get(tag, tag)}")
    return "; ".join(parts)


class _Program:
    """A built program and the args its kernels carry."""

    def __init__(self, graph: str, built, info: dict):
        self.built = built
        self.info = info
        nodes = info["nodes"]
        self.args = []
        self.labels = []
        for seg in info["segments"]:
            names = [nodes[n]["name"] for group in seg["groups"] for n in group]
            counts: dict[str, int] = {}
            for n in names:
                counts[n] = counts.get(n, 0) + 1
            ops = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in counts.items())
            if seg["kind"] == "program":
                args = [
                    ("graph", graph),
                    ("graph_nodes", len(names)),
                    ("fused_nodes", len(names) - len(seg["groups"])),
                    ("hbm_bytes_saved", int(info["hbm_bytes_saved"])),
                    ("aten_ops", ops),
                    ("pass_costs", _pass_costs(nodes, seg)),
                ]
            else:
                args = [("graph", graph), ("eager_fallback", names[0])]
            self.args.append(args)
            self.labels.append(
                ["+".join(_short(nodes[n]["name"]) for n in group) for group in seg["groups"]]
            )


class CompiledGraph:
    """One AOTAutograd graph (forward, backward or inference) compiled for neuron."""

    def __init__(self, gm: torch.fx.GraphModule, name: str):
        self.gm = gm
        self.name = name
        self.code_hash = hashlib.sha256(gm.code.encode()).hexdigest()
        self.programs: dict[tuple, _Program] = {}

    def _run(self, args, record: bool):
        _C._graph_begin(record)
        try:
            outs = self.gm(*args)
        except BaseException:
            _C._graph_abort()
            raise
        tensors = [o for o in _flat(outs) if isinstance(o, torch.Tensor)]
        return outs, _C._graph_end(tensors)

    def _key(self, sig: tuple) -> str:
        profile = os.environ.get("NEURONPROF_DEVICE_PROFILE", "trn2")
        text = json.dumps([_CACHE_FORMAT, profile, self.code_hash, repr(sig)])
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _build(self, nodes, output_ids) -> _Program:
        built = _C._program_build(nodes, output_ids)
        return _Program(self.name, built, json.loads(built.describe()))

    def __call__(self, *args):
        sig = _signature(args)
        program = self.programs.get(sig)
        if program is None:
            program, outs = self._compile(args, sig)
        else:
            outs, _ = self._run(args, record=False)
        device = _device_of(args)
        if device is None:
            device = torch.neuron.current_device()
        launched = _C._program_launch(
            program.built, self.name, device, program.args, program.labels
        )
        with _lock:
            _stats["calls"] += 1
            _stats["kernels_launched"] += len(launched)
        return outs

    def _compile(self, args, sig):
        started = time.perf_counter_ns()
        key = self._key(sig)
        path = cache_dir() / f"{key}.json"
        cached = None
        if path.is_file():
            try:
                cached = json.loads(path.read_text())
                if cached.get("format") != _CACHE_FORMAT:
                    cached = None
            except (OSError, ValueError):
                cached = None  # a torn or foreign file: compile again and rewrite it
        if cached is not None:
            nodes = [
                (n[0], [tuple(t) for t in n[1]], [tuple(t) for t in n[2]]) for n in cached["nodes"]
            ]
            program = self._build(nodes, cached["outputs"])
            outs, _ = self._run(args, record=False)
            hit = True
        else:
            with torch.profiler.record_function("neuron_compile"):
                outs, recorded = self._run(args, record=True)
                nodes, output_ids = recorded
                program = self._build(nodes, output_ids)
                _write_atomic(
                    path,
                    json.dumps(
                        {
                            "format": _CACHE_FORMAT,
                            "graph": self.name,
                            "signature": repr(sig),
                            "nodes": nodes,
                            "outputs": output_ids,
                        }
                    ),
                )
            hit = False
        self.programs[sig] = program
        with _lock:
            _stats["compile_ns"] += time.perf_counter_ns() - started
            _stats["cache_hits" if hit else "cache_misses"] += 1
            fallbacks = _stats["eager_fallback_ops"]
            for name in program.info["eager_fallbacks"]:
                fallbacks[name] = fallbacks.get(name, 0) + 1
        return program, outs


def _flat(outs):
    if isinstance(outs, (list, tuple)):
        for o in outs:
            yield from _flat(o)
    else:
        yield outs


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _graph_name(kind: str) -> str:
    from torch._guards import TracingContext

    ctx = TracingContext.try_get()
    compile_id = getattr(ctx, "compile_id", None) if ctx is not None else None
    with _lock:
        _stats["graphs"] += 1
        serial = _stats["graphs"]
    if compile_id is not None and compile_id.frame_id is not None:
        return f"graph_{compile_id.frame_id}_{compile_id.frame_compile_id}_{kind}"
    return f"graph_{serial}_{kind}"


def _compiler(kind: str):
    from functorch.compile import make_boxed_func

    def compile_graph(gm: torch.fx.GraphModule, example_inputs):
        return make_boxed_func(CompiledGraph(gm, _graph_name(kind)))

    return compile_graph


def neuron_backend(gm: torch.fx.GraphModule, example_inputs):
    """The Dynamo backend ``"neuron"`` (AOTAutograd with the neuron graph compiler)."""
    from torch._dynamo.backends.common import aot_autograd

    backend = aot_autograd(
        fw_compiler=_compiler("forward"),
        bw_compiler=_compiler("backward"),
        inference_compiler=_compiler("inference"),
    )
    return backend(gm, example_inputs)


# --------------------------------------------------------------------------------------
# Registration: at package load when Dynamo is already imported, else right after it is
# (importing Dynamo costs seconds, so the package does not do it itself); and through
# the `torch_dynamo_backends` entry point of an installed package.

_registered = False


def register() -> None:
    """Registers the backend ``"neuron"`` with Dynamo (idempotent)."""
    global _registered
    if _registered:
        return
    from torch._dynamo.backends import registry

    _register_in(registry)
    _registered = True


def _register_in(registry) -> None:
    # An entry point Dynamo found and is loading registers itself (registering here too
    # would be a duplicate).
    found = registry._BACKENDS.get("neuron")
    if "neuron" not in registry._COMPILER_FNS and found is None:
        registry.register_backend(neuron_backend, name="neuron")


def _entry_point(gm, example_inputs):
    """Entry point of ``torch_dynamo_backends`` (the backend itself)."""
    return neuron_backend(gm, example_inputs)


class _AfterDynamo(importlib.abc.MetaPathFinder):
    """Registers the backend once ``torch._dynamo.backends.registry`` has loaded."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch._dynamo.backends.registry":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_register(module):
            exec_module(module)
            _register_in(module)

        loader.exec_module = exec_and_register
        return spec


def install() -> None:
    """Registers the backend now or when Dynamo loads; hooks Inductor's device init."""
    if "torch._dynamo.backends.registry" in sys.modules:
        register()
    else:
        sys.meta_path.insert(0, _AfterDynamo())
    torch.neuron._inductor_backend_init = _inductor_backend_init


_DEFAULT_MESSAGE = (
    "neuron: Inductor (torch.compile's default backend) has no code generator for the "
    'neuron device; compile with torch.compile(model, backend="neuron")'
)


class _RefuseMeta(type):
    def __getattr__(cls, _name):
        raise RuntimeError(_DEFAULT_MESSAGE)


class _Refuse(metaclass=_RefuseMeta):
    """Inductor's scheduling and wrapper code generator for ``neuron``: using it in any
    way raises the message naming ``backend="neuron"``."""

    def __init__(self, *_args, **_kwargs):
        raise RuntimeError(_DEFAULT_MESSAGE)


class _NoDeviceOps:
    def __getattr__(self, _name):
        raise RuntimeError(_DEFAULT_MESSAGE)


def _inductor_backend_init() -> None:
    """Inductor's hook for a PrivateUse1 device (called before it lowers a graph of any
    device once the device is renamed): registers a code generator for ``neuron`` that
    refuses with a message naming ``backend="neuron"``, so CPU graphs still compile
    with Inductor and neuron graphs fail clearly instead of ``KeyError: 'neuron'``."""
    from torch._inductor.codegen import common

    common.register_backend_for_device("neuron", _Refuse, _Refuse)
    common.register_device_op_overrides("neuron", _NoDeviceOps())
