//! The runtime, its logical cores (`neuron:i`), streams and events.

mod stream;
mod wait;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use runtime_hooks::{RuntimeCallKind, RuntimeCallPayload, RuntimeCallScope};

pub use stream::{Event, QueueKind, Stream, USER_STREAM_POOL};
pub use wait::host_wait_ns;
pub(crate) use wait::wait_until;

use crate::allocator::Allocator;
use crate::timing::{EngineTime, KernelSpan, Timeline};
use crate::{BackendError, DeviceProfile, MemoryCategory, MemoryStats, RecordDetail};

/// A process's view of the emulated hardware: a profile and its logical cores.
#[derive(Debug, Clone)]
pub struct Runtime {
    profile: Arc<DeviceProfile>,
    devices: Vec<Device>,
}

impl Runtime {
    /// A runtime over `profile` with numerics on and instruction-level recording.
    pub fn new(profile: DeviceProfile) -> Result<Self, BackendError> {
        profile.validate().map_err(|reason| BackendError::Profile {
            source_name: profile.name.clone(),
            reason,
        })?;
        let profile = Arc::new(profile);
        let devices = (0..profile.logical_cores())
            .map(|index| Device::new(Arc::clone(&profile), index as u16))
            .collect::<Vec<_>>();
        crate::monitor::register_runtime(&devices);
        Ok(Runtime { profile, devices })
    }

    /// The `trn2` profile (LNC=2).
    pub fn trn2() -> Self {
        Self::new(DeviceProfile::trn2()).expect("the built-in profile is valid")
    }

    /// The profile in use.
    pub fn profile(&self) -> &DeviceProfile {
        &self.profile
    }

    /// Number of logical cores.
    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// Logical core `neuron:index`.
    pub fn device(&self, index: usize) -> Result<Device, BackendError> {
        self.devices
            .get(index)
            .cloned()
            .ok_or(BackendError::NoSuchDevice {
                index,
                count: self.devices.len(),
            })
    }

    /// Sets numerics on or off on every device (see [`Device::set_numerics`]).
    pub fn set_numerics(&self, on: bool) {
        self.devices.iter().for_each(|d| d.set_numerics(on));
    }

    /// Waits for every device ([`Device::synchronize`] on each); returns the host clock.
    pub fn synchronize(&self) -> u64 {
        self.devices
            .iter()
            .map(Device::synchronize)
            .max()
            .unwrap_or(0)
    }

    /// Sets the recording detail on every device.
    pub fn set_detail(&self, detail: RecordDetail) {
        self.devices.iter().for_each(|d| d.set_detail(detail));
    }
}

/// One logical NeuronCore, `neuron:i`. Cheap to clone; clones are the same device.
#[derive(Debug, Clone)]
pub struct Device {
    pub(crate) shared: Arc<DeviceShared>,
}

