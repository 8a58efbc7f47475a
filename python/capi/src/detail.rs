//! What the devices record, switched while the process runs: `torch_neuronx.profiling`'s
//! `ProfileMode.DEVICE` (python/neuronprof_torch/torch_neuronx/profiling.py) records each
//! kernel's engine instructions and DMA transfers for the length of a profiling session,
//! as `NEURONPROF_DETAIL=instructions` does for the whole process (`device.rs`).

use neuron_backend::RecordDetail;

use crate::device::runtime;
use crate::error::{fail, guard, NPC_ERR_ARGUMENT, NPC_ERR_NO_DEVICE, NPC_OK};

/// Kernels, copies and memsets only (`NEURONPROF_DETAIL=kernels`).
pub const NPC_DETAIL_KERNELS: u8 = 0;
/// Also every engine instruction and DMA transfer (`NEURONPROF_DETAIL=instructions`).
pub const NPC_DETAIL_INSTRUCTIONS: u8 = 1;

/// Sets what every device records from now on ([`NPC_DETAIL_KERNELS`] or
/// [`NPC_DETAIL_INSTRUCTIONS`]); `previous` (when not null) gets the setting it replaced.
/// Kernels already placed keep what they recorded.
///
/// # Safety
///
/// `previous` must be null or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn npc_set_record_detail(detail: u8, previous: *mut u8) -> i32 {
    guard(|| {
        let wanted = match detail {
            NPC_DETAIL_KERNELS => RecordDetail::Kernels,
            NPC_DETAIL_INSTRUCTIONS => RecordDetail::Instructions,
            other => {
                return fail(
                    NPC_ERR_ARGUMENT,
                    format!("record detail {other}: expected 0 (kernels) or 1 (instructions)"),
                )
            }
        };
        let runtime = match runtime() {
            Ok(r) => r,
            Err(e) => return fail(NPC_ERR_NO_DEVICE, e.clone()),
        };
        let before = runtime
            .device(0)
            .map_or(RecordDetail::Kernels, |d| d.detail());
        if !previous.is_null() {
            let code = match before {
                RecordDetail::Kernels => NPC_DETAIL_KERNELS,
                RecordDetail::Instructions => NPC_DETAIL_INSTRUCTIONS,
            };
            // SAFETY: the caller guarantees `previous` is valid for one write.
            unsafe { *previous = code };
        }
        runtime.set_detail(wanted);
        NPC_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_detail_switches_and_reports_the_previous_setting() {
        let mut previous = 9u8;
        // SAFETY: a valid out-pointer.
        let status = unsafe { npc_set_record_detail(NPC_DETAIL_INSTRUCTIONS, &mut previous) };
        assert_eq!(status, NPC_OK);
        let mut now = 9u8;
        // SAFETY: a valid out-pointer.
        let status = unsafe { npc_set_record_detail(previous, &mut now) };
        assert_eq!(status, NPC_OK);
        assert_eq!(now, NPC_DETAIL_INSTRUCTIONS);
    }

    #[test]
    fn an_unknown_record_detail_is_an_argument_error() {
        // SAFETY: a null out-pointer is allowed.
        let status = unsafe { npc_set_record_detail(7, std::ptr::null_mut()) };
        assert_eq!(status, NPC_ERR_ARGUMENT);
    }
}
