//! Live attach to neuronprof processes.

use std::sync::mpsc::Sender;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::app::{App, Event};

/// Starts the live poller for all processes or `pid`.
pub(crate) fn spawn(pid: Option<u32>, refresh: Duration, tx: Sender<Event>) -> Result<App> {
    let _ = (pid, refresh, tx);
    bail!("live attach is not available in this build yet (analysis::live_client has not landed); use --stdin or --replay")
}
