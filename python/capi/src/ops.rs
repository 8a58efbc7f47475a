//! Launching an op costed by the emulator's lowerings (`neuron_backend::describe`): the
//! extension passes the op's ATen name and its tensors, Rust picks the lowering, names
//! the kernel `<op>_<dtype>` and places it. While recording, each launch notes its
//! lowering (and whether the default rule costed it) for the plugin's kernel args.

use std::collections::HashMap;
use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard};

use neuron_backend::{
    describe, ExternalKernel, ExternalLaunch, ExternalOp, ExternalTensor, ScalarType,
};
use runtime_hooks::NameId;

use crate::device::{device, span_of, NpcKernelSpan};
use crate::error::{fail, guard, NPC_ERR_ARGUMENT, NPC_OK};

/// One tensor of an op (the Rust name of `npc_tensor_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NpcTensor {
    /// `ndim` sizes.
    pub sizes: *const i64,
    /// `ndim` strides, in elements (may be null).
    pub strides: *const i64,
    /// Dimensions.
    pub ndim: u32,
    /// `c10::ScalarType` code.
    pub dtype: u16,
    /// The tensor-list argument it belongs to, counted from 1; 0: a plain tensor.
    pub list: u16,
}

/// An op to launch (the Rust name of `npc_op_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NpcOp {
    /// ATen's name (`aten::addmm`, `add_`, `_foreach_mul_`), `name_len` bytes.
    pub name: *const c_char,
    /// Bytes of `name`.
    pub name_len: usize,
    /// Tensor inputs in schema order (no `out=` arguments).
    pub inputs: *const NpcTensor,
    /// Count of `inputs`.
    pub n_inputs: usize,
    /// Tensor results.
    pub outputs: *const NpcTensor,
    /// Count of `outputs`.
    pub n_outputs: usize,
    /// Correlation id (`nph_next_corr_id`).
    pub corr_id: u64,
    /// Device.
    pub device: u16,
    /// Execution queue (the stream).
    pub queue: u16,
    /// Must be 0.
    pub reserved: u32,
}

/// What a launch noted for the plugin: its lowering's name and whether the default rule
/// costed it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KernelNote {
    pub(crate) lowering: NameId,
    pub(crate) costed_by_default: bool,
}

static NOTES: Mutex<Option<HashMap<u64, KernelNote>>> = Mutex::new(None);

fn notes() -> MutexGuard<'static, Option<HashMap<u64, KernelNote>>> {
    NOTES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Drops the notes (a window begins).
pub(crate) fn clear_notes() {
    *notes() = None;
}

/// Takes the notes of the window.
pub(crate) fn take_notes() -> HashMap<u64, KernelNote> {
    notes().take().unwrap_or_default()
}

/// The tensors at `ptr` (`len` of them) as descriptions borrowing their arrays.
///
/// # Safety
///
/// `ptr` must be null with `len == 0` or point to `len` valid `NpcTensor`s whose arrays
/// hold `ndim` values each and outlive the result.
pub(crate) unsafe fn tensors<'a>(ptr: *const NpcTensor, len: usize) -> Vec<ExternalTensor<'a>> {
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: the caller guarantees `len` valid tensors at `ptr`.
    let raw = unsafe { std::slice::from_raw_parts(ptr, len) };
    raw.iter()
        .map(|t| {
            let n = t.ndim as usize;
            let slice = |p: *const i64| -> &'a [i64] {
                if p.is_null() || n == 0 {
                    &[]
                } else {
                    // SAFETY: the caller guarantees `ndim` values at each array.
                    unsafe { std::slice::from_raw_parts(p, n) }
                }
            };
            ExternalTensor {
                dtype: ScalarType(t.dtype),
                sizes: slice(t.sizes),
                strides: slice(t.strides),
                list: t.list,
            }
        })
        .collect()
}

/// The kernel name of an op: ATen's name without `aten::`, the overload or an in-place
/// `_`, then the element type: `addmm_bf16`.
fn kernel_name_of(op: &str, dtype: ScalarType) -> String {
    kernel_name(op, dtype.tag())
}

/// The kernel name of an op with the element-type tag `tag`: `addmm_bf16`.
pub(crate) fn kernel_name(op: &str, tag: &str) -> String {
    let op = op.strip_prefix("aten::").unwrap_or(op);
    let op = op.split('.').next().unwrap_or(op);
    let op = op.strip_suffix('_').unwrap_or(op);
    format!("{op}_{tag}")
}

