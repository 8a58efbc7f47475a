//! The emulated devices: runtime, allocator, launches and waits.

use std::ffi::{c_char, CStr};
use std::sync::OnceLock;

use neuron_backend::{
    DType, Device, DeviceProfile, Engine, ExternalKernel, ExternalLaunch, KernelSpan, RecordDetail,
    Runtime,
};
use runtime_hooks::{DmaDirection, NameId};

use crate::error::{
    fail, guard, NPC_ERR_ARGUMENT, NPC_ERR_NO_DEVICE, NPC_ERR_OUT_OF_MEMORY, NPC_OK,
};

/// `NpcLaunch::kind`: a matmul (`batch`, `m`, `k`, `n`, `bias`).
pub const NPC_KERNEL_MATMUL: u16 = 1;
/// `NpcLaunch::kind`: an elementwise or reduction kernel (`elements`, `inputs`, `engine`).
pub const NPC_KERNEL_ELEMENTWISE: u16 = 2;
/// `NpcLaunch::kind`: a host-to-device copy of `bytes`.
pub const NPC_KERNEL_COPY_H2D: u16 = 3;
/// `NpcLaunch::kind`: a device-to-host copy of `bytes`.
pub const NPC_KERNEL_COPY_D2H: u16 = 4;
/// `NpcLaunch::kind`: a copy of `bytes` within the device.
pub const NPC_KERNEL_COPY_D2D: u16 = 5;

/// `NpcLaunch::dtype`: f32 (and every 4-byte type).
pub const NPC_DTYPE_F32: u16 = 0;
/// `NpcLaunch::dtype`: bf16 (and every 2-byte type).
pub const NPC_DTYPE_BF16: u16 = 1;
/// `NpcLaunch::dtype`: i64 (and every 8-byte type).
pub const NPC_DTYPE_I64: u16 = 2;
/// `NpcLaunch::dtype`: fp8 e4m3 (and every 1-byte type).
pub const NPC_DTYPE_F8E4M3: u16 = 3;

/// `NpcLaunch::engine`: TensorE.
pub const NPC_ENGINE_TENSOR: u16 = 0;
/// `NpcLaunch::engine`: VectorE (arithmetic, reductions).
pub const NPC_ENGINE_VECTOR: u16 = 1;
/// `NpcLaunch::engine`: ScalarE (activation functions).
pub const NPC_ENGINE_SCALAR: u16 = 2;
/// `NpcLaunch::engine`: GpSimdE (gathers, random numbers).
pub const NPC_ENGINE_GPSIMD: u16 = 3;

/// One kernel launch (`nph`-style plain struct; unused fields 0).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NpcLaunch {
    /// Interned kernel name (`nph_intern`).
    pub name_id: u32,
    /// Device index.
    pub device: u16,
    /// `NPC_KERNEL_*`.
    pub kind: u16,
    /// Correlation id (`nph_next_corr_id`).
    pub corr_id: u64,
    /// FLOPs of the kernel.
    pub flops: u64,
    /// Bytes read and written (for a copy: bytes copied).
    pub bytes: u64,
    /// Matmul: batch count.
    pub batch: u64,
    /// Matmul: rows.
    pub m: u64,
    /// Matmul: depth.
    pub k: u64,
    /// Matmul: columns.
    pub n: u64,
    /// Elementwise: elements.
    pub elements: u64,
    /// Elementwise: streamed inputs.
    pub inputs: u32,
    /// `NPC_DTYPE_*`.
    pub dtype: u16,
    /// Elementwise: `NPC_ENGINE_*`.
    pub engine: u16,
    /// Matmul: 1 when a bias row is added.
    pub bias: u32,
    /// Execution queue (the stream: 0 is the default stream; see `npc_queue_count`).
    pub queue: u16,
    /// Must be 0.
    pub reserved: u16,
}

/// Where the timing model placed a kernel (process timeline ns, as `nph_now_ns`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NpcKernelSpan {
    /// Correlation id.
    pub corr_id: u64,
    /// Execution queue.
    pub queue: u64,
    /// Modeled start.
    pub start_ns: u64,
    /// Modeled end.
    pub end_ns: u64,
}

