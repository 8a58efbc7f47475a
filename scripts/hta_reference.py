"""Prints what HTA computes on trace directories, in the layout of
tests/data/traces/hta-reference/*.txt, so that our HTA-compat analyses can be checked
against HTA run here (analysis/tests/analyses_match_hta_run_here.rs).

    python scripts/hta_reference.py TRACE_DIR OUTPUT.txt [TRACE_DIR OUTPUT.txt ...]

Run it with the Python of the venv that `scripts/hta-venv` makes (HTA 0.5.0 from PyPI).
Each directory holds one trace file per rank, as HTA's TraceAnalysis(trace_dir=...)
expects. The calls are the ones the shared references were made with: temporal
breakdown, comm/comp overlap, kernel breakdown (num_kernels=5), idle time of the first
rank with interval statistics, queue length, memory bandwidth, launch statistics
(described) and potential stragglers, all with default arguments otherwise. An analysis
that raises prints `ERROR: <type> <message>` in its section, as in the references.

On stdout it prints one line: the numpy version and the 64-bit argsort kernel it
dispatches to (`avx512`, `avx2` or `scalar`): that kernel's order of equal timestamps
is the order HTA's sorts give, which compat mode must be told (`NumpySort`).

HTA 0.5 has no device-type inference, so the header line has no `device_type` (the
shared references, printed by HTA 0.6, have it); names are cut at 60 characters as
pandas prints them there.
"""

import contextlib
import io
import logging
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

from hta.trace_analysis import TraceAnalysis  # noqa: E402

WIDTH = 60


def show(value):
    """Prints a DataFrame (or a tuple of them, or a dict rank -> DataFrame)."""
    if isinstance(value, tuple):
        for item in value:
            if item is not None:
                print(item.to_string(max_colwidth=WIDTH))
    elif isinstance(value, dict):
        for rank, frame in value.items():
            print(f"-- rank {rank}")
            print((frame if frame.empty else frame.describe()).to_string())
    elif hasattr(value, "to_string"):
        print(value.to_string(max_colwidth=WIDTH))
    else:
        print(value)


def section(name, call):
    print(f"\n===== {name} =====")
    try:
        # HTA prints progress and plots to stdout in places; keep only our layout.
        with contextlib.redirect_stdout(io.StringIO()):
            value = call()
    except Exception as error:  # HTA raising is part of what we compare.
        print("ERROR:", type(error).__name__, error)
        return
    show(value)


def report(trace_dir):
    analysis = TraceAnalysis(trace_dir=trace_dir)
    trace = analysis.t
    ranks = trace.get_ranks()
    print("ranks", ranks, "iterations", trace.get_iterations())
    for rank in ranks:
        frame = trace.get_trace(rank)
        device_rows = int((frame["stream"] != -1).sum())
        print(f"rank {rank}: rows={len(frame)} gpu_rows(stream!=-1)={device_rows}")
    first = ranks[0]
    section(
        "temporal_breakdown",
        lambda: analysis.get_temporal_breakdown(visualize=False),
    )
    section(
        "comm_comp_overlap",
        lambda: analysis.get_comm_comp_overlap(visualize=False),
    )
    section(
        "gpu_kernel_breakdown",
        lambda: analysis.get_gpu_kernel_breakdown(visualize=False, num_kernels=5),
    )
    section(
        f"idle_time_breakdown rank{first}",
        lambda: analysis.get_idle_time_breakdown(
            ranks=[first], visualize=False, show_idle_interval_stats=True
        ),
    )
    section("queue_length_summary", lambda: analysis.get_queue_length_summary(ranks))
    section("memory_bw_summary", lambda: analysis.get_memory_bw_summary(ranks))
    section(
        "cuda_kernel_launch_stats",
        lambda: analysis.get_cuda_kernel_launch_stats(ranks, visualize=False),
    )
    section("potential_stragglers", lambda: analysis.get_potential_stragglers())


def numpy_kernel():
    """The kernel numpy's argsort of 64-bit keys runs on this CPU (x86-simd-sort's
    AVX-512 or AVX2 one, else numpy's introsort): targets X86_V4/X86_V3 from numpy 2.4,
    AVX512_SKX/AVX2 before."""
    import numpy

    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    if "X86_V4" in features:
        avx512, avx2 = features["X86_V4"], features["X86_V3"]
    else:
        major = int(numpy.__version__.split(".")[0])
        avx512 = features.get("AVX512_SKX", False) and features.get("AVX512F", False)
        avx2 = features.get("AVX2", False) and major >= 2
    kernel = "avx512" if avx512 else "avx2" if avx2 else "scalar"
    return numpy.__version__, kernel


def main(args):
    if not args or len(args) % 2:
        sys.exit("usage: hta_reference.py TRACE_DIR OUTPUT.txt [TRACE_DIR OUTPUT.txt ...]")
    version, kernel = numpy_kernel()
    print("numpy", version, kernel)
    for trace_dir, output in zip(args[::2], args[1::2]):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            report(trace_dir)
        with open(output, "w") as out:
            out.write(text.getvalue())


if __name__ == "__main__":
    main(sys.argv[1:])
