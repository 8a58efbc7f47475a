//! Live metrics in neuron-monitor's JSON layout: the typed document, its parser, a
//! stream reader, and replay of recorded traces as the same documents.
//!
//! The wire format is AWS neuron-monitor's report (AWS's neuron-monitor user guide):
//! one JSON document per period with `neuron_runtime_data` (one entry per runtime, each
//! with the groups `neuroncore_counters`, `execution_stats`, `memory_used`,
//! `neuron_runtime_vcpu_usage`), `system_data`, `instance_info` and
//! `neuron_hardware_info`. neuronprof's publisher adds one object per runtime under
//! `report.neuronprof` ([`NeuronprofReport`]: engine utilization per core, HBM,
//! collectives, top operators, dropped records). Each rank of a multi-rank emulator
//! process is its own runtime entry, tagged `"<pid>/rank<N>"`.
//!
//! Design choices (the issue is silent on them):
//! - Every group is optional and unknown keys are ignored, so documents from AWS's
//!   neuron-monitor (no `neuronprof`, maybe more keys) and from newer publishers parse.
//!   Counters absent from a present group read as zero; latencies are `Option<f64>`
//!   (`null` when nothing ran).
//! - The types ([`model`], defined once in the `monitor-schema` crate) serialize back to
//!   the same layout (`serde::Serialize`): the publisher (`neuron-backend::monitor`)
//!   builds its reports with them and `neuronprof monitor` writes with them, so writer
//!   and readers cannot drift apart, and a document round-trips. Core and device indices are integer map keys (JSON strings `"0"`…).
//! - [`DocumentReader`] frames documents itself (brace counting outside strings) rather
//!   than using serde's stream deserializer, so one malformed document is reported with
//!   its index and byte offset and reading goes on with the next.
//! - [`replay`] turns a directory of rank traces into a time series of documents, so
//!   `neuron-top --replay` shows recorded runs in the same panes as live ones.
//!
//! # Example
//! ```
//! use analysis::live::{parse_document, DocumentReader};
//!
//! let doc = parse_document(analysis::live::fixtures::AWS_TRN2)?;
//! let entry = &doc.neuron_runtime_data[0];
//! let cores = &entry.report.neuroncore_counters.as_ref().unwrap().neuroncores_in_use;
//! assert_eq!(cores[&0].neuroncore_utilization, 87.52);
//! assert!(entry.report.neuronprof.is_none()); // AWS's own output
//!
//! // A stream: one document per line, a bad line in between.
//! let line = serde_json::to_string(&doc).unwrap();
//! let stream = format!("{line}\n{{oops\n{line}\n");
//! let results: Vec<_> = DocumentReader::new(stream.as_bytes()).collect();
//! assert!(results[0].is_ok() && results[1].is_err() && results[2].is_ok());
//! # Ok::<(), analysis::live::LiveError>(())
//! ```

mod error;
pub mod model;
pub mod replay;
mod stream;

pub use error::LiveError;
pub use model::*;
pub use replay::{replay_dir, ReplayOptions, ReplaySeries};
pub use stream::{parse_document, DocumentReader, MAX_DOCUMENT_BYTES};

