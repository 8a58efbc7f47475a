//! The first, cheap pass over a profile: its version, metadata, schema check and what the
//! event pass needs to know before it writes the trace's header (time base, rank, how
//! many physical cores make one logical core).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;

use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use serde_json::{Map, Value};

use crate::error::NeuronError;
use crate::layout::ProfileLayout;
use crate::schema::{self, Kind};
use crate::table::TableReader;
use crate::values::row_object;

/// What a read found wrong or incomplete, collected in lenient mode and always for what
/// is merely missing or unknown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    /// Errors skipped in lenient mode (each names its table, column and row group).
    pub problems: Vec<String>,
    /// Tables and columns this reader does not know (each listed once).
    pub unknown: Vec<String>,
    /// Tables the analyses would use that the profile does not have, and what is lost.
    pub missing: Vec<String>,
}

impl Findings {
    /// Strict: returns the error. Lenient: records it and goes on.
    pub fn fail(&mut self, lenient: bool, e: NeuronError) -> Result<(), NeuronError> {
        if lenient {
            self.problems.push(e.to_string());
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// What the survey learns.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    /// `Metadata.profile_schema_version`.
    pub version: Option<String>,
    /// The `Metadata` row (its first row), all columns.
    pub metadata: Map<String, Value>,
    /// The `Summary` row.
    pub summary: Map<String, Value>,
    /// The `SystemProfileMetadata` row.
    pub system_metadata: Map<String, Value>,
    /// Earliest start of a system event, else `Metadata.first_hw_timestamp` (ns).
    pub base_ns: Option<i64>,
    /// Distinct `worker_gid` values of runtime and device events.
    pub worker_gids: BTreeSet<i64>,
    /// Physical cores per logical core: the most distinct `pcore_idx` of one logical
    /// core's `nc_exec_running` rows (1 when there are none).
    pub lnc: usize,
    /// Logical cores with device executions.
    pub nc_idxs: BTreeSet<i64>,
}

/// Surveys `layout` (see the module docs).
pub fn survey(
    layout: &ProfileLayout,
    lenient: bool,
    findings: &mut Findings,
) -> Result<Survey, NeuronError> {
    let mut s = Survey {
        lnc: 1,
        ..Survey::default()
    };
    s.metadata = first_row(layout, "Metadata", lenient, findings)?;
    s.summary = first_row(layout, "Summary", lenient, findings)?;
    s.system_metadata = first_row(layout, "SystemProfileMetadata", lenient, findings)?;
    if layout.has("Metadata") {
        let file = layout.files("Metadata")[0].clone();
        match s
            .metadata
            .get("profile_schema_version")
            .and_then(Value::as_str)
        {
            Some(version) => {
                let known =
                    schema::major(version).is_some_and(|m| schema::KNOWN_MAJORS.contains(&m));
                if !known {
                    return Err(NeuronError::UnknownVersion {
                        file,
                        found: version.to_owned(),
                        major: schema::major(version)
                            .map_or_else(|| version.to_owned(), |m| m.to_string()),
                        known: schema::known_majors_text(),
                    });
                }
                s.version = Some(version.to_owned());
            }
            None if s.metadata.is_empty() => {}
            None => findings.fail(
                lenient,
                NeuronError::MissingColumn {
                    file,
                    table: "Metadata".into(),
                    column: "profile_schema_version".into(),
                },
            )?,
        }
    } else {
        findings
            .missing
            .push("Metadata: no schema version to check; read as the known schema".into());
    }
    check_schema(layout, lenient, findings)?;
    survey_events(layout, &mut s, lenient, findings)?;
    if s.base_ns.is_none() {
        s.base_ns = s.metadata.get("first_hw_timestamp").and_then(Value::as_i64);
    }
    Ok(s)
}

/// The first row of a small table as JSON (empty when the table is absent or empty).
fn first_row(
    layout: &ProfileLayout,
    table: &str,
    lenient: bool,
    findings: &mut Findings,
) -> Result<Map<String, Value>, NeuronError> {
    let files = layout.files(table);
    if files.is_empty() {
        return Ok(Map::new());
    }
    let mut reader = TableReader::new(table, files, &[]);
    loop {
        match reader.next_batch() {
            Ok(Some(batch)) if !batch.is_empty() => return Ok(row_object(&batch, 0)),
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => findings.fail(lenient, e)?,
        }
    }
    if table == "Metadata" {
        findings.fail(
            lenient,
            NeuronError::EmptyTable {
                file: files[0].clone(),
                table: table.into(),
            },
        )?;
    }
    Ok(Map::new())
}

/// Checks every table's columns against `SchemaFields` (when present) and lists the
/// unknown tables and columns once.
fn check_schema(
    layout: &ProfileLayout,
    lenient: bool,
    findings: &mut Findings,
) -> Result<(), NeuronError> {
    // (table, field) → (declared type, required).
    let mut declared: BTreeMap<(String, String), (String, bool)> = BTreeMap::new();
    let mut reader = TableReader::new(
        "SchemaFields",
        layout.files("SchemaFields"),
        &["table_name", "field_name", "field_type", "field_required"],
    );
    loop {
        let batch = match reader.next_batch() {
            Ok(Some(b)) => b,
            Ok(None) => break,
            Err(e) => {
                findings.fail(lenient, e)?;
                continue;
            }
        };
        let cols = (|| {
            Ok::<_, NeuronError>((
                batch.str_req("table_name")?,
                batch.str_req("field_name")?,
                batch.str_req("field_type")?,
                batch.bool("field_required")?,
            ))
        })();
        let (tables, fields, types, required) = match cols {
            Ok(c) => c,
            Err(e) => {
                findings.fail(lenient, e)?;
                continue;
            }
        };
        for row in 0..batch.len() {
            if let (Some(t), Some(f), Some(ty)) = (tables.get(row), fields.get(row), types.get(row))
            {
                let req = required.as_ref().and_then(|r| r.get(row)).unwrap_or(false);
                declared.insert((t.to_owned(), f.to_owned()), (ty.to_owned(), req));
            }
        }
    }
    let have_declared = !declared.is_empty();
    if !layout.has("SchemaFields") {
        findings
            .missing
            .push("SchemaFields: columns not checked against the profile's own schema".into());
    }
    for (table, files) in &layout.tables {
        if !schema::KNOWN_TABLES.contains(&table.as_str()) {
            findings.unknown.push(format!("table {table}"));
        }
        let Some(file) = files.first() else { continue };
        let fields = match File::open(file)
            .map_err(|e| NeuronError::io(file, e))
            .and_then(|f| {
                ArrowReaderMetadata::load(&f, Default::default()).map_err(|e| {
                    NeuronError::Parquet {
                        file: file.clone(),
                        table: table.clone(),
                        row_group: None,
                        message: e.to_string(),
                    }
                })
            }) {
            Ok(meta) => meta.schema().fields().clone(),
            Err(e) => {
                findings.fail(lenient, e)?;
                continue;
            }
        };
        for field in fields.iter() {
            let name = field.name();
            match declared.get(&(table.clone(), name.clone())) {
                Some((ty, _)) => {
                    if let Some(kind) = kind_of(field.data_type()) {
                        if !kind.matches_declared(ty) {
                            findings.fail(
                                lenient,
                                NeuronError::SchemaMismatch {
                                    file: file.clone(),
                                    table: table.clone(),
                                    column: name.clone(),
                                    declared: format!("type {ty}"),
                                    found: field.data_type().to_string(),
                                },
                            )?;
                        }
                    }
                }
                // Without SchemaFields the profile's own schema is unknown: columns
                // are then only checked when read.
                None if table != "SchemaFields" && have_declared => {
                    findings.unknown.push(format!("column {table}.{name}"));
                }
                None => {}
            }
        }
        for ((t, f), (ty, required)) in declared.range((table.clone(), String::new())..) {
            if t != table {
                break;
            }
            if *required && !fields.iter().any(|field| field.name() == f) {
                findings.fail(
                    lenient,
                    NeuronError::SchemaMismatch {
                        file: file.clone(),
                        table: table.clone(),
                        column: f.clone(),
                        declared: format!("a required {ty}"),
                        found: "no such column".into(),
                    },
                )?;
            }
        }
    }
    Ok(())
}

fn kind_of(t: &arrow_schema::DataType) -> Option<Kind> {
    use arrow_schema::DataType as D;
    Some(match t {
        D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt8 | D::UInt16 | D::UInt32 | D::UInt64 => {
            Kind::Int
        }
        D::Float16 | D::Float32 | D::Float64 => Kind::Float,
        D::Utf8 | D::LargeUtf8 | D::Utf8View => Kind::Str,
        D::Boolean => Kind::Bool,
        D::List(_) | D::LargeList(_) => Kind::List,
        _ => return None,
    })
}

/// Time base, workers and LNC from `SystemProfileEvents` (five columns only).
fn survey_events(
    layout: &ProfileLayout,
    s: &mut Survey,
    lenient: bool,
    findings: &mut Findings,
) -> Result<(), NeuronError> {
    let table = "SystemProfileEvents";
    if !layout.has(table) {
        findings.missing.push(
            "SystemProfileEvents: no host operators, runtime calls or device executions".into(),
        );
        return Ok(());
    }
    let mut pcores: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    let mut reader = TableReader::new(
        table,
        layout.files(table),
        &[
            "trace_event_source",
            "name",
            "start_ts",
            "nc_idx",
            "pcore_idx",
            "worker_gid",
        ],
    );
    loop {
        let batch = match reader.next_batch() {
            Ok(Some(b)) => b,
            Ok(None) => break,
            Err(e) => {
                findings.fail(lenient, e)?;
                continue;
            }
        };
        let result = (|| {
            let source = batch.str_req("trace_event_source")?;
            let name = batch.str_req("name")?;
            let start = batch.int_req("start_ts")?;
            let nc = batch.int("nc_idx")?;
            let pcore = batch.int("pcore_idx")?;
            let worker = batch.int("worker_gid")?;
            for row in 0..batch.len() {
                if let Some(ts) = start.get(row) {
                    s.base_ns = Some(s.base_ns.map_or(ts, |b: i64| b.min(ts)));
                }
                let source = source.get(row).unwrap_or("");
                if source == "framework" {
                    continue;
                }
                if let Some(w) = worker.as_ref().and_then(|w| w.get(row)) {
                    s.worker_gids.insert(w);
                }
                if source == "neuron_hw" && name.get(row) == Some(crate::events::EXEC_NAME) {
                    let nc = nc.as_ref().and_then(|c| c.get(row)).unwrap_or(0);
                    s.nc_idxs.insert(nc);
                    if let Some(p) = pcore.as_ref().and_then(|p| p.get(row)) {
                        pcores.entry(nc).or_default().insert(p);
                    }
                }
            }
            Ok::<_, NeuronError>(())
        })();
        if let Err(e) = result {
            findings.fail(lenient, e)?;
        }
    }
    s.lnc = pcores.values().map(BTreeSet::len).max().unwrap_or(1).max(1);
    Ok(())
}
