//! Record kinds, phases and per-kind sub-kinds, with the raw values of the C header.

/// Defines a fieldless enum with explicit raw values and a `from_raw` decoder.
macro_rules! raw_enum {
    (
        $(#[$meta:meta])*
        $name:ident: $repr:ty {
            $($(#[$vmeta:meta])* $variant:ident = $value:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[repr($repr)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $value,)+
        }

        impl $name {
            /// Every value, in raw order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// Decodes a raw value; `None` if it names no variant.
            #[inline]
            pub fn from_raw(raw: $repr) -> Option<Self> {
                match raw {
                    $($value => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The raw value stored in a record.
            #[inline]
            pub fn raw(self) -> $repr {
                self as $repr
            }
        }
    };
}

raw_enum! {
    /// What a record describes; stored in [`Record::kind`](super::Record::kind).
    RecordKind: u8 {
        /// Host operator (payload: [`OperatorPayload`](super::OperatorPayload)).
        Operator = 1,
        /// User range such as `ProfilerStep#N` (payload: [`RangePayload`](super::RangePayload)).
        UserRange = 2,
        /// Runtime API call on the host
        /// (payload: [`RuntimeCallPayload`](super::RuntimeCallPayload), op: [`RuntimeCallKind`]).
        RuntimeCall = 3,
        /// Kernel on a device execution queue (payload: [`KernelPayload`](super::KernelPayload)).
        Kernel = 4,
        /// Instruction on one engine of one NeuronCore
        /// (payload: [`InstructionPayload`](super::InstructionPayload)).
        Instruction = 5,
        /// DMA transfer (payload: [`DmaPayload`](super::DmaPayload), op: [`DmaDirection`]).
        Dma = 6,
        /// Memory allocate/free (payload: [`MemoryPayload`](super::MemoryPayload),
        /// op: [`MemoryAction`]).
        Memory = 7,
        /// Collective (payload: [`CollectivePayload`](super::CollectivePayload),
        /// op: [`CollectiveOp`]).
        Collective = 8,
        /// Counter sample (payload: [`CounterPayload`](super::CounterPayload)).
        Counter = 9,
        /// One end of a flow link (payload: [`FlowPayload`](super::FlowPayload),
        /// op: [`FlowKind`]).
        Flow = 10,
    }
}

raw_enum! {
    /// How a record relates to the activity it describes.
    Phase: u8 {
        /// The activity starts at `start_ns`; a matching `End` on the same thread follows.
        Begin = 1,
        /// The activity that the last unmatched `Begin` of the same kind started ends.
        End = 2,
        /// The activity spans `start_ns..end_ns`.
        Complete = 3,
        /// A point in time (memory change, counter sample, flow end).
        Instant = 4,
    }
}

raw_enum! {
    /// Sub-kind of a [`RecordKind::RuntimeCall`] record.
    RuntimeCallKind: u16 {
        /// Any other runtime call (the name says which).
        Other = 0,
        /// Kernel launch; its `corr_id` is the kernel's.
        KernelLaunch = 1,
        /// Submission of work to a queue.
        QueueSubmit = 2,
        /// Synchronize (device or queue).
        Synchronize = 3,
        /// Event record.
        EventRecord = 4,
        /// Event wait.
        EventWait = 5,
        /// Memory copy issued by the host.
        MemoryCopy = 6,
    }
}

raw_enum! {
    /// Direction of a [`RecordKind::Dma`] transfer.
    DmaDirection: u16 {
        /// Host memory to device memory.
        HostToDevice = 1,
        /// Device memory to host memory.
        DeviceToHost = 2,
        /// Within one device.
        DeviceToDevice = 3,
        /// Between two devices.
        PeerToPeer = 4,
    }
}

raw_enum! {
    /// Sub-kind of a [`RecordKind::Memory`] record.
    MemoryAction: u16 {
        /// Memory was allocated.
        Allocate = 1,
        /// Memory was freed.
        Free = 2,
    }
}

raw_enum! {
    /// Sub-kind of a [`RecordKind::Collective`] record.
    CollectiveOp: u16 {
        /// All-reduce.
        AllReduce = 1,
        /// All-gather.
        AllGather = 2,
        /// Reduce-scatter.
        ReduceScatter = 3,
        /// Broadcast.
        Broadcast = 4,
        /// Reduce.
        Reduce = 5,
        /// All-to-all.
        AllToAll = 6,
        /// Point-to-point send.
        Send = 7,
        /// Point-to-point receive.
        Recv = 8,
        /// Barrier.
        Barrier = 9,
    }
}

raw_enum! {
    /// Algorithm of a collective, stored in [`CollectivePayload::algorithm`](super::CollectivePayload::algorithm).
    CollectiveAlgorithm: u16 {
        /// Not stated.
        Unspecified = 0,
        /// Ring.
        Ring = 1,
        /// Mesh (all-to-all links).
        Mesh = 2,
        /// Tree.
        Tree = 3,
        /// Hierarchical (intra-node, then inter-node).
        Hierarchical = 4,
        /// Recursive doubling (all-gather) / halving (reduce-scatter): log2(r) steps.
        RecursiveDoubling = 5,
        /// KangaRing, the Neuron runtime's ring variant for large messages (about r/2
        /// steps).
        KangaRing = 6,
    }
}

raw_enum! {
    /// Sub-kind of a [`RecordKind::Flow`] record.
    FlowKind: u16 {
        /// Runtime launch on the host to the kernel it launched (id = correlation id).
        LaunchToKernel = 1,
        /// Forward operator to its backward operator (id = autograd sequence number).
        ForwardToBackward = 2,
        /// Any other link.
        Other = 3,
        /// An event recorded on one device queue to a wait for it on another (id = the
        /// event's correlation id). The `profiler` crate draws these from the device's
        /// `Event Record` and `Stream Wait Event` marks.
        StreamWait = 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip() {
        for kind in RecordKind::ALL {
            assert_eq!(RecordKind::from_raw(kind.raw()), Some(*kind));
        }
        for op in CollectiveOp::ALL {
            assert_eq!(CollectiveOp::from_raw(op.raw()), Some(*op));
        }
        assert_eq!(RecordKind::from_raw(0), None);
        assert_eq!(Phase::from_raw(5), None);
        assert_eq!(RuntimeCallKind::from_raw(0), Some(RuntimeCallKind::Other));
    }
}