/// Notes a kernel's lowering for the plugin (while recording).
pub(crate) fn note_kernel(corr_id: u64, note: KernelNote) {
    notes()
        .get_or_insert_with(HashMap::new)
        .insert(corr_id, note);
}

/// Launches the op `op` describes on its device and queue: the runtime call on this
/// thread and a kernel costed by the emulator's lowering of that kind of op (see
/// `neuron_backend::describe`), placed by the timing model. Writes where it was placed
/// to `span` (may be null).
///
/// # Safety
///
/// `op` must point to a valid `NpcOp` whose name, tensors and their arrays are valid
/// for the call; `span` must be null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_launch_op(op: *const NpcOp, span: *mut NpcKernelSpan) -> i32 {
    if op.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_launch_op: null op");
    }
    // SAFETY: checked non-null; the caller guarantees a valid NpcOp.
    let op = unsafe { *op };
    if op.name.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_launch_op: null name");
    }
    // SAFETY: the caller guarantees `name_len` readable bytes at `name`.
    let name_bytes = unsafe { std::slice::from_raw_parts(op.name.cast::<u8>(), op.name_len) };
    let name = String::from_utf8_lossy(name_bytes);
    // SAFETY: forwarded from the caller.
    let (inputs, outputs) = unsafe {
        (
            tensors(op.inputs, op.n_inputs),
            tensors(op.outputs, op.n_outputs),
        )
    };
    guard(|| {
        let device = match device(op.device) {
            Ok(device) => device,
            Err((status, message)) => return fail(status, message),
        };
        let described = describe(&ExternalOp {
            name: &name,
            inputs: &inputs,
            outputs: &outputs,
        });
        let name_id = runtime_hooks::intern(&kernel_name_of(&name, described.dtype));
        if runtime_hooks::is_enabled() {
            let note = KernelNote {
                lowering: runtime_hooks::intern(&described.lowering),
                costed_by_default: described.costed_by_default,
            };
            note_kernel(op.corr_id, note);
        }
        let launch = ExternalLaunch {
            name_id,
            corr_id: op.corr_id,
            flops: described.flops,
            bytes: described.bytes,
            kernel: ExternalKernel::Lowered(described.lowering_plan),
        };
        match device.external_launch(usize::from(op.queue), &launch) {
            Ok(placed) => {
                if !span.is_null() {
                    // SAFETY: non-null; the caller guarantees it is valid for writes.
                    unsafe { span.write(span_of(&placed)) };
                }
                NPC_OK
            }
            Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(dtype: u16, sizes: &[i64]) -> NpcTensor {
        NpcTensor {
            sizes: sizes.as_ptr(),
            strides: std::ptr::null(),
            ndim: sizes.len() as u32,
            dtype,
            list: 0,
        }
    }

    #[test]
    fn an_op_is_launched_with_its_lowering_noted() {
        let _recording = crate::tests::recording();
        runtime_hooks::set_enabled(true);
        clear_notes();
        let (a, b, c) = ([256i64, 128], [128i64, 64], [256i64, 64]);
        let inputs = [tensor(15, &a), tensor(15, &b)];
        let outputs = [tensor(15, &c)];
        let name = "aten::mm";
        let op = NpcOp {
            name: name.as_ptr().cast(),
            name_len: name.len(),
            inputs: inputs.as_ptr(),
            n_inputs: 2,
            outputs: outputs.as_ptr(),
            n_outputs: 1,
            corr_id: runtime_hooks::next_corr_id(),
            device: 0,
            queue: 0,
            reserved: 0,
        };
        let mut span = NpcKernelSpan::default();
        // SAFETY: valid op, tensors and span.
        assert_eq!(unsafe { npc_launch_op(&op, &mut span) }, NPC_OK);
        assert!(span.end_ns > span.start_ns);
        let notes = take_notes();
        runtime_hooks::set_enabled(false);
        let note = notes[&op.corr_id];
        assert_eq!(
            runtime_hooks::resolve(note.lowering).as_deref(),
            Some("matmul bf16")
        );
        assert!(!note.costed_by_default);
        assert_eq!(
            kernel_name_of("aten::add_.Tensor", ScalarType(6)),
            "add_f32"
        );
    }
}
