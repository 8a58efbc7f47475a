//! Collectives of the extension's c10d backend `neuron` (one process per rank): the
//! launch on a collective queue ([`npc_collective_issue`], which returns the instant this
//! core is ready) and, once the backend has exchanged every rank's ready instant with
//! the data, the placement ([`npc_collective_place`]: the last arrival plus the topology
//! model's cost, the same end on every rank). See `neuron_backend::ExternalCollective`.
//!
//! The topology is `NEURONPROF_TOPOLOGY` (a built-in name: `trn2.48xlarge`,
//! `trn2-ultraserver`, `trn3-ultraserver`, `trn3-ultraserver-144`), else the default of
//! the device profile (`Topology::for_profile`); ranks are PyTorch's global ranks.

use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

use neuron_backend::dist::Topology;
use neuron_backend::ExternalCollective;
use runtime_hooks::CollectiveOp;

use crate::device::{device, link_profile};
use crate::error::{fail, guard, NPC_ERR_ARGUMENT, NPC_OK};

/// One collective call (plain data; the Rust name of `npc_collective_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NpcCollective {
    /// Kernel name stem (`AllReduce`, `AllGather`, …), NUL-terminated.
    pub kernel_stem: *const c_char,
    /// Reduction in the kernel name (`Sum`, `Avg`, …); null when it does not reduce.
    pub reduce: *const c_char,
    /// Element type in the kernel name (`f32`, `bf16`, …).
    pub dtype_name: *const c_char,
    /// Process group name (`0`, `1`, … as PyTorch numbers them).
    pub group_name: *const c_char,
    /// Global ranks of the group in group order (`n_ranks` of them).
    pub ranks: *const u64,
    /// Correlation id (`nph_next_corr_id`).
    pub corr_id: u64,
    /// Bytes of the message the algorithm and cost are chosen by.
    pub message_bytes: u64,
    /// Bytes of this rank's input.
    pub input_bytes: u64,
    /// Ranks in the group.
    pub n_ranks: u32,
    /// This rank's index in the group.
    pub me: u32,
    /// `runtime_hooks::CollectiveOp` value (`NPC_COLL_*`).
    pub op: u16,
    /// Device index.
    pub device: u16,
    /// The collective queue (`npc_collective_queue`).
    pub queue: u16,
    /// The caller's current stream (the collective waits for its queued work).
    pub inputs_queue: u16,
    /// `c10::ScalarType` code of the elements.
    pub dtype: u16,
    /// Must be 0.
    pub reserved: [u16; 3],
}

/// Where a collective was placed (the Rust name of `npc_collective_span_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NpcCollectiveSpan {
    /// Correlation id.
    pub corr_id: u64,
    /// The kernel's start: when this core was ready.
    pub start_ns: u64,
    /// When the last rank was ready (the transfer starts).
    pub transfer_start_ns: u64,
    /// The common end.
    pub end_ns: u64,
    /// How long this rank's kernel waited for the others.
    pub waited_ns: u64,
    /// Group index of the last rank to be ready.
    pub last: u32,
    /// `runtime_hooks::CollectiveAlgorithm` value.
    pub algorithm: u16,
    /// The queue it ran on.
    pub queue: u16,
}

static TOPOLOGY: OnceLock<Result<Topology, String>> = OnceLock::new();

