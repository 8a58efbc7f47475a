//! A malformed document in the stream: an error line naming the document and byte
//! offset, the last good report stays on screen, later reports are applied.

mod common;

use analysis::live::DocumentReader;
use common::*;
use tui::{App, Event};

/// Feeds a byte stream through the same reader and events as `neuron-top --stdin`.
fn feed(app: &mut App, stream: &str) {
    for result in DocumentReader::new(stream.as_bytes()) {
        let event = match result {
            Ok(doc) => Event::Document(Box::new(doc)),
            Err(e) => Event::InputError(e.to_string()),
        };
        app.handle(event);
    }
}

#[test]
fn bad_line_between_good_reports() {
    let good = serde_json::to_string(&aws()).unwrap();
    let bad = r#"{"neuron_runtime_data": [{"pid": "not a number"}]}"#;
    let mut app = App::new("stdin");
    feed(&mut app, &format!("{good}\n{bad}\n"));
    let s = text(&screen(&app, 80, 24));
    let offset =
        good.len() + 1 + bad.find("\"not a number\"").unwrap() + "\"not a number\"".len() - 1;
    let expected = format!("error #1: document 1 (byte offset {offset}): invalid type");
    assert!(s.contains(&expected), "missing {expected:?}:\n{s}");
    assert!(s.contains("87.5%"), "the good report stays:\n{s}");
    // The stream goes on: a later report is applied.
    let mut busy = aws();
    busy.neuron_runtime_data[0]
        .report
        .neuroncore_counters
        .as_mut()
        .unwrap()
        .neuroncores_in_use
        .get_mut(&0)
        .unwrap()
        .neuroncore_utilization = 55.5;
    feed(
        &mut app,
        &format!("not json\n{}\n", serde_json::to_string(&busy).unwrap()),
    );
    let s = text(&screen(&app, 80, 24));
    assert!(s.contains("55.5%"), "{s}");
    assert!(
        s.contains(
            "error #2: document 0 (byte offset 0): expected a JSON object, found `not json`"
        ),
        "{s}"
    );
    assert_eq!(app.documents_applied, 2);
}

#[test]
fn truncated_report_then_good_ones() {
    let good = serde_json::to_string(&ours()).unwrap();
    let stream = format!("{}\n{good}\n", &good[..good.len() / 2]);
    let mut app = App::new("stdin");
    feed(&mut app, &stream);
    assert_eq!(app.errors, 1);
    assert_eq!(app.documents_applied, 1);
    let s = text(&screen(&app, 120, 40));
    assert!(s.contains("error #1: document 0"), "{s}");
    assert!(
        s.contains("waiting for rank 1"),
        "the good report is shown: {s}"
    );
}

#[test]
fn end_of_input_is_shown_without_error() {
    let mut app = app_with(&[aws()]);
    app.handle(Event::InputEnded(
        "standard input closed after 1 reports (5804 bytes)".into(),
    ));
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("input ended: standard input closed after 1 reports"),
        "{s}"
    );
    assert!(s.contains("87.5%"));
}
