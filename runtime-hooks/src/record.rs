//! The fixed-size record written into the rings, and its kinds.
//!
//! A [`Record`] is 64 bytes, aligned to a cache line, `#[repr(C)]`, and identical to
//! `nph_record` in `include/neuronprof_hooks.h`. It has a 24-byte header (kind, phase,
//! sub-kind, recording thread, start and end times) and a 40-byte [`Payload`] union
//! whose variant is chosen by the kind. Every payload variant is plain integers (or an
//! `f64`) with explicit reserved fields and no padding, so every byte of a record is
//! always initialized and any bit pattern is a valid value of any variant.

mod kinds;
mod payload;

pub use kinds::{
    CollectiveAlgorithm, CollectiveOp, DmaDirection, FlowKind, MemoryAction, Phase, RecordKind,
    RuntimeCallKind,
};
pub use payload::{
    CollectivePayload, CounterPayload, DmaPayload, FlowPayload, InstructionPayload, KernelPayload,
    MemoryPayload, OperatorPayload, Payload, RangePayload, RuntimeCallPayload, INPUT_SIG_SEPARATOR,
    PAYLOAD_BYTES,
};

/// Size of one record in bytes (one cache line).
pub const RECORD_BYTES: usize = 64;

/// One recorded event: a 24-byte header followed by a kind-specific payload.
///
/// `start_ns` and `end_ns` are on the process timeline (see [`crate::clock`]). For
/// [`Phase::Begin`], [`Phase::End`] and [`Phase::Instant`] records, `end_ns == start_ns`;
/// for [`Phase::Complete`] records they bound the activity.
///
/// The raw header fields are public so the layout stays obvious and matches the C header;
/// use [`Record::kind`], [`Record::phase`] and [`Record::event`] for typed access.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub struct Record {
    /// Record kind, a [`RecordKind`] value.
    pub kind: u8,
    /// Phase, a [`Phase`] value.
    pub phase: u8,
    /// Kind-specific sub-kind: [`RuntimeCallKind`], [`DmaDirection`], [`MemoryAction`],
    /// [`CollectiveOp`] or [`FlowKind`]; zero for the other kinds.
    pub op: u16,
    /// Registry index of the host thread that recorded it (see [`crate::ThreadStats`]).
    pub thread_id: u32,
    /// Start (or instant) time in nanoseconds on the process timeline.
    pub start_ns: u64,
    /// End time in nanoseconds; equal to `start_ns` unless the phase is `Complete`.
    pub end_ns: u64,
    /// Kind-specific payload; which variant is live is given by `kind`.
    pub payload: Payload,
}

const _: () = assert!(std::mem::size_of::<Record>() == RECORD_BYTES);
const _: () = assert!(std::mem::align_of::<Record>() == RECORD_BYTES);

/// A decoded view of a record's payload, chosen by its kind and sub-kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// A host operator (for example `aten::matmul`).
    Operator(OperatorPayload),
    /// A user range, including `ProfilerStep#N` (the step number is in `value`).
    UserRange(RangePayload),
    /// A runtime API call on the host.
    RuntimeCall(RuntimeCallKind, RuntimeCallPayload),
    /// A kernel on a device execution queue.
    Kernel(KernelPayload),
    /// One instruction on one engine of one NeuronCore.
    Instruction(InstructionPayload),
    /// A DMA transfer.
    Dma(DmaDirection, DmaPayload),
    /// A memory allocation or free, with totals after the change.
    Memory(MemoryAction, MemoryPayload),
    /// A collective operation.
    Collective(CollectiveOp, CollectivePayload),
    /// A counter sample.
    Counter(CounterPayload),
    /// One end of a flow link.
    Flow(FlowKind, FlowPayload),
}

impl Record {
    /// Builds a record; `thread_id` is left zero and filled in when it is recorded.
    #[inline]
    pub fn new(
        kind: RecordKind,
        phase: Phase,
        op: u16,
        start_ns: u64,
        end_ns: u64,
        payload: Payload,
    ) -> Self {
        Record {
            kind: kind as u8,
            phase: phase as u8,
            op,
            thread_id: 0,
            start_ns,
            end_ns,
            payload,
        }
    }

