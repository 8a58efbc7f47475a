//! `neuron-top`: a terminal UI for neuron-monitor reports — live neuronprof processes,
//! AWS's own `neuron-monitor` on standard input, or recorded traces replayed.
//!
//! # Architecture
//! - [`app`]: the state ([`App`]), changed only by [`App::handle`] with an [`Event`]
//!   (a report, an input error, a process exit, a key, a resize, a replay tick). Pure
//!   and tested without a terminal.
//! - [`ui`]: drawing, a pure function of the state ([`ui::draw`]); tests render it into
//!   ratatui's `TestBackend` and compare buffers.
//! - [`run()`]: the terminal loop. Sources run on threads and feed one channel: the
//!   stdin reader ([`analysis::live::DocumentReader`]), the live poller (every refresh:
//!   [`analysis::live_client::discover`] the publishing processes of this user, fetch
//!   each one's report over the last refresh period, send one merged report; a process
//!   whose endpoint disappears becomes [`Event::Exited`]), the replay play timer
//!   ([`analysis::live::replay_dir`] builds the reports up front), and the key reader. The loop applies every waiting event, then draws once,
//!   and only when something changed, so an idle neuron-top costs nothing between
//!   reports. Raw mode and the alternate screen are undone on exit, on error, on SIGTERM,
//!   SIGHUP or SIGINT (a signal thread turns them into a normal quit) and by a panic
//!   hook.
//!
//! # Panes
//! AWS neuron-top's (AWS's neuron-monitor user guide): NeuronCore utilization
//! (`F`: % or TFLOPS), vCPU, memory summary (host and device categories), memory details
//! tree. Ours, from the `neuronprof` extension of the report: engine utilization per core
//! with history, HBM history, collectives (in flight, latency percentiles, the rank
//! everyone waits for), top operators by device time, execution latency, dropped
//! records. Documents without the extension (AWS's neuron-monitor) leave our panes with
//! a note saying so.
//!
//! # Design choices (the issue is silent)
//! - Tabs: "all" then one per `neuron_runtime_data` entry (each rank of a multi-rank
//!   process is its own, tagged `<pid>/rank<N>`), numbered `1`–`9` in the tab bar.
//! - At 80×24 the panes do not all fit: one of three views shows at a time (`Tab`:
//!   overview = AWS's panes, device = engines and HBM, activity = collectives, operators,
//!   latency); from 120×36 every pane shows at once.
//! - A runtime missing from the next report is marked exited (AWS's neuron-monitor drops
//!   a process that exits); one whose `neuronprof.state` is `finished` is marked finished.
//! - Freeze (`f`) keeps the display; reports arriving meanwhile queue (up to
//!   [`app::FROZEN_QUEUE_LEN`]) and are applied on unfreeze so histories stay complete.
//! - The filter (`/`) is a case-insensitive substring applied to operator names,
//!   collectives (op or group) and memory-tree rows.
//! - Replay: ←/→ step one report, space plays (one report per `--play-interval`,
//!   default 250 ms), Home/End jump; stepping rebuilds the history up to the cursor.
//!
//! For tests only, `NEURON_TOP_TEST_PANIC` set in the environment makes neuron-top panic
//! after its first draw (the end-to-end test checks the terminal is restored).
//!
//! # Example
//! ```
//! use analysis::live::{fixtures, parse_document};
//! use ratatui::{backend::TestBackend, Terminal};
//! use tui::{App, Event};
//!
//! let mut app = App::new("stdin");
//! app.handle(Event::Document(Box::new(parse_document(fixtures::AWS_TRN2).unwrap())));
//! let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
//! terminal.draw(|f| tui::ui::draw(f, &app)).unwrap();
//! let screen: String = terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect();
//! assert!(screen.contains("NeuronCore v3d Utilization"));
//! ```
#![warn(missing_docs)]

pub mod app;
mod args;
pub mod history;
mod live;
mod run;
pub mod ui;

pub use app::{App, Event};
pub use args::{Args, Source, USAGE};
pub use run::{restore_terminal, run};
