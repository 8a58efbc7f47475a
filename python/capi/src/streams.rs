//! Streams and events (`neuron-backend`'s external streams): what the extension's device
//! guard does for `torch.neuron.Stream`, `torch.Event` and `torch.accelerator`.
//!
//! A stream is an execution queue of a device, named by its index: queue 0 is the
//! default stream, then the other hardware queues, then a pool of user streams
//! ([`npc_stream_pool`]). Every call is recorded as a runtime call when recording is on.

use neuron_backend::ExternalEvent;

use crate::device::device;
use crate::error::{fail, guard, NPC_ERR_ARGUMENT, NPC_OK};

/// A recorded event (plain data; the Rust name of `npc_event_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NpcEvent {
    /// Correlation id of the record (0: never recorded).
    pub corr_id: u64,
    /// Modeled instant it completes (process timeline ns, as `nph_now_ns`).
    pub ready_ns: u64,
    /// Device.
    pub device: u16,
    /// Queue it was recorded on.
    pub queue: u16,
    /// Must be 0.
    pub reserved: u32,
}

impl From<ExternalEvent> for NpcEvent {
    fn from(e: ExternalEvent) -> Self {
        NpcEvent {
            corr_id: e.corr_id,
            ready_ns: e.ready_ns,
            device: e.device,
            queue: e.queue,
            reserved: 0,
        }
    }
}

impl From<NpcEvent> for ExternalEvent {
    fn from(e: NpcEvent) -> Self {
        ExternalEvent {
            device: e.device,
            queue: e.queue,
            ready_ns: e.ready_ns,
            corr_id: e.corr_id,
        }
    }
}

/// Execution queues of `device` (hardware queues, then the user-stream pool); 0 for a
/// device that does not exist.
#[no_mangle]
pub extern "C" fn npc_queue_count(device_index: u16) -> u32 {
    crate::error::guard_value("npc_queue_count", 0, || {
        device(device_index).map_or(0, |d| d.external_queue_count() as u32)
    })
}

/// The next user stream of `device`'s pool (round-robin, as CUDA's pool); the queue
/// index, or -1 for a device that does not exist. Priority has no effect on the model.
#[no_mangle]
pub extern "C" fn npc_stream_pool(device_index: u16) -> i32 {
    crate::error::guard_value("npc_stream_pool", -1, || {
        device(device_index).map_or(-1, |d| d.external_pool_queue() as i32)
    })
}

/// Records an event on `queue` of `device` into `out`.
///
/// # Safety
///
/// `out` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_event_record(
    device_index: u16,
    queue: u16,
    out: *mut NpcEvent,
) -> i32 {
    if out.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_event_record: null out-pointer");
    }
    guard(|| match device(device_index) {
        Err((status, message)) => fail(status, message),
        Ok(d) => match d.external_record_event(usize::from(queue)) {
            Ok(event) => {
                // SAFETY: checked non-null; the caller guarantees it is valid for writes.
                unsafe { out.write(event.into()) };
                NPC_OK
            }
            Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
        },
    })
}

/// Makes `queue` of `device` wait (on the device) for `event`; the host does not block.
///
/// # Safety
///
/// `event` must point to a valid `NpcEvent`.
#[no_mangle]
pub unsafe extern "C" fn npc_event_wait(
    device_index: u16,
    queue: u16,
    event: *const NpcEvent,
) -> i32 {
    if event.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_event_wait: null event");
    }
    // SAFETY: checked non-null; the caller guarantees it points to an NpcEvent.
    let event = unsafe { *event };
    if event.corr_id == 0 {
        // Never recorded: nothing to wait for (as CUDA's unrecorded events).
        return NPC_OK;
    }
    guard(|| match device(device_index) {
        Err((status, message)) => fail(status, message),
        Ok(d) => match d.external_wait_event(usize::from(queue), &event.into()) {
            Ok(()) => NPC_OK,
            Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
        },
    })
}

