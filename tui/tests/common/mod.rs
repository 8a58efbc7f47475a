//! Shared helpers of the integration tests (included with `mod common;`).
#![allow(dead_code)]

use analysis::live::{fixtures, parse_document, MonitorDocument};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use tui::{App, Event};

/// Renders `app` at `width`×`height`; returns the screen's lines.
pub fn screen(app: &App, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| tui::ui::draw(f, app)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect()
}

pub fn text(lines: &[String]) -> String {
    lines.join("\n")
}

pub fn aws() -> MonitorDocument {
    parse_document(fixtures::AWS_TRN2).unwrap()
}

pub fn ours() -> MonitorDocument {
    parse_document(fixtures::NEURONPROF_TWO_RANKS).unwrap()
}

pub fn app_with(docs: &[MonitorDocument]) -> App {
    let mut app = App::new("stdin");
    for d in docs {
        app.handle(Event::Document(Box::new(d.clone())));
    }
    app
}

pub fn key(app: &mut App, code: KeyCode) -> bool {
    app.handle(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

pub fn chars(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// Compares the screen with `tests/golden/<name>.txt`; `UPDATE_GOLDEN=1` rewrites it.
pub fn assert_golden(name: &str, lines: &[String]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.txt"));
    let actual = lines.join("\n") + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_GOLDEN=1 to create it)",
            path.display()
        )
    });
    if expected != actual {
        panic!(
            "screen differs from {}\n--- expected\n{expected}--- actual\n{actual}",
            path.display()
        );
    }
}

/// The row of `lines` containing `needle`, if any.
pub fn row_of(lines: &[String], needle: &str) -> Option<usize> {
    lines.iter().position(|l| l.contains(needle))
}