fn topology() -> Result<&'static Topology, String> {
    TOPOLOGY
        .get_or_init(|| {
            // Not this device's own profile: a straggler's (NEURONPROF_STRAGGLER) has
            // its DMA and HBM rates divided, and links built from it would make its
            // bandwidth-bound collectives cost more than its peers' (rank 2 of a 2x
            // straggler run ended each KangaRing all-reduce 835 us after the others).
            let profile = link_profile()?.clone();
            match std::env::var("NEURONPROF_TOPOLOGY") {
                Ok(name) if !name.is_empty() => {
                    Topology::builtin(&name, &profile).ok_or_else(|| {
                        format!(
                            "NEURONPROF_TOPOLOGY={name:?}: not a built-in topology ({})",
                            Topology::BUILTIN_NAMES.join(", ")
                        )
                    })
                }
                _ => Ok(Topology::for_profile(&profile)),
            }
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// # Safety
/// `p` null or NUL-terminated.
unsafe fn text(p: *const c_char) -> Option<String> {
    // SAFETY: the caller guarantees a NUL-terminated string when non-null.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// # Safety
/// The pointers of `c` as `npc_collective_t` documents.
unsafe fn convert(c: &NpcCollective) -> Result<ExternalCollective, String> {
    let op =
        CollectiveOp::from_raw(c.op).ok_or_else(|| format!("unknown collective op {}", c.op))?;
    if c.n_ranks == 0 || c.ranks.is_null() {
        return Err("a collective needs its group's ranks".into());
    }
    // SAFETY: the caller guarantees n_ranks readable values.
    let ranks = unsafe { std::slice::from_raw_parts(c.ranks, c.n_ranks as usize) };
    let ranks: Vec<usize> = ranks.iter().map(|&r| r as usize).collect();
    let ranks_text = format!(
        "[{}]",
        ranks
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    // SAFETY: forwarded.
    let (stem, reduce, dtype_name, group) = unsafe {
        (
            text(c.kernel_stem),
            text(c.reduce),
            text(c.dtype_name),
            text(c.group_name),
        )
    };
    Ok(ExternalCollective {
        op,
        queue: usize::from(c.queue),
        inputs_queue: usize::from(c.inputs_queue),
        corr_id: c.corr_id,
        message_bytes: c.message_bytes,
        input_bytes: c.input_bytes,
        ranks,
        me: c.me as usize,
        group_name_id: runtime_hooks::intern(group.as_deref().unwrap_or("")),
        group_ranks_id: runtime_hooks::intern(&ranks_text),
        dtype: c.dtype,
        kernel_stem: stem.ok_or("a collective needs its kernel name stem")?,
        reduce,
        dtype_name: dtype_name.unwrap_or_else(|| "u8".into()),
    })
}

/// This process is rank `rank` of a job of `world_size` processes (the c10d backend
/// calls it for the default process group): its live-monitoring entry reports them and
/// is tagged `<pid>/rank<rank>` (`neuron_backend::monitor::set_process_rank`).
#[no_mangle]
pub extern "C" fn npc_monitor_set_rank(rank: u32, world_size: u32) -> i32 {
    crate::error::guard_value("npc_monitor_set_rank", crate::NPC_ERR_PANIC, || {
        if rank >= world_size {
            return fail(
                NPC_ERR_ARGUMENT,
                format!("npc_monitor_set_rank: rank {rank} of a job of {world_size}"),
            );
        }
        neuron_backend::monitor::set_process_rank(rank as usize, world_size as usize);
        NPC_OK
    })
}

/// The collective queue of the `slot`-th process group of this process on `device`
/// (the core's collective queues, round-robin); -1 for a device that does not exist.
#[no_mangle]
pub extern "C" fn npc_collective_queue(device_index: u16, slot: u32) -> i32 {
    crate::error::guard_value("npc_collective_queue", -1, || {
        device(device_index).map_or(-1, |d| d.collective_queue(slot as usize) as i32)
    })
}

/// Issues collective `c` on its queue (recorded `nrt_cc_execute` launch) and writes the
/// instant this core is ready to start it into `ready_ns`.
///
/// # Safety
///
/// `c` must point to a valid `NpcCollective` (its strings NUL-terminated or null, its
/// `ranks` `n_ranks` long); `ready_ns` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_collective_issue(c: *const NpcCollective, ready_ns: *mut u64) -> i32 {
    if c.is_null() || ready_ns.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_collective_issue: null pointer");
    }
    runtime_hooks::clock::cut_run_delay();
    // SAFETY: checked non-null; the caller guarantees validity.
    let c = unsafe { &*c };
    guard(|| {
        // SAFETY: forwarded from the caller.
        let call = match unsafe { convert(c) } {
            Ok(call) => call,
            Err(e) => return fail(NPC_ERR_ARGUMENT, format!("npc_collective_issue: {e}")),
        };
        match device(c.device) {
            Err((status, message)) => fail(status, message),
            Ok(d) => match d.external_collective_issue(&call) {
                Ok(ready) => {
                    // SAFETY: checked non-null; valid for writes by contract.
                    unsafe { ready_ns.write(ready) };
                    NPC_OK
                }
                Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
            },
        }
    })
}

/// Places collective `c` given every rank's ready instant (`ready_ns`, `c.n_ranks` of
/// them in group order) and writes where into `out`.
///
/// # Safety
///
/// `c` as for [`npc_collective_issue`]; `ready_ns` readable for `c.n_ranks` values;
/// `out` valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_collective_place(
    c: *const NpcCollective,
    ready_ns: *const u64,
    out: *mut NpcCollectiveSpan,
) -> i32 {
    if c.is_null() || ready_ns.is_null() || out.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_collective_place: null pointer");
    }
    runtime_hooks::clock::cut_run_delay();
    // SAFETY: checked non-null; the caller guarantees validity.
    let c = unsafe { &*c };
    // SAFETY: the caller guarantees n_ranks readable values.
    let ready = unsafe { std::slice::from_raw_parts(ready_ns, c.n_ranks as usize) };
    guard(|| {
        // SAFETY: forwarded from the caller.
        let call = match unsafe { convert(c) } {
            Ok(call) => call,
            Err(e) => return fail(NPC_ERR_ARGUMENT, format!("npc_collective_place: {e}")),
        };
        let topology = match topology() {
            Ok(t) => t,
            Err(e) => return fail(NPC_ERR_ARGUMENT, e),
        };
        match device(c.device) {
            Err((status, message)) => fail(status, message),
            Ok(d) => match d.external_collective_place(&call, topology, ready) {
                Ok(placed) => {
                    let span = NpcCollectiveSpan {
                        corr_id: call.corr_id,
                        start_ns: placed.span.start_ns,
                        transfer_start_ns: placed.start_ns,
                        end_ns: placed.span.end_ns,
                        waited_ns: placed.waited_ns,
                        last: placed.last as u32,
                        algorithm: placed.algorithm.raw(),
                        queue: c.queue,
                    };
                    // SAFETY: checked non-null; valid for writes by contract.
                    unsafe { out.write(span) };
                    NPC_OK
                }
                Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
            },
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_then_place_ends_after_the_last_arrival() {
        let _rec = crate::tests::recording();
        let queue = npc_collective_queue(0, 0);
        assert!(queue > 0);
        let ranks = [0u64, 1];
        let c = NpcCollective {
            kernel_stem: c"AllReduce".as_ptr(),
            reduce: c"Sum".as_ptr(),
            dtype_name: c"f32".as_ptr(),
            group_name: c"0".as_ptr(),
            ranks: ranks.as_ptr(),
            corr_id: runtime_hooks::next_corr_id(),
            message_bytes: 1 << 20,
            input_bytes: 1 << 20,
            n_ranks: 2,
            me: 0,
            op: CollectiveOp::AllReduce.raw(),
            device: 0,
            queue: queue as u16,
            inputs_queue: 0,
            dtype: 6,
            reserved: [0; 3],
        };
        let mut ready = 0u64;
        // SAFETY: valid pointers.
        assert_eq!(unsafe { npc_collective_issue(&c, &mut ready) }, NPC_OK);
        let all = [ready, ready + 2_000_000];
        let mut out = NpcCollectiveSpan::default();
        // SAFETY: valid pointers, two values.
        let status = unsafe { npc_collective_place(&c, all.as_ptr(), &mut out) };
        assert_eq!(status, NPC_OK);
        assert_eq!(out.last, 1);
        assert_eq!(out.transfer_start_ns, ready + 2_000_000);
        assert!(out.end_ns > out.transfer_start_ns);
        assert_eq!(out.waited_ns, 2_000_000);
        let bad = NpcCollective { op: 99, ..c };
        // SAFETY: valid pointers.
        let status = unsafe { npc_collective_issue(&bad, &mut ready) };
        assert_eq!(status, NPC_ERR_ARGUMENT);
    }
}