/// A device's allocator statistics.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NpcMemoryStats {
    /// Bytes in allocated blocks.
    pub allocated_bytes: u64,
    /// Bytes in reserved segments.
    pub reserved_bytes: u64,
    /// Peak of `allocated_bytes`.
    pub peak_allocated_bytes: u64,
    /// Peak of `reserved_bytes`.
    pub peak_reserved_bytes: u64,
    /// HBM capacity of the device.
    pub capacity_bytes: u64,
    /// Allocations so far.
    pub num_allocs: u64,
    /// Frees so far.
    pub num_frees: u64,
    /// Out-of-memory failures so far.
    pub num_ooms: u64,
}

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The device profile the runtime started with, before a straggler's slowdown: what
/// the links between the ranks are built from (`collective::topology`), so that every
/// rank process costs a collective alike, as the single-process ranks share one
/// topology built from the unslowed profile (`dist::World`).
static LINK_PROFILE: OnceLock<DeviceProfile> = OnceLock::new();

/// The unslowed profile of the process's runtime (starting it if needed).
pub(crate) fn link_profile() -> Result<&'static DeviceProfile, String> {
    runtime()?;
    LINK_PROFILE
        .get()
        .ok_or_else(|| "the runtime started without a device profile".to_owned())
}

fn start_runtime(profile: Option<&str>) -> Result<Runtime, String> {
    let name = profile.unwrap_or("trn2");
    let mut profile = DeviceProfile::builtin(name)
        .ok_or_else(|| format!("unknown device profile {name:?} (trn2, trn2-lnc1, trn3, ...)"))?;
    let _ = LINK_PROFILE.set(profile.clone());
    if let Some(factor) = straggler_factor(
        std::env::var("NEURONPROF_STRAGGLER").ok().as_deref(),
        std::env::var("RANK").ok().as_deref(),
    )? {
        profile = profile.slowed(factor);
    }
    let runtime = Runtime::new(profile).map_err(|e| e.to_string())?;
    runtime.set_detail(detail_setting(
        std::env::var("NEURONPROF_DETAIL").ok().as_deref(),
    )?);
    Ok(runtime)
}

/// `NEURONPROF_DETAIL`: what the device records for a profile. `kernels` (the default)
/// records kernels, copies and memsets, what the Kineto plugin shows; `instructions` also
/// records each kernel's engine instructions and DMA transfers, which the extension
/// writes into every trace PyTorch exports (`warp`, as `neuron_instruction` and
/// `neuron_dma` rows under their kernel), as `neuronprof run --detail instructions`
/// does. Instructions cost recording time and trace size, so they are asked for.
pub(crate) fn detail_setting(setting: Option<&str>) -> Result<RecordDetail, String> {
    match setting.map(str::trim) {
        None | Some("") | Some("kernels") => Ok(RecordDetail::Kernels),
        Some("instructions") => Ok(RecordDetail::Instructions),
        Some(other) => Err(format!(
            "NEURONPROF_DETAIL={other:?}: expected `kernels` (the default) or `instructions`"
        )),
    }
}

/// What the process's devices record (`NEURONPROF_DETAIL`); kernels when the runtime
/// did not start.
pub(crate) fn record_detail() -> RecordDetail {
    runtime()
        .ok()
        .and_then(|r| r.device(0).ok())
        .map_or(RecordDetail::Kernels, |d| d.detail())
}

/// `NEURONPROF_STRAGGLER=RANK:FACTOR` (as `neuronprof run --straggler`): the factor
/// this process's device is slowed by when its `RANK` (PyTorch's global rank, as
/// `torchrun` sets it) is the one named; `None` for every other rank or when unset.
pub(crate) fn straggler_factor(
    setting: Option<&str>,
    rank: Option<&str>,
) -> Result<Option<f64>, String> {
    let Some(setting) = setting.filter(|s| !s.trim().is_empty()) else {
        return Ok(None);
    };
    let bad = |why: &str| {
        format!("NEURONPROF_STRAGGLER={setting:?}: {why} (expected RANK:FACTOR, e.g. 2:1.5)")
    };
    let (slow, factor) = setting
        .trim()
        .split_once(':')
        .ok_or_else(|| bad("no ':'"))?;
    let slow: u64 = slow.trim().parse().map_err(|_| bad("bad rank"))?;
    let factor: f64 = factor.trim().parse().map_err(|_| bad("bad factor"))?;
    if !(factor >= 1.0 && factor.is_finite()) {
        return Err(bad("the factor must be a number >= 1"));
    }
    let me = match rank {
        Some(r) => r
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("RANK={r:?} is not a number (NEURONPROF_STRAGGLER needs it)"))?,
        None => 0,
    };
    Ok((me == slow).then_some(factor))
}

