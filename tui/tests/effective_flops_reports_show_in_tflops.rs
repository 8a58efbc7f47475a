//! neuron-monitor as deployed names the flops counter `effective_flops` where AWS's
//! documentation shows `flops`: a report with it, read through `neuron-top --stdin`'s
//! reader, shows the same TFLOPS as the documented form.

mod common;

use analysis::live::{fixtures, DocumentReader};
use common::*;
use ratatui::crossterm::event::KeyCode;
use tui::{App, Event};

#[test]
fn effective_flops_reports_show_in_tflops() {
    // AWS's documented report, its counters renamed as deployed neuron-monitor writes them.
    let documented = fixtures::AWS_TRN2.replace('\n', " ");
    let deployed = documented.replace("\"flops\":", "\"effective_flops\":");
    assert_eq!(deployed.matches("\"effective_flops\":").count(), 4);
    assert!(!deployed.contains("\"flops\":"));

    let mut app = App::new("stdin");
    for result in DocumentReader::new(format!("{deployed}\n").as_bytes()) {
        app.handle(Event::Document(Box::new(
            result.expect("the report parses"),
        )));
    }
    assert_eq!(app.documents_applied, 1);
    key(&mut app, KeyCode::Char('F'));
    let s = text(&screen(&app, 80, 24));
    assert!(
        s.contains("152.1TF"),
        "core 0's effective_flops in TFLOPS:\n{s}"
    );
    assert!(s.contains("146.3TF"), "core 1's:\n{s}");
    // The same screen as the documented form.
    assert_eq!(s, {
        let mut app = app_with(&[aws()]);
        key(&mut app, KeyCode::Char('F'));
        text(&screen(&app, 80, 24))
    });
}
