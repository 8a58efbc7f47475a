//! Tensors: shape, dtype, placement and storage.
//!
//! A [`Tensor`] is a cheap handle (clone it freely) to contiguous storage on the host or
//! on a `neuron` device. Views (`reshape`, `view`, leading-dimension slices) share
//! storage. Device storage is a block of the device's caching allocator, returned when
//! the last handle is dropped or at once by [`Tensor::release`]; using a released
//! tensor is an error ([`BackendError::UseAfterFree`]).

mod data;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

pub(crate) use data::{Data, Values};

use crate::{BackendError, DType, Device};

/// Elements of a tensor of `shape`, or an error for `op` when the product of its
/// non-zero dimensions does not fit a `usize` (even if a zero makes the count 0).
///
/// Every tensor is made through this check (host tensors, kernel outputs, views), so
/// any product of a tensor's own dimensions fits; a product that wrapped (as
/// `iter().product()` does in a release build: 2³² × 2³² is 0) would pass the size
/// checks that guard the `unsafe` kernels.
pub(crate) fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize, BackendError> {
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| too_large(op, shape))?;
    Ok(if shape.contains(&0) { 0 } else { nonzero })
}

/// Bytes of a tensor of `shape` and `dtype`, or an error for `op` past `u64`.
pub(crate) fn checked_bytes(
    op: &'static str,
    shape: &[usize],
    dtype: DType,
) -> Result<u64, BackendError> {
    let numel = checked_numel(op, shape)?;
    u64::try_from(numel)
        .ok()
        .and_then(|n| n.checked_mul(dtype.size_bytes()))
        .ok_or_else(|| too_large(op, shape))
}

fn too_large(op: &'static str, shape: &[usize]) -> BackendError {
    BackendError::ShapeMismatch {
        op,
        shapes: vec![shape.to_vec()],
        reason: format!("the dimensions of {shape:?} multiply past 64 bits (elements or bytes)"),
    }
}

/// A tensor handle.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub(crate) shape: Arc<[usize]>,
    pub(crate) dtype: DType,
    pub(crate) storage: Arc<Storage>,
    /// Offset of the first element in the storage, in elements.
    pub(crate) offset: usize,
}

/// The memory behind one or more tensors.
#[derive(Debug)]
pub(crate) struct Storage {
    pub(crate) device: Option<Device>,
    pub(crate) addr: u64,
    pub(crate) data: RwLock<Data>,
    released: AtomicBool,
}

impl Storage {
    pub(crate) fn host(data: Data) -> Arc<Self> {
        Arc::new(Storage {
            device: None,
            addr: 0,
            data: RwLock::new(data),
            released: AtomicBool::new(false),
        })
    }

    pub(crate) fn on_device(device: Device, addr: u64, data: Data) -> Arc<Self> {
        Arc::new(Storage {
            device: Some(device),
            addr,
            data: RwLock::new(data),
            released: AtomicBool::new(false),
        })
    }

    fn release(&self) {
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(device) = &self.device {
            // The caching allocator's free is the framework's work (modeled on a
            // host-cost thread) and a boundary of a CPU-time clock.
            let _host = crate::dispatch::HostSide::enter();
            device.allocator().free(self.addr);
        }
        *self.data.write().unwrap_or_else(|p| p.into_inner()) = Data::Absent;
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.release();
    }
}

impl Tensor {
    /// A host `f32` tensor of `shape` holding `values` (row-major).
    pub fn from_f32(shape: &[usize], values: Vec<f32>) -> Result<Tensor, BackendError> {
        Self::host(shape, DType::F32, Data::F32(values), "from_f32")
    }

    /// A host `bf16` tensor of `shape` from `f32` values, each rounded to nearest even.
    pub fn from_f32_as_bf16(shape: &[usize], values: &[f32]) -> Result<Tensor, BackendError> {
        let bits = values.iter().map(|&v| crate::f32_to_bf16(v)).collect();
        Self::host(shape, DType::BF16, Data::Bf16(bits), "from_f32_as_bf16")
    }

    /// A host fp8 (e4m3fn) tensor of `shape` from `f32` values, each rounded to nearest
    /// even (matmul and linear inputs).
    pub fn from_f32_as_f8e4m3(shape: &[usize], values: &[f32]) -> Result<Tensor, BackendError> {
        let bits = values.iter().map(|&v| crate::f32_to_f8e4m3(v)).collect();
        Self::host(shape, DType::F8E4M3, Data::F8(bits), "from_f32_as_f8e4m3")
    }

