//! The output decodes with Perfetto's official schema — the `perfetto_protos` crate's
//! bindings, generated from Perfetto's own `.proto` files — as `perfetto.protos.Trace`,
//! with no field the schema does not know.

mod common;

use exporters::PerfettoExporter;
use perfetto_protos::trace::Trace;
use protobuf::Message as _;

/// Decodes with Perfetto's schema and prints the text format, in which fields unknown
/// to the schema appear as bare field numbers (`47: 0x…`) and known ones by name.
fn decode(bytes: &[u8]) -> String {
    let trace = Trace::parse_from_bytes(bytes).expect("decodes as perfetto.protos.Trace");
    protobuf::text_format::print_to_string_pretty(&trace)
}

fn unknown_field_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect()
}

#[test]
fn output_decodes_with_perfettos_protos() {
    let dir = common::shared_dir();
    for file in [
        dir.join("torch-2.15/python_privateuse1_neuron.pt.trace.json.gz"),
        dir.join("hta/memory_events.json.gz"),
        dir.join("hta/two_rank-rank0.json.gz"),
    ] {
        let mut exporter = PerfettoExporter::new(Vec::new());
        exporter.add_path(&file).unwrap();
        let (bytes, stats) = exporter.finish().unwrap();
        let text = decode(&bytes);
        let name = file.display();
        let unknown = unknown_field_lines(&text);
        assert!(
            unknown.is_empty(),
            "{name}: fields unknown to Perfetto: {:?}",
            &unknown[..unknown.len().min(5)]
        );
        let begins = text.matches("type: TYPE_SLICE_BEGIN").count() as u64;
        assert_eq!(
            begins, stats.slices,
            "{name}: slices decoded with Perfetto's schema"
        );
        assert_eq!(
            text.matches("type: TYPE_COUNTER").count() as u64,
            stats.counter_values + stats.derived_counter_values,
            "{name}: counter values decoded with Perfetto's schema"
        );
        assert!(text.contains("trusted_packet_sequence_id: 1"));
        assert!(text.contains("clock_snapshot {"));
        assert!(text.contains("sequence_flags: 3"));
        if stats.flow_events > 0 {
            assert!(text.contains("flow_ids: "), "{name}: flows");
            assert!(text.contains("terminating_flow_ids: "), "{name}: flows");
        }
    }
}

#[test]
fn a_field_perfetto_does_not_know_is_caught() {
    // One TracePacket (Trace field 1, length-delimited) holding field 9999 (varint 1):
    // the check above must see it.
    let packet = [0xf8, 0xf0, 0x04, 0x01]; // tag (9999 << 3 | 0) as varint, then value 1
    let mut bytes = vec![0x0a, packet.len() as u8];
    bytes.extend_from_slice(&packet);
    let text = decode(&bytes);
    assert_eq!(unknown_field_lines(&text).len(), 1, "{text}");
}
