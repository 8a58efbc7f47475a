//! The 40-byte payload variants of a record and the union that holds them.
//!
//! Every variant is `#[repr(C)]`, exactly [`PAYLOAD_BYTES`] long, and made of integers (one
//! `f64`) with explicit `reserved*` fields instead of padding. Reserved fields must be zero.

use crate::NameId;

/// Size of the payload in bytes.
pub const PAYLOAD_BYTES: usize = 40;

/// The separator between `Input Dims` and `Input type` in an operator's input signature
/// (see [`OperatorPayload`]).
pub const INPUT_SIG_SEPARATOR: char = '|';

impl OperatorPayload {
    /// Splits an input signature string into its `Input Dims` and `Input type` JSON
    /// texts; `None` if it has no separator.
    ///
    /// ```
    /// use runtime_hooks::OperatorPayload;
    /// let sig = r#"[[2, 3], []]|["c10::BFloat16", "Scalar"]"#;
    /// assert_eq!(
    ///     OperatorPayload::split_input_sig(sig),
    ///     Some(("[[2, 3], []]", r#"["c10::BFloat16", "Scalar"]"#))
    /// );
    /// ```
    pub fn split_input_sig(sig: &str) -> Option<(&str, &str)> {
        sig.split_once(INPUT_SIG_SEPARATOR)
    }
}

/// Payload of a host operator record ([`RecordKind::Operator`](super::RecordKind::Operator)).
///
/// # Input signature
///
/// `input_sig_id` names an interned string holding the operator's inputs the way Kineto
/// writes them in an operator's args, two JSON texts joined by one `|`
/// ([`INPUT_SIG_SEPARATOR`]):
///
/// ```text
/// <Input Dims>|<Input type>
/// [[2, 3], [3, 4]]|["float", "c10::BFloat16"]
/// [[8, 16], []]|["float", "Scalar"]
/// []|[]
/// ```
///
/// - `Input Dims`: one list of dimension sizes per input, `, `-separated; a scalar
///   argument has `[]`.
/// - `Input type`: one quoted dtype per input, spelled as PyTorch writes them in Kineto
///   traces: `float`, `c10::BFloat16`, `long int`, `c10::Float8_e4m3fn`, and `Scalar`
///   for a scalar argument.
///
/// Neither half contains a `|`, so [`OperatorPayload::split_input_sig`] splits at the
/// only one; each half is valid JSON and can be written into the trace as is. Producers
/// intern each distinct signature once and keep its id; `NameId::NONE` means "not
/// recorded" (Kineto then writes no `Input Dims`/`Input type`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperatorPayload {
    /// Operator name, for example `aten::matmul`.
    pub name_id: NameId,
    /// Interned input signature, `<Input Dims>|<Input type>` (see above; `NONE`: none).
    pub input_sig_id: NameId,
    /// Correlation id shared with the runtime calls and kernels it caused (0: none).
    pub corr_id: u64,
    /// Autograd sequence number linking forward and backward operators (0: none).
    pub seq_nr: u64,
    /// Floating-point operations, if known (0: unknown).
    pub flops: u64,
    /// Bytes read and written, if known (0: unknown).
    pub bytes: u64,
}

/// Payload of a user range ([`RecordKind::UserRange`](super::RecordKind::UserRange)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangePayload {
    /// Range name, for example `ProfilerStep`.
    pub name_id: NameId,
    /// Reserved, zero.
    pub reserved0: u32,
    /// Correlation id (0: none).
    pub corr_id: u64,
    /// User value; for `ProfilerStep` the step number `N` of `ProfilerStep#N`.
    pub value: u64,
    /// Reserved, zero.
    pub reserved1: [u64; 2],
}

/// Payload of a runtime call ([`RecordKind::RuntimeCall`](super::RecordKind::RuntimeCall)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeCallPayload {
    /// Runtime function name, for example `nrt_execute`.
    pub name_id: NameId,
    /// Device index the call targets.
    pub device: u16,
    /// Execution queue the call targets.
    pub queue: u16,
    /// Correlation id; for a launch, the launched kernel's.
    pub corr_id: u64,
    /// Bytes moved by the call, if any.
    pub bytes: u64,
    /// Reserved, zero.
    pub reserved1: [u64; 2],
}