/// Example documents for tests and docs.
pub mod fixtures {
    /// A realistic report from AWS's neuron-monitor on a trn2.48xlarge at LNC=2: one
    /// process on four logical cores (with their physical `v3d` halves), a loaded model,
    /// all system groups, no `neuronprof` extension.
    pub const AWS_TRN2: &str = include_str!("live/fixtures/aws-trn2.json");
    /// A report from neuronprof's publisher: one process with two ranks (two entries
    /// tagged `9001/rank0` and `9001/rank1`), each with the `neuronprof` extension.
    pub const NEURONPROF_TWO_RANKS: &str = include_str!("live/fixtures/neuronprof-2ranks.json");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        let doc = parse_document(text).unwrap();
        let json = serde_json::to_string(&doc).unwrap();
        let again = parse_document(&json).unwrap();
        assert_eq!(doc, again);
        // The serialized form has the input's layout: every value of the input is there.
        let input: serde_json::Value = serde_json::from_str(text).unwrap();
        let output: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_values_included(&input, &output, "");
    }

    /// Every key and value of `a` appears in `b` (numbers compared as f64).
    fn assert_values_included(a: &serde_json::Value, b: &serde_json::Value, path: &str) {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in a {
                    let w = b.get(k).unwrap_or_else(|| panic!("{path}.{k} lost"));
                    assert_values_included(v, w, &format!("{path}.{k}"));
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                assert_eq!(a.len(), b.len(), "{path}");
                for (i, (v, w)) in a.iter().zip(b).enumerate() {
                    assert_values_included(v, w, &format!("{path}[{i}]"));
                }
            }
            (Value::Number(a), Value::Number(b)) => {
                assert_eq!(a.as_f64(), b.as_f64(), "{path}")
            }
            _ => assert_eq!(a, b, "{path}"),
        }
    }

    #[test]
    fn aws_document_round_trips() {
        round_trip(fixtures::AWS_TRN2);
    }

    #[test]
    fn neuronprof_document_round_trips() {
        round_trip(fixtures::NEURONPROF_TWO_RANKS);
    }

    #[test]
    fn reference_example_parses() {
        // The example of AWS's neuron-monitor user guide, empty lists and all.
        let doc = parse_document(
            r#"{"neuron_runtime_data": [{ "pid": 1234, "address": "", "neuron_runtime_tag": "1234", "error": "",
              "report": {"neuroncore_counters": {"period": 1.000113182, "neuroncores_in_use": {
                "0": { "neuroncore_utilization": 42.01, "flops": 1234567891011,
                       "v3d": { "nc_v3.0": { "neuroncore_utilization": 21.01 }, "nc_v3.1": { "neuroncore_utilization": 63.01 } } }},
                "error": "" }}}],
              "system_data": {"neuron_hw_counters": { "period": 1.0, "neuron_devices": [], "error": "" }}}"#,
        )
        .unwrap();
        let core = &doc.neuron_runtime_data[0]
            .report
            .neuroncore_counters
            .as_ref()
            .unwrap()
            .neuroncores_in_use[&0];
        assert_eq!(core.flops, Some(1234567891011.0));
        assert_eq!(
            core.physical_cores(),
            vec![("v3d", "nc_v3.0", 21.01), ("v3d", "nc_v3.1", 63.01)]
        );
    }

    #[test]
    fn null_latencies_mean_nothing_ran() {
        let doc = parse_document(
            r#"{"neuron_runtime_data": [{"pid": 1, "report": {"execution_stats": {"period": 1.0,
                "latency_stats": {"total_latency": null, "device_latency": {"p0": null, "p50": null}}}}}]}"#,
        )
        .unwrap();
        let stats = doc.neuron_runtime_data[0]
            .report
            .execution_stats
            .as_ref()
            .unwrap();
        assert!(stats.latency_stats.total_latency.is_none());
        assert_eq!(
            stats.latency_stats.device_latency.as_ref().unwrap().p50,
            None
        );
        assert_eq!(stats.execution_summary.completed, 0);
    }

    #[test]
    fn neuronprof_extension_fields() {
        let doc = parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap();
        assert_eq!(doc.neuron_runtime_data.len(), 2);
        let ext = doc.neuron_runtime_data[1]
            .report
            .neuronprof
            .as_ref()
            .unwrap();
        assert_eq!(ext.rank, Some(1));
        assert_eq!(ext.engine_utilization[&2]["tensor"], 45.75);
        let coll = ext.collectives.as_ref().unwrap();
        assert_eq!(coll.slowest_rank, Some(1));
        assert_eq!(coll.histogram[1], (0.005, 22));
        assert_eq!(ext.top_operators[0].name, "aten::mm");
        assert_eq!(ext.dropped_records, 17);
    }
}