/// The process's runtime (started with `trn2` if `npc_init` was not called).
pub(crate) fn runtime() -> Result<&'static Runtime, String> {
    RUNTIME
        .get_or_init(|| start_runtime(None))
        .as_ref()
        .map_err(Clone::clone)
}

pub(crate) fn device(index: u16) -> Result<Device, (i32, String)> {
    let runtime = runtime().map_err(|e| (NPC_ERR_NO_DEVICE, e))?;
    runtime
        .device(usize::from(index))
        .map_err(|e| (NPC_ERR_NO_DEVICE, e.to_string()))
}

/// Starts the process's runtime with the built-in device `profile` (null: `trn2`) and
/// returns its device count; 0 on error (see `npc_last_error`). Later calls return the
/// first runtime's count, whatever they name.
///
/// # Safety
///
/// `profile` must be null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn npc_init(profile: *const c_char) -> i32 {
    let name = if profile.is_null() {
        None
    } else {
        // SAFETY: the caller guarantees a NUL-terminated string.
        Some(
            unsafe { CStr::from_ptr(profile) }
                .to_string_lossy()
                .into_owned(),
        )
    };
    let mut count = 0;
    let status = guard(|| {
        match RUNTIME
            .get_or_init(|| start_runtime(name.as_deref()))
            .as_ref()
        {
            Ok(runtime) => {
                count = runtime.device_count() as i32;
                NPC_OK
            }
            Err(e) => fail(NPC_ERR_NO_DEVICE, e.clone()),
        }
    });
    if status == NPC_OK {
        count
    } else {
        0
    }
}

/// Number of devices (logical NeuronCores); 0 when the runtime failed to start.
#[no_mangle]
pub extern "C" fn npc_device_count() -> i32 {
    crate::error::guard_value("npc_device_count", 0, || {
        runtime().map_or(0, |r| r.device_count() as i32)
    })
}

fn stats_of(device: &Device) -> NpcMemoryStats {
    let s = device.memory_stats();
    NpcMemoryStats {
        allocated_bytes: s.allocated_bytes,
        reserved_bytes: s.reserved_bytes,
        peak_allocated_bytes: s.peak_allocated_bytes,
        peak_reserved_bytes: s.peak_reserved_bytes,
        capacity_bytes: device.memory_capacity_bytes(),
        num_allocs: s.num_allocs,
        num_frees: s.num_frees,
        num_ooms: s.num_ooms,
    }
}

/// One statistic of [`NpcDeviceStats`] (c10's `Stat`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NpcStat {
    /// Value now.
    pub current: u64,
    /// Largest value since the last peak reset.
    pub peak: u64,
    /// Sum of increases since the last accumulated reset.
    pub allocated: u64,
    /// Sum of decreases since the last accumulated reset.
    pub freed: u64,
}

/// A device's allocator statistics in the shape of c10's `DeviceStats`: each array is
/// [all, small pool, large pool] (`neuron_backend::PoolStats` says what each counts).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NpcDeviceStats {
    /// Blocks handed out.
    pub allocation: [NpcStat; 3],
    /// Segments reserved.
    pub segment: [NpcStat; 3],
    /// Allocated blocks and freed blocks a stream still uses.
    pub active: [NpcStat; 3],
    /// Free blocks of split segments.
    pub inactive_split: [NpcStat; 3],
    /// Bytes of allocated blocks.
    pub allocated_bytes: [NpcStat; 3],
    /// Bytes of reserved segments.
    pub reserved_bytes: [NpcStat; 3],
    /// Bytes of active blocks.
    pub active_bytes: [NpcStat; 3],
    /// Bytes of inactive split blocks.
    pub inactive_split_bytes: [NpcStat; 3],
    /// Bytes requested (before rounding) of active blocks.
    pub requested_bytes: [NpcStat; 3],
    /// Reservations retried after releasing the cache.
    pub num_alloc_retries: u64,
    /// Out-of-memory failures.
    pub num_ooms: u64,
    /// Segments reserved from HBM.
    pub num_device_alloc: u64,
    /// Segments released to HBM.
    pub num_device_free: u64,
    /// Waits for every stream to pass the pending frees.
    pub num_sync_all_streams: u64,
    /// HBM capacity.
    pub capacity_bytes: u64,
}