/// Payload of a device kernel ([`RecordKind::Kernel`](super::RecordKind::Kernel)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelPayload {
    /// Kernel name.
    pub name_id: NameId,
    /// Device index.
    pub device: u16,
    /// Execution queue ("stream") the kernel ran on.
    pub queue: u16,
    /// Correlation id of the launch.
    pub corr_id: u64,
    /// Floating-point operations (0: unknown).
    pub flops: u64,
    /// Bytes read and written (0: unknown).
    pub bytes: u64,
    /// Reserved, zero.
    pub reserved1: u64,
}

/// Payload of an engine instruction ([`RecordKind::Instruction`](super::RecordKind::Instruction)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InstructionPayload {
    /// Instruction (opcode) name.
    pub name_id: NameId,
    /// Device index.
    pub device: u16,
    /// NeuronCore index within the device.
    pub core: u8,
    /// Engine index within the core (as numbered by the backend).
    pub engine: u8,
    /// Correlation id of the kernel the instruction belongs to.
    pub corr_id: u64,
    /// Floating-point operations (0: unknown).
    pub flops: u64,
    /// Bytes read and written (0: unknown).
    pub bytes: u64,
    /// Reserved, zero.
    pub reserved1: u64,
}

/// Payload of a DMA transfer ([`RecordKind::Dma`](super::RecordKind::Dma)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DmaPayload {
    /// Transfer name (for example the DMA queue or the tensor).
    pub name_id: NameId,
    /// Device index.
    pub device: u16,
    /// DMA queue.
    pub queue: u16,
    /// Correlation id of the kernel or call that caused it.
    pub corr_id: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Source address.
    pub src_addr: u64,
    /// Destination address.
    pub dst_addr: u64,
}

/// Payload of a memory change ([`RecordKind::Memory`](super::RecordKind::Memory)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryPayload {
    /// Memory category (for example `activations`), or [`NameId::NONE`].
    pub category_id: NameId,
    /// Device index.
    pub device: u16,
    /// Reserved, zero.
    pub reserved0: u16,
    /// Address of the block.
    pub addr: u64,
    /// Size of the block in bytes.
    pub bytes: u64,
    /// Bytes allocated on the device after this change.
    pub total_allocated_bytes: u64,
    /// Bytes reserved by the allocator on the device after this change.
    pub total_reserved_bytes: u64,
}

/// Payload of a collective ([`RecordKind::Collective`](super::RecordKind::Collective)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CollectivePayload {
    /// Process group name.
    pub group_name_id: NameId,
    /// Device index.
    pub device: u16,
    /// Execution queue.
    pub queue: u16,
    /// Correlation id.
    pub corr_id: u64,
    /// Message size in bytes (input of this rank).
    pub bytes: u64,
    /// Number of ranks in the group.
    pub group_size: u32,
    /// This rank's index in the group.
    pub rank: u32,
    /// A [`CollectiveAlgorithm`](super::CollectiveAlgorithm) value.
    pub algorithm: u16,
    /// Element type code (the `c10::ScalarType` number).
    pub dtype: u16,
    /// Interned global ranks of the group as Kineto writes `Process Group Ranks`, for
    /// example `[0, 1, 2, 3]` (`NONE`: not recorded).
    pub group_ranks_id: NameId,
}

impl CollectivePayload {
    /// Elements of this rank's input (`In msg nelems`): `bytes` / `elem_bytes`.
    pub fn in_nelems(&self, elem_bytes: u64) -> u64 {
        self.bytes / elem_bytes.max(1)
    }

    /// Elements of this rank's output (`Out msg nelems`) for collective `op`: the input
    /// times the group size for an all-gather, divided by it for a reduce-scatter, the
    /// input for the others (barrier: 0 in, 0 out).
    pub fn out_nelems(&self, op: super::CollectiveOp, elem_bytes: u64) -> u64 {
        let in_nelems = self.in_nelems(elem_bytes);
        let ranks = u64::from(self.group_size.max(1));
        match op {
            super::CollectiveOp::AllGather => in_nelems * ranks,
            super::CollectiveOp::ReduceScatter => in_nelems / ranks,
            _ => in_nelems,
        }
    }
}

