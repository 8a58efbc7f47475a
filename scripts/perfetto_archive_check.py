"""Opens a Perfetto archive (a tar of traces and a perfetto_manifest.json) with the
official `perfetto` Python package and prints, as JSON, what Perfetto sees in it.

    python perfetto_archive_check.py ARCHIVE.tar

First with the package's trace processor (`TraceProcessor(trace=ARCHIVE)`): slices per
machine (the manifest's machine names), the machines, and the import errors Perfetto
counted. The package downloads its trace_processor binary at first use; where that
fails (no network to the host it comes from), "trace_processor" says why and the script
checks the archive without it: the manifest against the documented schema (Perfetto's
docs/reference/perfetto-manifest.md, format version 1) and each trace member decoded
with the package's compiled protos (perfetto_trace_pb2: the Trace message, fields the
schema does not know counted), slices counted per member and per machine.

Used by exporters/tests/perfetto_archive_loads_in_perfettos_trace_processor.rs.
"""

import contextlib
import json
import sys
import tarfile

CLOCKS = {"REALTIME", "REALTIME_COARSE", "MONOTONIC", "MONOTONIC_COARSE",
          "MONOTONIC_RAW", "BOOTTIME"}


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def manifest_problems(text, members):
    """The documented schema's rules the manifest breaks (empty: none)."""
    problems = []
    if not "".join(text.split()).startswith('{"perfetto_manifest"'):
        problems.append('does not start with {"perfetto_manifest"')
    try:
        root = json.loads(text)
    except ValueError as err:
        return problems + [f"not JSON: {err}"]
    if not isinstance(root, dict) or not isinstance(root.get("perfetto_manifest"), dict):
        return problems + ["no perfetto_manifest object"]
    doc = root["perfetto_manifest"]
    if doc.get("version") != 1 or not is_int(doc.get("version")):
        problems.append(f"version must be the integer 1, not {doc.get('version')!r}")
    files = doc.get("files", [])
    if not isinstance(files, list):
        return problems + ["files must be an array"]
    paths = []
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            problems.append(f"file entry without a string path: {entry!r}")
            continue
        paths.append(entry["path"])
    for entry in files:
        if not isinstance(entry, dict):
            continue
        path = entry.get("path")
        if path not in members:
            problems.append(f"{path}: not a member of the archive")
        if "machine" in entry and "machines" in entry:
            problems.append(f"{path}: machine and machines are mutually exclusive")
        machine = entry.get("machine")
        if machine is not None and (not isinstance(machine, dict)
                                    or not isinstance(machine.get("name"), str)
                                    or not machine["name"]):
            problems.append(f"{path}: machine must be an object with a non-empty name")
        clocks = entry.get("clocks")
        if clocks is not None:
            if not isinstance(clocks, dict):
                problems.append(f"{path}: clocks must be an object")
                continue
            if "clock" in clocks and clocks["clock"] not in CLOCKS:
                problems.append(f"{path}: unknown clock name {clocks['clock']!r}")
            sync_to = clocks.get("sync_to")
            if not isinstance(sync_to, dict):
                problems.append(f"{path}: clocks: a sync_to block is required")
            else:
                if sync_to.get("file") not in paths:
                    problems.append(f"{path}: sync_to.file names unknown file "
                                    f"{sync_to.get('file')!r}")
                if "clock" in sync_to and sync_to["clock"] not in CLOCKS:
                    problems.append(f"{path}: unknown clock name {sync_to['clock']!r}")
            if "offset_ns" in clocks and (not is_int(clocks["offset_ns"])
                                          or clocks["offset_ns"] == -2**63):
                problems.append(f"{path}: offset_ns must be an int64 integer")
    trace_time = doc.get("trace_time")
    if trace_time is not None:
        if not isinstance(trace_time, dict) or trace_time.get("clock") not in CLOCKS:
            problems.append("trace_time needs a known clock")
        elif "file" in trace_time and trace_time["file"] not in paths:
            problems.append(f"trace_time.file names unknown file {trace_time['file']!r}")
    attributes = doc.get("attributes", {})
    if not isinstance(attributes, dict):
        problems.append("attributes must be an object")
    else:
        for key, value in attributes.items():
            if not key:
                problems.append("attributes: keys must be non-empty")
            if not (isinstance(value, str) or is_int(value)):
                problems.append(f"attributes: {key!r} must be a string or an integer")
    return problems


def machine_of(text):
    doc = json.loads(text)["perfetto_manifest"]
    return {e["path"]: e.get("machine", {}).get("name") for e in doc.get("files", [])}


def with_trace_processor(path):
    from perfetto.trace_processor import TraceProcessor
    tp = TraceProcessor(trace=path)
    try:
        rows = tp.query(
            "SELECT machine.name AS machine, COUNT(*) AS slices FROM slice "
            "JOIN track ON slice.track_id = track.id "
            "LEFT JOIN machine ON track.machine_id = machine.id "
            "GROUP BY machine.name")
        slices = {r.machine: r.slices for r in rows}
        machines = sorted(r.name for r in tp.query(
            "SELECT name FROM machine WHERE name IS NOT NULL"))
        errors = {r.name: r.value for r in tp.query(
            "SELECT name, SUM(value) AS value FROM stats "
            "WHERE severity IN ('error', 'data_loss') AND value > 0 GROUP BY name")}
        return {"slices_by_machine": slices, "machines": machines, "errors": errors}
    finally:
        tp.close()


def unknown_fields(message):
    """Fields the schema does not know, in `message` and the messages under it."""
    from google.protobuf.unknown_fields import UnknownFieldSet
    count = len(UnknownFieldSet(message))
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        values = value if field.is_repeated else [value]
        for item in values:
            if hasattr(item, "ListFields"):
                count += unknown_fields(item)
    return count


def with_protos(tar, members, machines):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
    by_member, by_machine, unknown = {}, {}, 0
    for name in members:
        if name == "perfetto_manifest.json":
            continue
        trace = pb.Trace()
        trace.ParseFromString(tar.extractfile(name).read())
        unknown += unknown_fields(trace)
        slices = sum(1 for p in trace.packet
                     if p.HasField("track_event")
                     and p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN)
        by_member[name] = slices
        machine = machines.get(name)
        by_machine[machine] = by_machine.get(machine, 0) + slices
    return {"slices_by_member": by_member, "slices_by_machine": by_machine,
            "unknown_fields": unknown}


def main():
    path = sys.argv[1]
    with tarfile.open(path) as tar:
        members = [m.name for m in tar.getmembers()]
        manifest = tar.extractfile("perfetto_manifest.json").read().decode()
        result = {"members": members, "manifest_problems": manifest_problems(manifest, members)}
        try:
            # The package says what it downloads on standard output: keep that for JSON.
            with contextlib.redirect_stdout(sys.stderr):
                result["trace_processor"] = with_trace_processor(path)
        except Exception as err:  # the binary could not be fetched or run
            reason = " ".join(f"{type(err).__name__}: {err}".split())
            result["trace_processor_unavailable"] = reason[:400]
            result["protos"] = with_protos(tar, members, machine_of(manifest))
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
