"""PyTorch's own operator database as the test suite of the ``neuron`` device.

Every entry of ``torch.testing._internal.common_methods_invocations.op_db`` (the OpInfo
database in the torch wheel: an operator, or one variant of it, with a generator of
sample inputs) runs its samples on ``neuron`` and on the CPU, in float32 and bfloat16,
and the results are compared. What is measured:

- A *pair* is one op and one dtype. It counts when the op supports the dtype on the CPU
  (``op.supported_dtypes("cpu")``) and at least one of its samples runs on the CPU.
- A pair *passes* when every sample that ran on the CPU also runs on ``neuron`` and gives
  the CPU's result: same types, shapes and dtypes, values within
  ``torch.testing.assert_close``'s default tolerances for the dtype (NaN equal to NaN),
  and tensors on ``neuron`` (unless the sample asks for the CPU, ``device="cpu"``).
- The pass rate is passed pairs / counted pairs; every failed pair is listed with its
  reason (the exception on ``neuron``, or what differs).

Samples are made on ``neuron`` (as PyTorch's own CPU-comparison test makes them on its
device) and copied to the CPU storage and all, so a view keeps its offset and strides;
both runs start from the same seed, so random ops draw the same numbers (the device's
generator is the CPU's). A sample's ``output_process_fn_grad`` is applied to both results
(it makes results that are right in more than one way comparable, e.g. signs of singular
vectors). An op whose OpInfo says its output is nondeterministic (``empty`` and its kin:
uninitialized memory) is compared without its values.

The ops run in a worker process; one that kills it (a segmentation fault, an abort) or
runs past ``--timeout`` is listed as such and the worker starts again after it, so no op
hides the others.

Usage (the repository's folder; needs the torch venv, ``bash scripts/torch-venv``, and
``libneuronprof_capi.so`` in target/debug or target/release):

    PYTHONPATH=python target/torch-venv/bin/python scripts/torch_opinfo.py \
        [--samples N|all] [--ops REGEX] [--dtypes float32,bfloat16] [--json FILE]

``--samples`` is the number of samples per op and dtype (all of them with ``all``; 2 by
default, which is what CI runs). It prints the failures and the rate, and ``RESULT
{json}`` as its last line.
"""

import argparse
import itertools
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import warnings

DTYPES = {"float32": "float32", "bfloat16": "bfloat16"}