/// Payload of a counter sample ([`RecordKind::Counter`](super::RecordKind::Counter)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CounterPayload {
    /// Counter name.
    pub name_id: NameId,
    /// Device index the counter belongs to.
    pub device: u16,
    /// Reserved, zero.
    pub reserved0: u16,
    /// Sampled value.
    pub value: f64,
    /// Reserved, zero.
    pub reserved1: [u64; 3],
}

/// Payload of a flow end ([`RecordKind::Flow`](super::RecordKind::Flow)).
///
/// A flow starts at a [`Phase::Begin`](super::Phase::Begin) record and finishes at the
/// [`Phase::End`](super::Phase::End) record with the same kind and `flow_id`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowPayload {
    /// Flow name (optional).
    pub name_id: NameId,
    /// Reserved, zero.
    pub reserved0: u32,
    /// Flow id: a correlation id or an autograd sequence number.
    pub flow_id: u64,
    /// Reserved, zero.
    pub reserved1: [u64; 3],
}

/// The kind-specific part of a [`Record`](super::Record); the record's kind says which
/// field is live.
///
/// All fields are plain data of the same size without padding, so reading any field is
/// meaningful; the safe accessors ([`Payload::kernel`] and friends) do exactly that.
#[repr(C)]
#[derive(Clone, Copy)]
pub union Payload {
    /// Host operator.
    pub host_op: OperatorPayload,
    /// User range.
    pub range: RangePayload,
    /// Runtime call.
    pub runtime_call: RuntimeCallPayload,
    /// Device kernel.
    pub kernel: KernelPayload,
    /// Engine instruction.
    pub instruction: InstructionPayload,
    /// DMA transfer.
    pub dma: DmaPayload,
    /// Memory change.
    pub memory: MemoryPayload,
    /// Collective.
    pub collective: CollectivePayload,
    /// Counter sample.
    pub counter: CounterPayload,
    /// Flow end.
    pub flow: FlowPayload,
    /// The same bytes as five words.
    pub words: [u64; 5],
}

impl Default for Payload {
    fn default() -> Self {
        Payload { words: [0; 5] }
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Payload").field(&self.words()).finish()
    }
}

/// Generates a safe by-value accessor and a `From` conversion for one union field.
macro_rules! variant {
    ($field:ident: $ty:ty) => {
        const _: () = assert!(std::mem::size_of::<$ty>() == PAYLOAD_BYTES);

        impl Payload {
            #[doc = concat!("The payload read as [`", stringify!($ty), "`].")]
            #[inline]
            pub fn $field(&self) -> $ty {
                // SAFETY: every field of the union is a `#[repr(C)]` struct of
                // PAYLOAD_BYTES bytes of integers/f64 with no padding (checked by the size
                // assertion above and the layout tests), so all bytes of a `Payload` are
                // always initialized and every bit pattern is a valid `$ty`.
                unsafe { self.$field }
            }
        }

        impl From<$ty> for Payload {
            #[inline]
            fn from($field: $ty) -> Self {
                Payload { $field }
            }
        }
    };
}

variant!(host_op: OperatorPayload);
variant!(range: RangePayload);
variant!(runtime_call: RuntimeCallPayload);
variant!(kernel: KernelPayload);
variant!(instruction: InstructionPayload);
variant!(dma: DmaPayload);
variant!(memory: MemoryPayload);
variant!(collective: CollectivePayload);
variant!(counter: CounterPayload);
variant!(flow: FlowPayload);

impl Payload {
    /// The payload as five raw words; valid whatever the live variant.
    #[inline]
    pub fn words(&self) -> [u64; 5] {
        // SAFETY: as for the typed accessors: all variants are padding-free plain data of
        // the same size, so the bytes are initialized and valid as `[u64; 5]`.
        unsafe { self.words }
    }
}

impl From<[u64; 5]> for Payload {
    #[inline]
    fn from(words: [u64; 5]) -> Self {
        Payload { words }
    }
}