fn stat_array(array: &neuron_backend::StatArray) -> [NpcStat; 3] {
    array.map(|s| NpcStat {
        current: s.current,
        peak: s.peak,
        allocated: s.allocated,
        freed: s.freed,
    })
}

/// Writes `device`'s allocator statistics, c10 `DeviceStats` style, to `out`.
///
/// # Safety
///
/// `out` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_device_stats(device_index: u16, out: *mut NpcDeviceStats) -> i32 {
    if out.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_device_stats: null out-pointer");
    }
    guard(|| match device(device_index) {
        Err((status, message)) => fail(status, message),
        Ok(device) => {
            let s = device.memory_stats();
            let p = &s.pools;
            let stats = NpcDeviceStats {
                allocation: stat_array(&p.allocation),
                segment: stat_array(&p.segment),
                active: stat_array(&p.active),
                inactive_split: stat_array(&p.inactive_split),
                allocated_bytes: stat_array(&p.allocated_bytes),
                reserved_bytes: stat_array(&p.reserved_bytes),
                active_bytes: stat_array(&p.active_bytes),
                inactive_split_bytes: stat_array(&p.inactive_split_bytes),
                requested_bytes: stat_array(&p.requested_bytes),
                num_alloc_retries: s.num_alloc_retries,
                num_ooms: s.num_ooms,
                num_device_alloc: s.num_device_alloc,
                num_device_free: s.num_device_free,
                num_sync_all_streams: s.num_sync_all_streams,
                capacity_bytes: device.memory_capacity_bytes(),
            };
            // SAFETY: checked non-null; the caller guarantees it is valid for writes.
            unsafe { out.write(stats) };
            NPC_OK
        }
    })
}

/// One block of a device's allocator (`npc_memory_blocks`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NpcBlock {
    /// Address of its segment.
    pub segment_addr: u64,
    /// Size of its segment.
    pub segment_bytes: u64,
    /// Address of the block.
    pub addr: u64,
    /// Size of the block.
    pub bytes: u64,
    /// Bytes its caller asked for (0 when free).
    pub requested_bytes: u64,
    /// The stream (queue) its segment serves.
    pub stream: u16,
    /// 1: the small pool, 0: the large pool.
    pub small_pool: u8,
    /// [`NPC_BLOCK_ALLOCATED`], [`NPC_BLOCK_PENDING_FREE`] or [`NPC_BLOCK_FREE`].
    pub state: u8,
    /// Must be 0.
    pub reserved: u32,
}

/// `NpcBlock::state`: handed out.
pub const NPC_BLOCK_ALLOCATED: u8 = 0;
/// `NpcBlock::state`: freed while a stream may still use it.
pub const NPC_BLOCK_PENDING_FREE: u8 = 1;
/// `NpcBlock::state`: free (cached).
pub const NPC_BLOCK_FREE: u8 = 2;

/// Writes up to `cap` blocks of `device`'s allocator (every block of every segment, by
/// address) to `out`; returns how many there are (call with `cap` 0 to size `out`), or
/// -1 for a device that does not exist.
///
/// # Safety
///
/// `out` must be valid for writes of `cap` blocks (may be null when `cap` is 0).
#[no_mangle]
pub unsafe extern "C" fn npc_memory_blocks(
    device_index: u16,
    out: *mut NpcBlock,
    cap: usize,
) -> i64 {
    crate::error::guard_value("npc_memory_blocks", -1, || {
        let Ok(device) = device(device_index) else {
            return -1;
        };
        let blocks = device.memory_blocks();
        if !out.is_null() {
            for (i, b) in blocks.iter().take(cap).enumerate() {
                let block = NpcBlock {
                    segment_addr: b.segment_addr,
                    segment_bytes: b.segment_bytes,
                    addr: b.addr,
                    bytes: b.bytes,
                    requested_bytes: b.requested_bytes,
                    stream: b.stream,
                    small_pool: u8::from(b.small_pool),
                    state: match b.state {
                        neuron_backend::BlockState::Allocated => NPC_BLOCK_ALLOCATED,
                        neuron_backend::BlockState::PendingFree => NPC_BLOCK_PENDING_FREE,
                        neuron_backend::BlockState::Free => NPC_BLOCK_FREE,
                    },
                    reserved: 0,
                };
                // SAFETY: i < cap, and the caller guarantees `cap` writable blocks.
                unsafe { out.add(i).write(block) };
            }
        }
        blocks.len() as i64
    })
}

