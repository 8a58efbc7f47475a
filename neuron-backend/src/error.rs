//! The crate's error type: every variant says what went wrong and where (op, shapes,
//! device).

use std::fmt;

use crate::DType;

/// Everything that can go wrong in the backend. Errors never leave a device unusable.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendError {
    /// A device profile (or its override file) is unusable.
    Profile {
        /// The file, or `<string>`.
        source_name: String,
        /// What is wrong.
        reason: String,
    },
    /// `neuron:index` does not exist.
    NoSuchDevice {
        /// The index asked for.
        index: usize,
        /// How many logical cores there are.
        count: usize,
    },
    /// Input shapes do not fit the op.
    ShapeMismatch {
        /// The op, for example `aten::matmul`.
        op: &'static str,
        /// Shapes of the inputs, in argument order.
        shapes: Vec<Vec<usize>>,
        /// What the op needed.
        reason: String,
    },
    /// Input dtypes do not fit the op.
    DTypeMismatch {
        /// The op.
        op: &'static str,
        /// Dtypes of the inputs, in argument order.
        dtypes: Vec<DType>,
        /// What the op needed.
        expected: String,
    },
    /// Inputs live on different devices, or on the host where the op needs `neuron`.
    DeviceMismatch {
        /// The op.
        op: &'static str,
        /// Where each input lives (`cpu`, `neuron:0`, ...).
        devices: Vec<String>,
    },
    /// A tensor whose storage was released was used.
    UseAfterFree {
        /// The op.
        op: &'static str,
        /// Shape of the released tensor.
        shape: Vec<usize>,
        /// Its device.
        device: String,
    },
    /// An index is outside its dimension.
    IndexOutOfRange {
        /// The op.
        op: &'static str,
        /// The offending index.
        index: i64,
        /// The size of the dimension it indexes.
        size: usize,
        /// Which argument or dimension, in words.
        what: String,
    },
    /// The device allocator could not satisfy a request. The device stays usable: free
    /// tensors and retry.
    OutOfMemory {
        /// The device, for example `neuron:0`.
        device: String,
        /// Bytes asked for (after rounding to the size class).
        requested_bytes: u64,
        /// Capacity not reserved by any segment.
        free_bytes: u64,
        /// Bytes reserved in segments.
        reserved_bytes: u64,
        /// Bytes in allocated blocks.
        allocated_bytes: u64,
        /// HBM capacity of the device.
        capacity_bytes: u64,
        /// Categories holding the most memory, largest first.
        largest_categories: Vec<(String, u64)>,
    },
    /// Work was submitted to a stream that was released.
    StreamReleased {
        /// The op.
        op: &'static str,
        /// The stream, for example `neuron:0/tensor_op1`.
        stream: String,
    },
    /// Values were read from a tensor computed with numerics off.
    NumericsOff {
        /// The op or read that needed values.
        op: &'static str,
        /// Shape of the tensor.
        shape: Vec<usize>,
    },
    /// An argument other than a tensor is invalid.
    InvalidArgument {
        /// The op.
        op: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A collective waited longer than the world's timeout for ranks that never came.
    CollectiveTimeout {
        /// The collective, for example `all_reduce`.
        collective: &'static str,
        /// The process group's name.
        group: String,
        /// The collective's sequence number in the group (0 for the first).
        seq: u64,
        /// The rank (global) that waited.
        rank: usize,
        /// Global ranks that never arrived.
        missing_ranks: Vec<usize>,
        /// How long it waited, in ms of wall time.
        waited_ms: u64,
    },
    /// The ranks of a collective disagree (op, shape, dtype or root).
    CollectiveMismatch {
        /// The collective as this rank called it.
        collective: &'static str,
        /// The process group's name.
        group: String,
        /// What differs, naming the ranks.
        reason: String,
    },
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BackendError::*;
        match self {
            Profile {
                source_name,
                reason,
            } => write!(f, "device profile {source_name}: {reason}"),
            NoSuchDevice { index, count } => {
                write!(
                    f,
                    "no device neuron:{index}: the profile has {count} logical cores"
                )
            }
            ShapeMismatch { op, shapes, reason } => {
                write!(f, "{op}: shape mismatch for inputs {shapes:?}: {reason}")
            }
            DTypeMismatch {
                op,
                dtypes,
                expected,
            } => write!(
                f,
                "{op}: dtype mismatch for inputs {dtypes:?}: expected {expected}"
            ),
            DeviceMismatch { op, devices } => {
                write!(f, "{op}: inputs on different or wrong devices: {devices:?}")
            }
            UseAfterFree { op, shape, device } => write!(
                f,
                "{op}: use after free of a {shape:?} tensor on {device} (its storage was released)"
            ),
            IndexOutOfRange {
                op,
                index,
                size,
                what,
            } => write!(
                f,
                "{op}: index {index} out of range for {what} of size {size}"
            ),
            OutOfMemory {
                device,
                requested_bytes,
                free_bytes,
                reserved_bytes,
                allocated_bytes,
                capacity_bytes,
                largest_categories,
            } => {
                write!(
                    f,
                    "{device}: out of memory: tried to allocate {requested_bytes} bytes; \
                     capacity {capacity_bytes} bytes, {reserved_bytes} reserved, \
                     {allocated_bytes} allocated, {free_bytes} free"
                )?;
                if !largest_categories.is_empty() {
                    write!(f, "; largest categories:")?;
                    for (name, bytes) in largest_categories {
                        write!(f, " {name} {bytes} bytes;")?;
                    }
                }
                Ok(())
            }
            StreamReleased { op, stream } => {
                write!(
                    f,
                    "{op}: stream {stream} was released; work cannot be submitted to it"
                )
            }
            NumericsOff { op, shape } => write!(
                f,
                "{op}: the {shape:?} tensor has no values: it was computed with numerics off"
            ),
            InvalidArgument { op, reason } => write!(f, "{op}: {reason}"),
            CollectiveTimeout {
                collective,
                group,
                seq,
                rank,
                missing_ranks,
                waited_ms,
            } => write!(
                f,
                "{collective} #{seq} on process group {group}: rank {rank} timed out after \
                 {waited_ms} ms waiting for rank(s) {missing_ranks:?}, which never arrived"
            ),
            CollectiveMismatch {
                collective,
                group,
                reason,
            } => write!(f, "{collective} on process group {group}: {reason}"),
        }
    }
}

impl std::error::Error for BackendError {}

/// Shorthand for results of this crate.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;