def op_id(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


# ---------------------------------------------------------------------------------------
# The worker: runs ops [start, end) of the selected list, one JSON line per (op, dtype),
# and a "begin" line before each op, so the supervisor knows which op was running.


def first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def to_cpu_faithful(torch, value):
    """A CPU copy of a neuron tensor with its storage: views keep offsets and strides."""
    if not isinstance(value, torch.Tensor) or value.device.type != "neuron":
        return value
    if value.layout != torch.strided:
        return value.cpu()
    storage = value.untyped_storage()
    cpu_storage = torch.UntypedStorage(storage.nbytes())
    cpu_storage.copy_(storage)
    out = torch.empty(0, dtype=value.dtype)
    out.set_(cpu_storage, value.storage_offset(), value.size(), value.stride())
    if value.is_conj():
        out = out.conj()
    if value.is_neg():
        out = out._neg_view()
    return out


def neuron_to_cpu_args(torch, value):
    """A sample's argument for the CPU run: neuron tensors copied, neuron devices named
    as the CPU."""
    if isinstance(value, torch.Tensor):
        return to_cpu_faithful(torch, value)
    if isinstance(value, torch.device) and value.type == "neuron":
        return torch.device("cpu")
    if isinstance(value, str) and re.fullmatch(r"neuron(:\d+)?", value):
        return "cpu"
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(neuron_to_cpu_args(torch, v) for v in value)
    if isinstance(value, dict):
        return {k: neuron_to_cpu_args(torch, v) for k, v in value.items()}
    return value


def names_the_cpu(torch, value):
    """Whether a sample argument asks for the CPU (``device="cpu"``)."""
    if isinstance(value, torch.device):
        return value.type == "cpu"
    if isinstance(value, str):
        return value == "cpu"
    if isinstance(value, (list, tuple)):
        return any(names_the_cpu(torch, v) for v in value)
    if isinstance(value, dict):
        return any(names_the_cpu(torch, v) for v in value.values())
    return False


def compare(torch, got, want, where="result", values=True, on_neuron=True):
    """None when ``got`` (the neuron run's) matches ``want`` (the CPU's), else what differs;
    without ``values``, tensors' values are not compared (ops whose OpInfo says their
    output is nondeterministic: ``empty`` and its kin return uninitialized memory)."""
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{where}: {type(got).__name__}, the CPU gives a tensor"
        if on_neuron and got.device.type != "neuron" and want.device.type == "cpu":
            return f"{where}: on {got.device}, not on neuron"
        if got.dtype != want.dtype:
            return f"{where}: dtype {got.dtype}, the CPU gives {want.dtype}"
        if got.shape != want.shape:
            return f"{where}: shape {tuple(got.shape)}, the CPU gives {tuple(want.shape)}"
        if got.layout != want.layout:
            return f"{where}: layout {got.layout}, the CPU gives {want.layout}"
        if not values:
            return None
        try:
            torch.testing.assert_close(
                got.cpu(), want, equal_nan=True, check_device=False, check_stride=False
            )
        except AssertionError as error:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            return f"{where}: values differ ({'; '.join(lines[:3])})"[:300]
        return None
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return f"{where}: {type(got).__name__} of another length than the CPU's"
        for i, (g, w) in enumerate(zip(got, want)):
            differs = compare(torch, g, w, f"{where}[{i}]", values, on_neuron)
            if differs:
                return differs
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or got.keys() != want.keys():
            return f"{where}: keys differ from the CPU's"
        for k in want:
            differs = compare(torch, got[k], want[k], f"{where}[{k!r}]", values, on_neuron)
            if differs:
                return differs
        return None
    if isinstance(want, float) and isinstance(got, float):
        if want != want and got != got:
            return None
        if abs(got - want) <= 1e-5 + 1.3e-6 * abs(want):
            return None
        return f"{where}: {got}, the CPU gives {want}"
    got = neuron_to_cpu_args(torch, got)
    if got != want:
        return f"{where}: {got!r}, the CPU gives {want!r}"
    return None


def run_pair(torch, op, dtype, samples_per_op, seed):
    """One op in one dtype: a result dict (status pass, fail or not_on_cpu)."""
    if dtype not in op.supported_dtypes("cpu"):
        return {"status": "not_on_cpu", "reason": "dtype not supported on the CPU"}
    torch.manual_seed(seed)
    try:
        samples = op.sample_inputs("neuron", dtype, requires_grad=False)
        if samples_per_op is not None:
            samples = itertools.islice(samples, samples_per_op)
        samples = list(samples)
    except Exception as error:  # noqa: BLE001 (any failure is the op's result)
        # Do the samples come on the CPU? Then the device is what failed.
        try:
            torch.manual_seed(seed)
            next(iter(op.sample_inputs("cpu", dtype, requires_grad=False)))
        except Exception:  # noqa: BLE001
            return {"status": "not_on_cpu", "reason": "no sample on the CPU either"}
        return {"status": "fail", "reason": f"making its samples on neuron: {first_line(error)}"}
    ran = 0
    for index, sample in enumerate(samples):
        try:
            cpu_sample = sample.transform(lambda v: neuron_to_cpu_args(torch, v))
            cpu_sample.args = neuron_to_cpu_args(torch, tuple(cpu_sample.args))
            cpu_sample.kwargs = neuron_to_cpu_args(torch, dict(cpu_sample.kwargs))
        except Exception as error:  # noqa: BLE001
            return {
                "status": "fail",
                "sample": index,
                "reason": f"copying its sample from neuron to the CPU: {first_line(error)}",
            }
        torch.manual_seed(seed + 1 + index)
        try:
            want = op(cpu_sample.input, *cpu_sample.args, **cpu_sample.kwargs)
            want = cpu_sample.output_process_fn_grad(want)
        except Exception:  # noqa: BLE001 (a sample the CPU refuses does not count)
            continue
        ran += 1
        torch.manual_seed(seed + 1 + index)
        try:
            got = op(sample.input, *sample.args, **sample.kwargs)
            got = sample.output_process_fn_grad(got)
        except Exception as error:  # noqa: BLE001
            return {
                "status": "fail",
                "sample": index,
                "reason": f"raises on neuron: {first_line(error)}",
            }
        # A sample that asks for the CPU (``zeros_like(x, device="cpu")``) gets it.
        asks_cpu = names_the_cpu(torch, (sample.args, sample.kwargs))
        differs = compare(
            torch, got, want, values=not op.has_nondeterministic_output, on_neuron=not asks_cpu
        )
        if differs:
            return {"status": "fail", "sample": index, "reason": differs}
    if ran == 0:
        return {"status": "not_on_cpu", "reason": "no sample runs on the CPU"}
    return {"status": "pass", "samples": ran}


def worker(args):
    warnings.filterwarnings("ignore")
    import torch

    import neuronprof_torch  # noqa: F401
    from torch.testing._internal.common_methods_invocations import op_db

    ops = selected_ops(op_db, args.ops)
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    samples = None if args.samples == "all" else int(args.samples)
    out = sys.stdout
    for index in range(args.start, len(ops)):
        op = ops[index]
        print(json.dumps({"begin": index}), file=out, flush=True)
        for dtype in dtypes:
            started = time.monotonic()
            result = run_pair(torch, op, dtype, samples, seed=index)
            result.update(
                op=op_id(op),
                dtype=str(dtype).removeprefix("torch."),
                secs=round(time.monotonic() - started, 3),
            )
            print(json.dumps(result), file=out, flush=True)
    print(json.dumps({"done": len(ops)}), file=out, flush=True)


def selected_ops(op_db, pattern):
    if not pattern:
        return list(op_db)
    regex = re.compile(pattern)
    return [op for op in op_db if regex.search(op_id(op))]


# ---------------------------------------------------------------------------------------
# The supervisor: runs workers until every op has a result.


def read_lines(stream, lines):
    for line in stream:
        lines.put(line)
    lines.put(None)


def supervise(args):
    results, crashes = [], []
    start, total, names = 0, None, None
    began = time.monotonic()
    while total is None or start < total:
        command = [sys.executable, __file__, "--worker", "--start", str(start)]
        command += ["--samples", args.samples, "--dtypes", args.dtypes]
        if args.ops:
            command += ["--ops", args.ops]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        lines = queue.Queue()
        threading.Thread(target=read_lines, args=(child.stdout, lines), daemon=True).start()
        current, finished, timed_out = None, False, False
        while True:
            try:
                # The worker's start (importing torch, maybe building the extension) is
                # not an op's time.
                line = lines.get(timeout=args.timeout if current is not None else None)
            except queue.Empty:
                timed_out = True
                child.kill()
                break
            if line is None:
                break
            try:
                record = json.loads(line)
            except ValueError:
                sys.stdout.write(line)
                continue
            if "begin" in record:
                current = record["begin"]
            elif "done" in record:
                total, finished = record["done"], True
            else:
                results.append(record)
        code = child.wait()
        if finished and code == 0:
            break
        if current is None:
            raise SystemExit(f"the worker exited ({code}) before running any op")
        if names is None:
            names = op_names(args.ops)
            total = len(names)
        how = f"timed out after {args.timeout} s" if timed_out else describe_exit(code)
        crashes.append({"op": names[current], "reason": how})
        print(f"worker: {names[current]} {how}; starting again after it", file=sys.stderr)
        start = current + 1
    return summarize(results, crashes, time.monotonic() - began)


def describe_exit(code):
    if code < 0:
        try:
            return f"killed the process ({signal.Signals(-code).name})"
        except ValueError:
            return f"killed the process (signal {-code})"
    return f"ended the process (exit status {code})"


def op_names(pattern):
    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    return [op_id(op) for op in selected_ops(op_db, pattern)]


def summarize(results, crashes, secs):
    counted = [r for r in results if r["status"] in ("pass", "fail")]
    passed = [r for r in counted if r["status"] == "pass"]
    failed = [r for r in counted if r["status"] == "fail"]
    # A crash fails the op in every dtype it was running.
    ops = {r["op"] for r in results} | {c["op"] for c in crashes}
    failed_ops = {r["op"] for r in failed} | {c["op"] for c in crashes}
    counted_ops = {r["op"] for r in counted} | {c["op"] for c in crashes}
    pairs = len(counted) + len(crashes)
    summary = {
        "ops": len(ops),
        "ops_counted": len(counted_ops),
        "ops_passed": len(counted_ops - failed_ops),
        "pairs_counted": pairs,
        "pairs_passed": len(passed),
        "rate": len(passed) / pairs if pairs else 0.0,
        "samples_compared": sum(r.get("samples", 0) for r in passed),
        "not_on_cpu": sum(1 for r in results if r["status"] == "not_on_cpu"),
        "failures": [
            {k: r[k] for k in ("op", "dtype", "reason", "sample") if k in r} for r in failed
        ],
        "crashes": crashes,
        "secs": round(secs, 1),
        "slowest": sorted(
            ({"op": r["op"], "dtype": r["dtype"], "secs": r["secs"]} for r in results),
            key=lambda r: -r["secs"],
        )[:10],
    }
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", default="2", help="samples per op and dtype, or all")
    parser.add_argument("--ops", default="", help="only the ops whose name matches (regex)")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--json", help="write the summary there too")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per op")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.samples != "all" and int(args.samples) < 1:
        parser.error("--samples: at least 1 (every op runs at least once)")
    if args.worker:
        worker(args)
        return
    summary = supervise(args)
    for crash in summary["crashes"]:
        print(f"CRASH {crash['op']}: {crash['reason']}")
    for failure in summary["failures"]:
        print(f"FAIL {failure['op']} {failure['dtype']}: {failure['reason']}")
    print(
        f"{summary['pairs_passed']} of {summary['pairs_counted']} (op, dtype) pairs pass "
        f"({100 * summary['rate']:.2f} %); {summary['ops_passed']} of "
        f"{summary['ops_counted']} ops pass in every dtype; {summary['samples_compared']} "
        f"samples compared; {summary['secs']} s"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(summary, out, indent=1)
    print("RESULT " + json.dumps(summary))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
