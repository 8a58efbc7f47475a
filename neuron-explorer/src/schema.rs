//! What this reader knows of the profile schema: versions, tables, and the columns it
//! reads with their types (from `profile-schema-reference.rst`, schema 7.4.0, in AWS's
//! `aws-neuron-sdk`; facts in `/work/shared/reference/neuron-explorer.md`).

/// Major versions of `Metadata.profile_schema_version` this reader reads: 7 (Neuron
/// 2.31, the published reference) and 12 (Neuron 2.33). A major version changes when a
/// table or field is removed or renamed or a type changes; the columns read here are
/// looked up by name and checked against their declared types, and `SchemaFields` lists
/// what a newer minor version adds.
pub const KNOWN_MAJORS: &[u32] = &[7, 12];

/// The schema version [`crate::write_profile`] writes.
pub const WRITTEN_VERSION: &str = "7.4.0";

/// The tables of schema 7.4.0 and those named as added after it (AWS's profile-schema
/// skill): an other table name is listed as unknown.
pub const KNOWN_TABLES: &[&str] = &[
    "ActiveTime",
    "AssemblyInstruction",
    "BirInstruction",
    "CcInstruction",
    "CcOp",
    "CcStream",
    "CoreBarriers",
    "CpuUsage",
    "DeviceProfileList",
    "DmaPacket",
    "DmaPacketAggregated",
    "DmaQueuesInfo",
    "DmaUsage",
    "DmaUsageSummary",
    "Error",
    "ExecutionInfo",
    "FileName",
    "Flow",
    "FrameworkInstruction",
    "FrameworkNode",
    "FunctionName",
    "HbmUsage",
    "HbmUsageSummaryByType",
    "HloInstruction",
    "HostMemUsage",
    "Instruction",
    "KernelInstructions",
    "KernelIterationVariables",
    "KernelStackFrames",
    "Metadata",
    "NeffHeader",
    "OpcodeSummary",
    "PendingDma",
    "PenguinInstruction",
    "PsumUsage",
    "SbufAllocation",
    "SbufUsage",
    "SchemaFields",
    "SemaphoreUpdate",
    "StackFrame",
    "StackFrameFileLocation",
    "StackFrameFileName",
    "StackFrameFunctionName",
    "Summary",
    "SystemProfileEvents",
    "SystemProfileHbmUsage",
    "SystemProfileMetadata",
    "TensorInfo",
    "Throttle",
    "ThrottleSummary",
    "Warning",
];

/// Column type kinds as the schema reference spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `integer (int64)` / `integer (int32)`.
    Int,
    /// `number (float)`.
    Float,
    /// `string` (and string enums).
    Str,
    /// `boolean`.
    Bool,
    /// `array of string`.
    List,
}

impl Kind {
    /// Whether a `SchemaFields.field_type` text declares this kind.
    pub fn matches_declared(self, declared: &str) -> bool {
        let d = declared.to_ascii_lowercase();
        match self {
            Kind::Int => d.starts_with("int"),
            Kind::Float => {
                d.starts_with("number") || d.starts_with("float") || d.starts_with("double")
            }
            Kind::Str => d.starts_with("string"),
            Kind::Bool => d.starts_with("bool"),
            Kind::List => d.starts_with("array"),
        }
    }
}