/// Allocates a block for `bytes` on `device` for work on queue `queue` (the caller's
/// current stream: blocks are reused in stream order) from its caching allocator
/// (recorded, with the totals after it). Writes the block's device address and size.
///
/// # Safety
///
/// `addr` and `block_bytes` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_allocate(
    device_index: u16,
    queue: u16,
    bytes: u64,
    addr: *mut u64,
    block_bytes: *mut u64,
) -> i32 {
    if addr.is_null() || block_bytes.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_allocate: null out-pointer");
    }
    guard(|| match device(device_index) {
        Err((status, message)) => fail(status, message),
        Ok(device) => match device.external_allocate(bytes, usize::from(queue)) {
            Ok((block_addr, size)) => {
                // SAFETY: both pointers were checked non-null; the caller guarantees
                // they are valid for writes.
                unsafe {
                    addr.write(block_addr);
                    block_bytes.write(size);
                }
                NPC_OK
            }
            Err(e @ neuron_backend::BackendError::OutOfMemory { .. }) => {
                fail(NPC_ERR_OUT_OF_MEMORY, e.to_string())
            }
            Err(e) => fail(NPC_ERR_ARGUMENT, e.to_string()),
        },
    })
}

/// Frees the block at `addr` of `device` (from `npc_allocate`); unknown addresses are
/// ignored. `used_by` (may be null when `n_used_by` is 0) lists the other queues whose
/// work used the block (`record_stream`): it is reused only once the work queued on
/// them so far has ended. Returns that modeled instant (process timeline ns) when the
/// block waits for it, 0 when it is reusable at once.
///
/// # Safety
///
/// `used_by` must be valid for reads of `n_used_by` queue indexes.
#[no_mangle]
pub unsafe extern "C" fn npc_free(
    device_index: u16,
    addr: u64,
    used_by: *const u16,
    n_used_by: u32,
) -> u64 {
    let queues: Vec<usize> = if used_by.is_null() || n_used_by == 0 {
        Vec::new()
    } else {
        // SAFETY: the caller guarantees `n_used_by` readable entries.
        unsafe { std::slice::from_raw_parts(used_by, n_used_by as usize) }
            .iter()
            .map(|&q| usize::from(q))
            .collect()
    };
    let mut ready_ns = 0;
    let _ = guard(|| {
        if let Ok(device) = device(device_index) {
            ready_ns = device.external_free(addr, &queues).unwrap_or(0);
        }
        NPC_OK
    });
    ready_ns
}

/// Writes `device`'s allocator statistics to `out`.
///
/// # Safety
///
/// `out` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_memory_stats(device_index: u16, out: *mut NpcMemoryStats) -> i32 {
    if out.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_memory_stats: null out-pointer");
    }
    guard(|| match device(device_index) {
        Err((status, message)) => fail(status, message),
        Ok(device) => {
            // SAFETY: checked non-null; the caller guarantees it is valid for writes.
            unsafe { out.write(stats_of(&device)) };
            NPC_OK
        }
    })
}

/// Runs `f` on `device_index`'s device; an error status when there is none.
fn with_device(device_index: u16, f: impl FnOnce(&Device)) -> i32 {
    guard(|| match device(device_index) {
        Err((status, message)) => fail(status, message),
        Ok(device) => {
            f(&device);
            NPC_OK
        }
    })
}

/// Sets `device`'s memory peaks to the current values (`reset_peak_memory_stats`).
#[no_mangle]
pub extern "C" fn npc_reset_peak_memory_stats(device_index: u16) -> i32 {
    crate::error::guard_value("npc_reset_peak_memory_stats", crate::NPC_ERR_PANIC, || {
        with_device(device_index, Device::reset_peak_memory_stats)
    })
}

