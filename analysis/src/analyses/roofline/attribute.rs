//! Which operator launched each kernel: the host operators nested per thread, and each
//! device row (kernel, copy, memset) given to the innermost operator that was running
//! on the thread of its launch (the runtime call with the same `correlation`) when the
//! launch was made. This works on every trace: CUDA kernels carry an `External id`, but
//! ROCm's do not, and the launch's place in the operator tree is what both have.

use crate::classify::is_device_work_category;
use crate::model::{FastMap, HostOpKind, HostOps, IdentKey, RankTrace};

/// No operator.
pub(super) const NONE: u32 = u32::MAX;

/// The operator tree of a rank and the device rows each operator launched directly.
pub(super) struct OpTree {
    /// Per operator (index into [`HostOps::operators`]): its parent, [`NONE`] at a root.
    pub(super) parent: Vec<u32>,
    /// Per operator: the device rows (indices into [`RankTrace::rows`]) it launched
    /// itself (not through a nested operator).
    pub(super) direct: FastMap<u32, Vec<u32>>,
    /// Device rows no operator launched (no launch row with their correlation, or a
    /// launch outside every operator).
    pub(super) unattributed: Vec<u32>,
}

/// Builds the tree and attributes every device row of `trace`.
pub(super) fn attribute(trace: &RankTrace, host: &HostOps) -> OpTree {
    let n = host.operators.len();
    let mut parent = vec![NONE; n];
    // Per thread, the operators sorted by start (longest first on ties).
    let mut by_thread: Vec<Vec<u32>> = vec![Vec::new(); host.threads.len()];
    for (i, op) in host.operators.iter().enumerate() {
        if op.kind == HostOpKind::Operator {
            by_thread[op.thread as usize].push(i as u32);
        }
    }
    for ops in &mut by_thread {
        ops.sort_by_key(|&i| {
            let op = &host.operators[i as usize];
            (op.ts_rel_ns, std::cmp::Reverse(op.dur_ns))
        });
        // An operator's parent is the innermost open one it starts within and does
        // not outlast.
        let mut stack: Vec<u32> = Vec::new();
        for &i in ops.iter() {
            let op = &host.operators[i as usize];
            let end = op.ts_rel_ns + op.dur_ns;
            while let Some(&top) = stack.last() {
                let t = &host.operators[top as usize];
                if t.ts_rel_ns <= op.ts_rel_ns && end <= t.ts_rel_ns + t.dur_ns {
                    break;
                }
                stack.pop();
            }
            parent[i as usize] = stack.last().copied().unwrap_or(NONE);
            stack.push(i);
        }
    }
    let threads: FastMap<(i64, i64), usize> = host
        .threads
        .iter()
        .enumerate()
        .filter_map(|(i, (p, t))| match (p, t) {
            (IdentKey::Num(p), IdentKey::Num(t)) => Some(((*p, *t), i)),
            _ => None,
        })
        .collect();
    // The first host-side row of each correlation: the launch.
    let mut launches: FastMap<i64, (i64, i64, i64)> = FastMap::default();
    for row in &trace.rows {
        if row.correlation >= 0 && row.stream < 0 {
            if let (Some(pid), Some(tid)) = (row.pid, row.tid) {
                launches
                    .entry(row.correlation)
                    .or_insert((pid, tid, row.ts_rel_ns));
            }
        }
    }
    let mut direct: FastMap<u32, Vec<u32>> = FastMap::default();
    let mut unattributed = Vec::new();
    for (r, row) in trace.rows.iter().enumerate() {
        if row.stream < 0 || !is_device_work_category(trace.category(row)) {
            continue;
        }
        let op = launches.get(&row.correlation).and_then(|&(pid, tid, ts)| {
            let ops = &by_thread[*threads.get(&(pid, tid))?];
            innermost(host, &parent, ops, ts)
        });
        match op {
            Some(op) => direct.entry(op).or_default().push(r as u32),
            None => unattributed.push(r as u32),
        }
    }
    OpTree {
        parent,
        direct,
        unattributed,
    }
}

/// The innermost operator of `ops` (one thread's, sorted by start) running at `ts`.
fn innermost(host: &HostOps, parent: &[u32], ops: &[u32], ts: i64) -> Option<u32> {
    let last = ops
        .partition_point(|&i| host.operators[i as usize].ts_rel_ns <= ts)
        .checked_sub(1)?;
    let mut cur = ops[last];
    while cur != NONE {
        let op = &host.operators[cur as usize];
        if op.ts_rel_ns + op.dur_ns >= ts && !op_is_step(host, cur) {
            return Some(cur);
        }
        cur = parent[cur as usize];
    }
    None
}

/// Whether operator `i` is a `ProfilerStep#N` annotation (not an operator of the model).
fn op_is_step(host: &HostOps, i: u32) -> bool {
    host.names
        .get(host.operators[i as usize].name)
        .starts_with("ProfilerStep#")
}