/// The columns this reader reads, per table, with their kinds; a column of a known table
/// outside this list is kept where the mapping keeps extras, else listed as unread.
pub const READ_COLUMNS: &[(&str, &[(&str, Kind)])] = &[
    (
        "SystemProfileEvents",
        &[
            ("id", Kind::Int),
            ("name", Kind::Str),
            ("start_ts", Kind::Int),
            ("end_ts", Kind::Int),
            ("duration_ns", Kind::Int),
            ("trace_event_source", Kind::Str),
            ("instance_id", Kind::Str),
            ("process_id", Kind::Int),
            ("thread_id", Kind::Int),
            ("nc_idx", Kind::Int),
            ("pcore_idx", Kind::Int),
            ("worker_gid", Kind::Int),
            ("flow_id", Kind::List),
            ("framework_stream_id", Kind::Str),
            ("extra_attributes_json", Kind::Str),
        ],
    ),
    (
        "Instruction",
        &[
            ("start_ts", Kind::Int),
            ("end_ts", Kind::Int),
            ("duration_ns", Kind::Int),
            ("engine", Kind::Str),
            ("pcore_idx", Kind::Int),
            ("opcode", Kind::Str),
            ("hlo_name", Kind::Str),
            ("raw_flops", Kind::Int),
            ("adjusted_flops", Kind::Int),
        ],
    ),
    (
        "DmaPacketAggregated",
        &[
            ("start_ts", Kind::Int),
            ("end_ts", Kind::Int),
            ("duration_ns", Kind::Int),
            ("pcore_idx", Kind::Int),
            ("queue_idx", Kind::Int),
            ("queue_name", Kind::Str),
            ("op", Kind::Str),
            ("transfer_bytes", Kind::Int),
            ("source", Kind::Str),
            ("dest", Kind::Str),
        ],
    ),
    (
        "DmaPacket",
        &[
            ("start_ts", Kind::Int),
            ("end_ts", Kind::Int),
            ("duration_ns", Kind::Int),
            ("pcore_idx", Kind::Int),
            ("queue_idx", Kind::Int),
            ("queue_name", Kind::Str),
            ("transfer_bytes", Kind::Int),
        ],
    ),
    (
        "CcOp",
        &[
            ("start_ts", Kind::Int),
            ("end_ts", Kind::Int),
            ("duration_ns", Kind::Int),
            ("operation", Kind::Str),
            ("algorithm", Kind::Str),
            ("num_elements", Kind::Int),
            ("dtype", Kind::Str),
            ("op_id", Kind::Int),
            ("stream_id", Kind::Int),
            ("input_size", Kind::Int),
            ("output_size", Kind::Int),
            ("replica_group_id", Kind::Int),
            ("replica_group", Kind::Str),
        ],
    ),
    (
        "ActiveTime",
        &[
            ("start_ts", Kind::Int),
            ("end_ts", Kind::Int),
            ("duration_ns", Kind::Int),
            ("engine", Kind::Str),
            ("pcore_idx", Kind::Int),
        ],
    ),
    (
        "CoreBarriers",
        &[
            ("start_ts", Kind::Int),
            ("end_ts", Kind::Int),
            ("duration_ns", Kind::Int),
            ("engine_name", Kind::Str),
            ("id", Kind::Int),
            ("semaphore", Kind::Int),
            ("compiler_opcode", Kind::Str),
            ("pcore_idx", Kind::Int),
        ],
    ),
    (
        "SemaphoreUpdate",
        &[
            ("timestamp", Kind::Int),
            ("id", Kind::Str),
            ("value", Kind::Int),
            ("pcore_idx", Kind::Int),
        ],
    ),
    (
        "Throttle",
        &[
            ("timestamp", Kind::Int),
            ("duration", Kind::Int),
            ("k", Kind::Int),
            ("n", Kind::Int),
            ("type", Kind::Str),
            ("pcore_idx", Kind::Int),
        ],
    ),
    (
        "HbmUsage",
        &[
            ("timestamp", Kind::Int),
            ("current_throughput", Kind::Float),
            ("total_transfer_bytes", Kind::Int),
            ("pcore_idx", Kind::Int),
        ],
    ),
    (
        "CpuUsage",
        &[
            ("timestamp", Kind::Int),
            ("util_percent", Kind::Float),
            ("cpu_id", Kind::Str),
            ("instance_id", Kind::Str),
        ],
    ),
    (
        "HostMemUsage",
        &[
            ("timestamp", Kind::Int),
            ("used_bytes", Kind::Int),
            ("used_percent", Kind::Float),
            ("instance_id", Kind::Str),
        ],
    ),
];

/// The columns read of `table` (empty for a table not read row by row).
pub fn read_columns(table: &str) -> &'static [(&'static str, Kind)] {
    READ_COLUMNS
        .iter()
        .find(|(t, _)| *t == table)
        .map_or(&[], |(_, c)| c)
}

/// The column names read of `table`.
pub fn column_names(table: &str) -> Vec<&'static str> {
    read_columns(table).iter().map(|(c, _)| *c).collect()
}

/// The major number of a `MAJOR.MINOR.PATCH` version.
pub fn major(version: &str) -> Option<u32> {
    version.trim().split('.').next()?.parse().ok()
}

/// The known majors as text (`7, 12`).
pub fn known_majors_text() -> String {
    KNOWN_MAJORS
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