    /// A host `i64` tensor of `shape` holding `values`.
    pub fn from_i64(shape: &[usize], values: Vec<i64>) -> Result<Tensor, BackendError> {
        Self::host(shape, DType::I64, Data::I64(values), "from_i64")
    }

    fn host(
        shape: &[usize],
        dtype: DType,
        data: Data,
        op: &'static str,
    ) -> Result<Tensor, BackendError> {
        let numel = checked_numel(op, shape)?;
        if data.len() != numel {
            return Err(BackendError::ShapeMismatch {
                op,
                shapes: vec![shape.to_vec()],
                reason: format!("shape holds {numel} elements, got {} values", data.len()),
            });
        }
        Ok(Tensor {
            shape: shape.into(),
            dtype,
            storage: Storage::host(data),
            offset: 0,
        })
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes of the elements (not of the allocator block).
    pub fn size_bytes(&self) -> u64 {
        self.numel() as u64 * self.dtype.size_bytes()
    }

    /// The device, or `None` on the host.
    pub fn device(&self) -> Option<&Device> {
        self.storage.device.as_ref()
    }

    /// Where the tensor lives: `cpu` or `neuron:i`.
    pub fn place(&self) -> String {
        match self.device() {
            Some(device) => device.to_string(),
            None => "cpu".into(),
        }
    }

    /// The device address of the first element (0 on the host).
    pub fn addr(&self) -> u64 {
        self.storage.addr + self.offset as u64 * self.dtype.size_bytes()
    }

    /// Whether the storage holds values (false for tensors computed with numerics off).
    pub fn has_values(&self) -> bool {
        !matches!(
            *self.storage.data.read().unwrap_or_else(|p| p.into_inner()),
            Data::Absent
        )
    }

    /// Whether [`release`](Self::release) was called on this storage.
    pub fn is_released(&self) -> bool {
        self.storage.released.load(Ordering::Acquire)
    }

    /// Tags the tensor's device memory with `category` (for statistics and OOM reports;
    /// new tensors take [`Device::category`]). Does nothing on the host.
    pub fn set_category(&self, category: crate::MemoryCategory) {
        if let Some(device) = self.device() {
            if !self.is_released() {
                device.allocator().retag(self.storage.addr, category);
            }
        }
    }

    /// Frees the storage now (for every handle sharing it); later use is an error.
    pub fn release(&self) {
        self.storage.release();
    }

    /// The values as `f32`, synchronizing with the device first if needed.
    pub fn to_vec_f32(&self) -> Result<Vec<f32>, BackendError> {
        let host = self.to_host()?;
        match host.values("to_vec_f32")? {
            Values::F32(values) => Ok(values),
            Values::I64(values) => Ok(values.into_iter().map(|v| v as f32).collect()),
        }
    }

    /// The values as `i64` (the tensor must be `i64`).
    pub fn to_vec_i64(&self) -> Result<Vec<i64>, BackendError> {
        let host = self.to_host()?;
        match host.values("to_vec_i64")? {
            Values::I64(values) => Ok(values),
            Values::F32(_) => Err(BackendError::DTypeMismatch {
                op: "to_vec_i64",
                dtypes: vec![self.dtype],
                expected: "i64".into(),
            }),
        }
    }

    /// Errors if released.
    pub(crate) fn check_live(&self, op: &'static str) -> Result<(), BackendError> {
        if self.is_released() {
            return Err(BackendError::UseAfterFree {
                op,
                shape: self.shape.to_vec(),
                device: self.place(),
            });
        }
        Ok(())
    }

    /// The tensor's values widened (`f32` for float types), or an error if absent.
    pub(crate) fn values(&self, op: &'static str) -> Result<Values, BackendError> {
        self.check_live(op)?;
        let data = self.storage.data.read().unwrap_or_else(|p| p.into_inner());
        data.values(self.offset, self.numel())
            .ok_or_else(|| BackendError::NumericsOff {
                op,
                shape: self.shape.to_vec(),
            })
    }

    /// A tensor sharing this storage with another shape and offset.
    pub(crate) fn view_as(&self, shape: &[usize], offset: usize) -> Tensor {
        Tensor {
            shape: shape.into(),
            dtype: self.dtype,
            storage: Arc::clone(&self.storage),
            offset,
        }
    }
}