    /// The record kind, or `None` for a value this version does not know.
    pub fn kind(&self) -> Option<RecordKind> {
        RecordKind::from_raw(self.kind)
    }

    /// The phase, or `None` for a value this version does not know.
    pub fn phase(&self) -> Option<Phase> {
        Phase::from_raw(self.phase)
    }

    /// Duration in nanoseconds (`end_ns - start_ns`, zero if the end is before the start).
    pub fn dur_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// The payload as raw words; valid for every kind.
    pub fn payload_words(&self) -> [u64; 5] {
        self.payload.words()
    }

    /// Decodes the payload according to the kind (and sub-kind where there is one).
    ///
    /// Returns `None` if the kind or sub-kind is unknown.
    pub fn event(&self) -> Option<Event> {
        let p = &self.payload;
        Some(match self.kind()? {
            RecordKind::Operator => Event::Operator(p.host_op()),
            RecordKind::UserRange => Event::UserRange(p.range()),
            RecordKind::RuntimeCall => {
                Event::RuntimeCall(RuntimeCallKind::from_raw(self.op)?, p.runtime_call())
            }
            RecordKind::Kernel => Event::Kernel(p.kernel()),
            RecordKind::Instruction => Event::Instruction(p.instruction()),
            RecordKind::Dma => Event::Dma(DmaDirection::from_raw(self.op)?, p.dma()),
            RecordKind::Memory => Event::Memory(MemoryAction::from_raw(self.op)?, p.memory()),
            RecordKind::Collective => {
                Event::Collective(CollectiveOp::from_raw(self.op)?, p.collective())
            }
            RecordKind::Counter => Event::Counter(p.counter()),
            RecordKind::Flow => Event::Flow(FlowKind::from_raw(self.op)?, p.flow()),
        })
    }
}

impl PartialEq for Record {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.phase == other.phase
            && self.op == other.op
            && self.thread_id == other.thread_id
            && self.start_ns == other.start_ns
            && self.end_ns == other.end_ns
            && self.payload.words() == other.payload.words()
    }
}

impl Eq for Record {}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("Record");
        s.field("kind", &self.kind())
            .field("phase", &self.phase())
            .field("op", &self.op)
            .field("thread_id", &self.thread_id)
            .field("start_ns", &self.start_ns)
            .field("end_ns", &self.end_ns);
        match self.event() {
            Some(event) => s.field("event", &event),
            None => s.field("payload", &self.payload.words()),
        };
        s.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NameId;

    #[test]
    fn event_decodes_the_variant_named_by_the_kind() {
        let payload = KernelPayload {
            name_id: NameId::from_u32(7),
            device: 1,
            queue: 2,
            corr_id: 99,
            flops: 1000,
            bytes: 64,
            ..Default::default()
        };
        let rec = Record::new(
            RecordKind::Kernel,
            Phase::Complete,
            0,
            10,
            30,
            payload.into(),
        );
        assert_eq!(rec.event(), Some(Event::Kernel(payload)));
        assert_eq!(rec.dur_ns(), 20);
    }

    #[test]
    fn unknown_kind_or_sub_kind_decodes_to_none() {
        let mut rec = Record::new(
            RecordKind::Memory,
            Phase::Instant,
            77,
            1,
            1,
            Payload::default(),
        );
        assert_eq!(rec.event(), None);
        rec.kind = 200;
        assert_eq!(rec.kind(), None);
        assert_eq!(rec.event(), None);
    }

    #[test]
    fn records_compare_by_every_byte() {
        let a = Record::new(
            RecordKind::Counter,
            Phase::Instant,
            0,
            5,
            5,
            Payload::default(),
        );
        let mut b = a;
        assert_eq!(a, b);
        b.payload = CounterPayload {
            value: 1.5,
            ..Default::default()
        }
        .into();
        assert_ne!(a, b);
        assert!(format!("{b:?}").contains("1.5"));
    }
}