#[derive(Debug)]
pub(crate) struct DeviceShared {
    pub(crate) index: u16,
    pub(crate) profile: Arc<DeviceProfile>,
    numerics: AtomicBool,
    detail: AtomicU8,
    category: AtomicU8,
    current_queue: AtomicU8,
    pub(crate) allocator: Mutex<Allocator>,
    pub(crate) timeline: Mutex<Timeline>,
    pub(crate) live: crate::monitor::DeviceLive,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded state is updated in single steps; a panic elsewhere leaves it usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Device {
    pub(crate) fn new(profile: Arc<DeviceProfile>, index: u16) -> Self {
        let capacity = profile.hbm_bytes_per_core();
        Device {
            shared: Arc::new(DeviceShared {
                index,
                numerics: AtomicBool::new(true),
                detail: AtomicU8::new(RecordDetail::Instructions as u8),
                category: AtomicU8::new(MemoryCategory::Other as u8),
                current_queue: AtomicU8::new(0),
                allocator: Mutex::new(Allocator::new(index, capacity)),
                timeline: Mutex::new(Timeline::new(Arc::clone(&profile), index)),
                live: crate::monitor::DeviceLive::default(),
                profile,
            }),
        }
    }

    /// The index `i` of `neuron:i`.
    pub fn index(&self) -> usize {
        usize::from(self.shared.index)
    }

    /// The profile the device runs.
    pub fn profile(&self) -> &DeviceProfile {
        &self.shared.profile
    }

    /// Whether numerics are computed. Off (timing-only), ops keep shapes, memory and the
    /// whole timeline but produce tensors without values.
    pub fn numerics(&self) -> bool {
        self.shared.numerics.load(Ordering::Relaxed)
    }

    /// Turns numerics on or off.
    pub fn set_numerics(&self, on: bool) {
        self.shared.numerics.store(on, Ordering::Relaxed);
    }

    /// The recording detail.
    pub fn detail(&self) -> RecordDetail {
        match self.shared.detail.load(Ordering::Relaxed) {
            0 => RecordDetail::Kernels,
            _ => RecordDetail::Instructions,
        }
    }

    /// Sets the recording detail.
    pub fn set_detail(&self, detail: RecordDetail) {
        self.shared.detail.store(detail as u8, Ordering::Relaxed);
    }

    /// The category new tensors are tagged with.
    pub fn category(&self) -> MemoryCategory {
        MemoryCategory::ALL[usize::from(self.shared.category.load(Ordering::Relaxed))]
    }

    /// Tags tensors created from now on with `category`; returns the previous one.
    pub fn set_category(&self, category: MemoryCategory) -> MemoryCategory {
        let old = self.shared.category.swap(category as u8, Ordering::Relaxed);
        MemoryCategory::ALL[usize::from(old)]
    }

    /// Allocator statistics.
    pub fn memory_stats(&self) -> MemoryStats {
        lock(&self.shared.allocator).stats()
    }

    /// Every block of every segment of the allocator, by address.
    pub fn memory_blocks(&self) -> Vec<crate::BlockInfo> {
        lock(&self.shared.allocator).blocks()
    }

    /// Sets the allocator's peaks (allocated, reserved, per category) to the current
    /// values.
    pub fn reset_peak_memory_stats(&self) {
        lock(&self.shared.allocator).reset_peak_stats();
    }

    /// Zeroes the allocator's counts of allocations, frees and out-of-memory failures.
    pub fn reset_accumulated_memory_stats(&self) {
        lock(&self.shared.allocator).reset_accumulated_stats();
    }

    /// HBM capacity of the device in bytes.
    pub fn memory_capacity_bytes(&self) -> u64 {
        lock(&self.shared.allocator).capacity_bytes()
    }

    /// Releases cached, fully free segments; returns the bytes released.
    pub fn empty_cache(&self) -> u64 {
        lock(&self.shared.allocator).empty_cache()
    }

    /// Modeled busy time per engine so far.
    pub fn engine_time(&self) -> EngineTime {
        lock(&self.shared.timeline).engine_time()
    }

    /// The last kernel placed on this device (on any queue).
    pub fn last_kernel(&self) -> Option<KernelSpan> {
        lock(&self.shared.timeline).last_kernel()
    }

    /// Waits until all work submitted to the device is done: the host clock moves to
    /// the modeled completion (recorded as a synchronize runtime call).
    pub fn synchronize(&self) -> u64 {
        let _call = RuntimeCallScope::new(
            RuntimeCallKind::Synchronize,
            RuntimeCallPayload {
                name_id: runtime_hooks::name!("nrt_synchronize"),
                device: self.shared.index,
                ..Default::default()
            },
        );
        let done_ns = lock(&self.shared.timeline).all_done_ns();
        wait_until(done_ns)
    }

    pub(crate) fn timeline(&self) -> MutexGuard<'_, Timeline> {
        lock(&self.shared.timeline)
    }

    pub(crate) fn allocator(&self) -> MutexGuard<'_, Allocator> {
        lock(&self.shared.allocator)
    }

    pub(crate) fn current_queue(&self) -> usize {
        usize::from(self.shared.current_queue.load(Ordering::Relaxed))
    }

    /// Whether two handles are the same device.
    pub fn same(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "neuron:{}", self.shared.index)
    }
}
