//! The terminal loop: sources and the key reader feed one channel; the loop applies each
//! event to the [`App`] and redraws only when something changed.

use std::io::{self, Stdout};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::Duration;

use analysis::live::{replay_dir, DocumentReader, ReplayOptions};
use anyhow::{Context, Result};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self as ct_event, Event as CtEvent};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;

use crate::app::{App, Event};
use crate::args::{Args, Source};
use crate::roofline::ReplayRoofline;

/// Runs neuron-top until the user quits.
pub fn run(args: Args) -> Result<()> {
    let (tx, rx) = mpsc::channel();
    let app = match &args.source {
        Source::Stdin => {
            spawn_stdin(tx.clone());
            App::new("stdin")
        }
        Source::Replay {
            dir,
            period,
            device_spec,
        } => {
            // Named devices are checked before the traces are read.
            let device = device_spec
                .as_deref()
                .map(analysis::analyses::roofline::DeviceSpec::named)
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let options = ReplayOptions {
                period: *period,
                ..ReplayOptions::default()
            };
            eprintln!("neuron-top: reading the traces in {} …", dir.display());
            let series = replay_dir(dir, &options)
                .with_context(|| format!("cannot replay {}", dir.display()))?;
            let label = format!("replay {}", dir.display());
            eprintln!(
                "neuron-top: computing the operators' roofline of {} reports …",
                series.documents.len()
            );
            let roofline = ReplayRoofline::build(&series, device);
            let mut app = App::with_replay(label, series.documents, series.times_s);
            app.set_replay_roofline(roofline);
            spawn_ticks(tx.clone(), args.play_interval);
            app
        }
        Source::Live { pid } => crate::live::spawn(*pid, args.refresh, tx.clone())?,
    };
    spawn_signals(tx.clone())?;
    let mut terminal = TerminalGuard::enter()?;
    spawn_keys(tx);
    event_loop(&mut terminal.terminal, app, rx)
}

fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    mut app: App,
    rx: Receiver<Event>,
) -> Result<()> {
    terminal.draw(|f| crate::ui::draw(f, &app))?;
    // Test hook: the end-to-end test checks that a panic restores the terminal.
    if std::env::var_os("NEURON_TOP_TEST_PANIC").is_some() {
        panic!("NEURON_TOP_TEST_PANIC is set: panicking after the first draw");
    }
    while let Ok(event) = rx.recv() {
        let mut redraw = app.handle(event);
        // Apply everything already waiting, then draw once.
        while let Ok(event) = rx.try_recv() {
            redraw |= app.handle(event);
        }
        if app.quit {
            break;
        }
        if redraw {
            terminal.draw(|f| crate::ui::draw(f, &app))?;
        }
    }
    Ok(())
}

fn spawn_stdin(tx: Sender<Event>) {
    thread::spawn(move || {
        let stdin = io::stdin();
        let mut reader = DocumentReader::new(stdin.lock());
        for result in reader.by_ref() {
            let event = match result {
                Ok(doc) => Event::Document(Box::new(doc)),
                Err(e) => Event::InputError(e.to_string()),
            };
            if tx.send(event).is_err() {
                return;
            }
        }
        let note = format!(
            "standard input closed after {} reports ({} bytes)",
            reader.documents_read(),
            reader.byte_offset()
        );
        let _ = tx.send(Event::InputEnded(note));
    });
}

fn spawn_signals(tx: Sender<Event>) -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT])
        .context("cannot install signal handlers")?;
    thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _ = tx.send(Event::Signal(signal));
        }
    });
    Ok(())
}

fn spawn_ticks(tx: Sender<Event>, interval: Duration) {
    thread::spawn(move || loop {
        thread::sleep(interval);
        if tx.send(Event::Tick).is_err() {
            return;
        }
    });
}

fn spawn_keys(tx: Sender<Event>) {
    thread::spawn(move || loop {
        let event = match ct_event::read() {
            Ok(CtEvent::Key(key)) => Event::Key(key),
            Ok(CtEvent::Resize(..)) => Event::Resize,
            Ok(_) => continue,
            Err(e) => Event::InputError(format!("reading the terminal: {e}")),
        };
        let failed = matches!(event, Event::InputError(_));
        if tx.send(event).is_err() || failed {
            return;
        }
    });
}

/// Raw mode and the alternate screen, undone on drop and by a panic hook.
struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    fn enter() -> Result<Self> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        enable_raw_mode().context("cannot put the terminal in raw mode (is this a terminal?)")?;
        let mut stdout = io::stdout();
        if let Err(e) = execute!(stdout, EnterAlternateScreen, cursor::Hide) {
            restore_terminal();
            return Err(e).context("cannot enter the alternate screen");
        }
        let terminal = Terminal::new(CrosstermBackend::new(stdout))?;
        Ok(TerminalGuard { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Leaves raw mode and the alternate screen; safe to call more than once.
pub fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), LeaveAlternateScreen, cursor::Show);
}
