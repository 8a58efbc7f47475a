//! A damaged gzip stream gives `Gzip` (or `Truncated`) naming the file; lenient mode
//! returns what decompressed cleanly before the damage.

use std::io::Write;

use trace_format::{
    Category, CollectSink, Event, Output, ReadError, TraceMeta, TraceReader, TraceWriter,
};

fn gzipped_trace(events: usize) -> Vec<u8> {
    let mut writer =
        TraceWriter::new(Output::gzip(Vec::new()), &TraceMeta::kineto(Some(0))).unwrap();
    for i in 0..events as i64 {
        // Varied names so the compressed stream is not trivially repetitive.
        let name = format!("op_{}_{}", i, i.wrapping_mul(2_654_435_761) % 1_000_003);
        writer
            .write_event(&Event::complete(Category::CpuOp, name, 1, 1, i * 1000, 500))
            .unwrap();
    }
    writer.finish().unwrap().close().unwrap()
}

#[test]
fn corrupt_gzip_is_reported() {
    let mut bytes = gzipped_trace(20_000);
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 64] {
        *b ^= 0x5A;
    }
    let mut file = tempfile::Builder::new()
        .suffix(".json.gz")
        .tempfile()
        .unwrap();
    file.write_all(&bytes).unwrap();
    let err = TraceReader::open(file.path())
        .read(&mut CollectSink::default())
        .unwrap_err();
    assert!(
        err.to_string().contains(&*file.path().to_string_lossy()),
        "{err}"
    );
    assert!(
        matches!(
            err,
            ReadError::Gzip { .. } | ReadError::Syntax { .. } | ReadError::InvalidUtf8 { .. }
        ),
        "{err:?}"
    );

    let mut sink = CollectSink::default();
    let report = TraceReader::open(file.path())
        .lenient(true)
        .read(&mut sink)
        .unwrap();
    assert!(report.damage.is_some());
    assert!(
        sink.events.len() > 1000,
        "events before the damage survive: {}",
        sink.events.len()
    );
}

#[test]
fn gzip_magic_with_garbage_after_it_is_a_gzip_error() {
    let bytes = [0x1f, 0x8b, 0x08, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    let err = TraceReader::from_slice("fake.json.gz", &bytes)
        .read(&mut CollectSink::default())
        .unwrap_err();
    assert!(matches!(err, ReadError::Gzip { .. }), "{err:?}");
    assert_eq!(&*err.location().file, "fake.json.gz");
}

#[test]
fn gzip_is_detected_by_content_not_extension() {
    let bytes = gzipped_trace(10);
    let mut sink = CollectSink::default();
    let report = TraceReader::from_slice("no-extension", &bytes)
        .read(&mut sink)
        .unwrap();
    assert!(report.gzip);
    assert_eq!(sink.events.len(), 11, "10 events and the Record Window End");
}
