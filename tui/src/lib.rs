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
//! # How far the top operators are from the roofline (`--replay`)
//! Replaying traces, the top-operators pane adds per operator its achieved rate
//! (TFLOP/s, or TB/s when memory-bound, with a decimal prefix: `2.95 GB/s`), its % of
//! the device's roofline and its bound (`C` compute, `M` memory), e.g. `0.4% M`; the
//! pane's title names the device (`vs trn2 (LNC=2)`: the traces' `deviceProperties`, or
//! the device `--device-spec NAME|FILE` names, a built-in one or a device file, as for
//! `neuronprof analyze`, so a GPU trace reads against a Trainium's roofline). They come from
//! [`analysis::analyses::roofline::roofline_table`] over the device rows ending in the
//! report's period, computed once per report when the replay loads
//! ([`roofline::ReplayRoofline::build`]), not while drawing. Per operator, over its
//! rows (one per unique input shapes), weighted by kernel time: % of roofline = Σ
//! roofline time / Σ kernel time (a row's roofline time is calls × one call's), achieved
//! TFLOP/s = Σ FLOPs / Σ kernel time, TB/s the same with bytes, bound = the bound of the
//! rows holding most of the kernel time ([`roofline`] says exactly what a period
//! covers). "—": the model does not cover the operator (no row under its name in the
//! run, e.g. `aten::transpose`, `c10d::allreduce_`); "…": it is modeled but its calls
//! running in this period end in a later one. Never an estimate. The "all" tab sums
//! the figures over the running ranks. To make room the pane takes 44 % of the bottom
//! row at 120×36 and more (64 % of the activity view at 80×24); the calls column, then
//! the achieved rate, are dropped when the operator names would get narrower than 18
//! columns.
//!
//! Live (`--pid`, `--stdin`): reports carry operator names, calls and device time only
//! (no input shapes), so the pane shows those three columns, as before; no roofline.
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
pub mod roofline;
mod run;
pub mod ui;

pub use app::{App, Event};
pub use args::{Args, Source, USAGE};
pub use run::{restore_terminal, run};