/// Zeroes `device`'s counts of allocations, frees and out-of-memory failures
/// (`reset_accumulated_memory_stats`).
#[no_mangle]
pub extern "C" fn npc_reset_accumulated_memory_stats(device_index: u16) -> i32 {
    crate::error::guard_value(
        "npc_reset_accumulated_memory_stats",
        crate::NPC_ERR_PANIC,
        || with_device(device_index, Device::reset_accumulated_memory_stats),
    )
}

/// Releases `device`'s cached, fully free segments; returns the bytes released.
#[no_mangle]
pub extern "C" fn npc_empty_cache(device_index: u16) -> u64 {
    let mut released = 0;
    let _ = guard(|| {
        if let Ok(device) = device(device_index) {
            released = device.empty_cache();
        }
        NPC_OK
    });
    released
}

fn dtype(code: u16) -> Option<DType> {
    Some(match code {
        NPC_DTYPE_F32 => DType::F32,
        NPC_DTYPE_BF16 => DType::BF16,
        NPC_DTYPE_I64 => DType::I64,
        NPC_DTYPE_F8E4M3 => DType::F8E4M3,
        _ => return None,
    })
}

fn engine(code: u16) -> Option<Engine> {
    Engine::ALL.get(usize::from(code)).copied()
}

fn kernel_of(launch: &NpcLaunch) -> Result<ExternalKernel, String> {
    let dtype = dtype(launch.dtype).ok_or_else(|| format!("unknown dtype {}", launch.dtype))?;
    let copy = |direction| ExternalKernel::Copy {
        bytes: launch.bytes,
        direction,
    };
    Ok(match launch.kind {
        NPC_KERNEL_MATMUL => ExternalKernel::Matmul {
            batch: launch.batch,
            m: launch.m,
            k: launch.k,
            n: launch.n,
            dtype,
            bias: launch.bias != 0,
        },
        NPC_KERNEL_ELEMENTWISE => ExternalKernel::Elementwise {
            elements: launch.elements,
            inputs: launch.inputs,
            dtype,
            engine: engine(launch.engine)
                .ok_or_else(|| format!("unknown engine {}", launch.engine))?,
        },
        NPC_KERNEL_COPY_H2D => copy(DmaDirection::HostToDevice),
        NPC_KERNEL_COPY_D2H => copy(DmaDirection::DeviceToHost),
        NPC_KERNEL_COPY_D2D => copy(DmaDirection::DeviceToDevice),
        other => return Err(format!("unknown kernel kind {other}")),
    })
}

