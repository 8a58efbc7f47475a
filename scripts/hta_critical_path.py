"""Runs HTA's critical path analysis and prints what it found as one JSON document.

Usage: python hta_critical_path.py TRACE_DIR RANK ANNOTATION INSTANCE

Prints {"hta_version", "numpy_kernel", "nodes", "edges", "path_nodes", "length",
"summary": {bound_by: duration}, "breakdown": [[event_idx | null, type, duration,
bound_by]...] (sorted), "critical_events": [event index...] (sorted)}. Times are
HTA's integer microseconds. Used by analysis/tests/critical_path_matches_hta.rs and
the benchmark (scripts/bench-critical-path-vs-hta).
"""

import json
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
logging.disable(logging.WARNING)


def main():
    trace_dir, rank, annotation, instance = sys.argv[1:5]
    rank, instance = int(rank), int(instance)
    from hta.trace_analysis import TraceAnalysis
    import hta
    from hta_reference import numpy_kernel

    t0 = time.perf_counter()
    analysis = TraceAnalysis(trace_dir=trace_dir)
    t1 = time.perf_counter()
    graph, ok = analysis.critical_path_analysis(
        rank=rank, annotation=annotation, instance_id=instance
    )
    t2 = time.perf_counter()
    if not ok:
        print(json.dumps({"error": "HTA found no critical path"}))
        return
    breakdown = graph.get_critical_path_breakdown()
    rows = []
    for r in breakdown.itertuples(index=False):
        event = None if r.event_idx != r.event_idx else int(r.event_idx)
        rows.append([event, r.type, int(r.duration), r.bound_by])
    rows.sort(key=lambda x: (x[0] if x[0] is not None else -1, x[1], x[2], x[3]))
    summary = breakdown.groupby("bound_by").duration.sum()
    out = {
        "hta_version": getattr(hta, "__version__", None) or hta_version(),
        "numpy_kernel": numpy_kernel(),
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "path_nodes": len(graph.critical_path_nodes),
        "length": int(breakdown.duration.sum()),
        "summary": {k: int(v) for k, v in summary.items()},
        "breakdown": rows,
        "critical_events": sorted(int(e) for e in graph.critical_path_events_set),
        "seconds": {"load": t1 - t0, "critical_path": t2 - t1},
    }
    print(json.dumps(out))


def hta_version():
    from importlib.metadata import version

    return version("HolisticTraceAnalysis")


if __name__ == "__main__":
    main()