/// 1 when `event` has completed by the calling thread's clock (or was never recorded),
/// else 0.
///
/// # Safety
///
/// `event` must point to a valid `NpcEvent`.
#[no_mangle]
pub unsafe extern "C" fn npc_event_query(event: *const NpcEvent) -> i32 {
    crate::error::guard_value("npc_event_query", 1, || {
        if event.is_null() {
            return 1;
        }
        // SAFETY: checked non-null; the caller guarantees it points to an NpcEvent.
        let event = unsafe { *event };
        i32::from(event.corr_id == 0 || ExternalEvent::from(event).query())
    })
}

/// Waits (really) until `event` completes, recorded as `nrt_event_synchronize`; returns
/// the host clock after (0 for a never-recorded event).
///
/// # Safety
///
/// `event` must point to a valid `NpcEvent`.
#[no_mangle]
pub unsafe extern "C" fn npc_event_synchronize(event: *const NpcEvent) -> u64 {
    if event.is_null() {
        return 0;
    }
    // SAFETY: checked non-null; the caller guarantees it points to an NpcEvent.
    let event = unsafe { *event };
    if event.corr_id == 0 {
        return 0;
    }
    let mut after = 0;
    let _ = guard(|| {
        if let Ok(d) = device(event.device) {
            after = d.external_event_synchronize(&event.into());
        }
        NPC_OK
    });
    after
}

/// 1 when all work submitted to `queue` of `device` has completed, 0 when not, -1 for
/// a bad device or queue (see `npc_last_error`).
#[no_mangle]
pub extern "C" fn npc_stream_query(device_index: u16, queue: u16) -> i32 {
    let mut result = -1;
    let _ = guard(|| match device(device_index) {
        Err((status, message)) => fail(status, message),
        Ok(d) => match d.external_queue_done(usize::from(queue)) {
            Ok(done) => {
                result = i32::from(done);
                NPC_OK
            }
            Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
        },
    });
    result
}

/// Waits (really) until the work submitted to `queue` of `device` is done, recorded as
/// `nrt_stream_synchronize`. Returns `NPC_OK` or an error status.
#[no_mangle]
pub extern "C" fn npc_stream_synchronize(device_index: u16, queue: u16) -> i32 {
    guard(|| match device(device_index) {
        Err((status, message)) => fail(status, message),
        Ok(d) => match d.external_synchronize_queue(usize::from(queue)) {
            Ok(_) => NPC_OK,
            Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{npc_launch, NpcKernelSpan, NpcLaunch, NPC_DTYPE_F32, NPC_KERNEL_MATMUL};

    #[test]
    fn a_side_stream_waits_for_an_event_of_the_default_stream() {
        let side = npc_stream_pool(1);
        assert!(side > 0 && (side as u32) < npc_queue_count(1));
        let launch = NpcLaunch {
            name_id: runtime_hooks::intern("mm_f32").as_u32(),
            device: 1,
            kind: NPC_KERNEL_MATMUL,
            corr_id: runtime_hooks::next_corr_id(),
            batch: 1,
            m: 1024,
            k: 1024,
            n: 1024,
            dtype: NPC_DTYPE_F32,
            ..Default::default()
        };
        let mut span = NpcKernelSpan::default();
        // SAFETY: valid pointers throughout.
        unsafe {
            assert_eq!(npc_launch(&launch, &mut span), NPC_OK);
            let mut event = NpcEvent::default();
            assert_eq!(npc_event_record(1, 0, &mut event), NPC_OK);
            assert_eq!(event.ready_ns, span.end_ns);
            assert_eq!(npc_event_wait(1, side as u16, &event), NPC_OK);
            let mut later = NpcEvent::default();
            assert_eq!(npc_event_record(1, side as u16, &mut later), NPC_OK);
            assert!(
                later.ready_ns >= event.ready_ns,
                "the wait holds the side stream"
            );
            assert!(npc_event_synchronize(&later) >= later.ready_ns);
            assert_eq!(npc_event_query(&later), 1);
        }
        assert_eq!(npc_stream_query(1, side as u16), 1);
        assert_eq!(npc_stream_synchronize(1, 0), NPC_OK);
        assert_eq!(npc_stream_query(1, u16::MAX), -1);
    }
}