/// Launches a kernel: records the launch on the calling thread and places the kernel
/// with the timing model; writes where it was placed to `span` (may be null).
///
/// # Safety
///
/// `launch` must point to a valid `NpcLaunch`; `span` must be null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn npc_launch(launch: *const NpcLaunch, span: *mut NpcKernelSpan) -> i32 {
    if launch.is_null() {
        return fail(NPC_ERR_ARGUMENT, "npc_launch: null launch");
    }
    // SAFETY: checked non-null; the caller guarantees it points to an NpcLaunch.
    let launch = unsafe { *launch };
    guard(|| {
        let device = match device(launch.device) {
            Ok(device) => device,
            Err((status, message)) => return fail(status, message),
        };
        let kernel = match kernel_of(&launch) {
            Ok(kernel) => kernel,
            Err(message) => return fail(NPC_ERR_ARGUMENT, format!("npc_launch: {message}")),
        };
        let placed = device.external_launch(
            usize::from(launch.queue),
            &ExternalLaunch {
                name_id: NameId::from_u32(launch.name_id),
                corr_id: launch.corr_id,
                flops: launch.flops,
                bytes: launch.bytes,
                kernel,
            },
        );
        match placed {
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

pub(crate) fn span_of(span: &KernelSpan) -> NpcKernelSpan {
    NpcKernelSpan {
        corr_id: span.corr_id,
        queue: span.queue as u64,
        start_ns: span.start_ns,
        end_ns: span.end_ns,
    }
}

/// Waits (really) until the kernel `span` of `device` has ended, recorded as an
/// `nrt_tensor_read` of `bytes`; returns the host clock after (0 on a bad device).
///
/// # Safety
///
/// `span` must point to a valid `NpcKernelSpan`.
#[no_mangle]
pub unsafe extern "C" fn npc_read_wait(
    device_index: u16,
    span: *const NpcKernelSpan,
    bytes: u64,
) -> u64 {
    if span.is_null() {
        return 0;
    }
    // SAFETY: checked non-null; the caller guarantees it points to an NpcKernelSpan.
    let span = unsafe { *span };
    let mut after = 0;
    let _ = guard(|| {
        if let Ok(device) = device(device_index) {
            let span = KernelSpan {
                corr_id: span.corr_id,
                queue: span.queue as usize,
                start_ns: span.start_ns,
                end_ns: span.end_ns,
            };
            after = device.external_read_wait(&span, bytes);
        }
        NPC_OK
    });
    after
}

/// Waits (really) until all work on `device` (every device when negative) is done,
/// recorded as `nrt_synchronize`; returns the host clock after (0 on a bad device).
#[no_mangle]
pub extern "C" fn npc_synchronize(device_index: i32) -> u64 {
    let mut after = 0;
    let _ = guard(|| {
        let Ok(runtime) = runtime() else {
            return NPC_OK;
        };
        let devices: Vec<Device> = match u16::try_from(device_index) {
            Ok(index) => runtime.device(usize::from(index)).into_iter().collect(),
            Err(_) => (0..runtime.device_count())
                .filter_map(|i| runtime.device(i).ok())
                .collect(),
        };
        for device in devices {
            after = after.max(device.external_synchronize());
        }
        NPC_OK
    });
    after
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_straggler_setting_slows_only_the_rank_it_names() {
        assert_eq!(straggler_factor(None, Some("2")), Ok(None));
        assert_eq!(straggler_factor(Some("2:2"), Some("2")), Ok(Some(2.0)));
        assert_eq!(straggler_factor(Some("2:2"), Some("1")), Ok(None));
        assert_eq!(straggler_factor(Some("0:1.5"), None), Ok(Some(1.5)));
        let err = straggler_factor(Some("2:0.5"), Some("2")).unwrap_err();
        assert!(
            err.contains("NEURONPROF_STRAGGLER=\"2:0.5\"") && err.contains(">= 1"),
            "{err}"
        );
        assert!(straggler_factor(Some("x"), Some("2"))
            .unwrap_err()
            .contains("no ':'"));
        assert!(straggler_factor(Some("2:2"), Some("two"))
            .unwrap_err()
            .contains("RANK=\"two\""));
    }

    #[test]
    fn a_bad_launch_is_an_argument_error_with_a_message() {
        let launch = NpcLaunch {
            kind: 99,
            ..Default::default()
        };
        // SAFETY: `launch` is a valid NpcLaunch; the span pointer may be null.
        let status = unsafe { npc_launch(&launch, std::ptr::null_mut()) };
        assert_eq!(status, NPC_ERR_ARGUMENT);
        // SAFETY: null buffer with length 0 asks for the length only.
        let len = unsafe { crate::npc_last_error(std::ptr::null_mut(), 0) };
        assert!(len > 0);
    }

    #[test]
    fn a_device_out_of_range_is_reported() {
        let (mut addr, mut bytes) = (0, 0);
        // SAFETY: both out-pointers are valid.
        let status = unsafe { npc_allocate(u16::MAX, 0, 16, &mut addr, &mut bytes) };
        assert_eq!(status, NPC_ERR_NO_DEVICE);
    }

    #[test]
    fn a_matmul_launch_is_placed_and_synchronize_waits_for_it() {
        let launch = NpcLaunch {
            name_id: runtime_hooks::intern("mm_f32").as_u32(),
            device: 0,
            kind: NPC_KERNEL_MATMUL,
            corr_id: runtime_hooks::next_corr_id(),
            flops: 2 * 256 * 256 * 256,
            batch: 1,
            m: 256,
            k: 256,
            n: 256,
            dtype: NPC_DTYPE_F32,
            ..Default::default()
        };
        let mut span = NpcKernelSpan::default();
        // SAFETY: valid launch and span.
        assert_eq!(unsafe { npc_launch(&launch, &mut span) }, NPC_OK);
        assert_eq!(span.corr_id, launch.corr_id);
        assert!(span.end_ns > span.start_ns);
        assert!(npc_synchronize(-1) >= span.end_ns);
        let mut stats = NpcMemoryStats::default();
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { npc_memory_stats(0, &mut stats) }, NPC_OK);
        assert!(stats.capacity_bytes > 0);
    }
}
