"""Profiles a small CPU training run with torch.profiler, writes its Kineto trace and
what torch's own `prof.key_averages()` says about it, for
analysis/tests/operator_table_equals_torch_key_averages.rs.

    python scripts/torch_key_averages.py OUT_DIR

Profiles the run twice: OUT_DIR/plain/ without and OUT_DIR/stack/ with Python stacks
(`with_stack=True`: Python frames take part in torch's nesting, though they are no line
of the table). Each holds trace.json (`export_chrome_trace`), key_averages.json and
key_averages_by_shape.json (`key_averages(group_by_input_shape=True)`): one object per
line of the table, with torch's numbers as floats (µs).

The run: two `Linear` layers with a ReLU, cross-entropy, backward and SGD, inside
`record_function` ranges (`forward`, `backward`; the optimizer adds its own
`Optimizer.step#SGD.step`), shapes recorded. A range `block` that holds nothing but a
range `block` exercises torch's folding of a child into a same-named parent that has
exactly one child (without stacks; with them, the Python frames of `record_function`
are children too). Three profiled steps (schedule wait=1, warmup=1, active=3), the
trace and the tables written in `on_trace_ready`, where both describe the same events.
"""

import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def rows(averages):
    out = []
    for e in averages:
        out.append(
            {
                "key": e.key,
                "input_shapes": str(e.input_shapes) if e.input_shapes is not None else "",
                "count": e.count,
                "cpu_time_total_us": e.cpu_time_total,
                "self_cpu_time_total_us": e.self_cpu_time_total,
                "device_type": str(e.device_type),
                "is_user_annotation": bool(e.is_user_annotation),
            }
        )
    return out


def train(model, optimizer, x, y, prof):
    for _ in range(5):
        with record_function("forward"):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
        with record_function("block"):
            with record_function("block"):
                scaled = loss * 2.0
        with record_function("backward"):
            (loss + 0.0 * scaled).backward()
        optimizer.step()
        optimizer.zero_grad()
        prof.step()


def profile_run(out_dir, with_stack):
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))

    def ready(prof):
        prof.export_chrome_trace(os.path.join(out_dir, "trace.json"))
        with open(os.path.join(out_dir, "key_averages.json"), "w") as f:
            json.dump(rows(prof.key_averages()), f, indent=1)
        with open(os.path.join(out_dir, "key_averages_by_shape.json"), "w") as f:
            json.dump(rows(prof.key_averages(group_by_input_shape=True)), f, indent=1)

    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        with_stack=with_stack,
        schedule=schedule(wait=1, warmup=1, active=3),
        on_trace_ready=ready,
    ) as prof:
        train(model, optimizer, x, y, prof)


def main():
    profile_run(os.path.join(sys.argv[1], "plain"), with_stack=False)
    profile_run(os.path.join(sys.argv[1], "stack"), with_stack=True)


if __name__ == "__main__":
    main()
