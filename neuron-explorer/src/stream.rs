//! A profile as Kineto JSON text, produced row group by row group: any consumer of
//! [`trace_format::TraceReader::from_reader`] reads a profile folder as it reads a
//! `.pt.trace.json`, with bounded memory.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use trace_format::{Event, RawJson, TraceMeta, TraceWriter};

use crate::error::NeuronError;
use crate::events::Converter;
use crate::framework::{scan_framework, scan_runtime_flows, FrameworkFeed, Links};
use crate::layout::ProfileLayout;
use crate::survey::{survey, Findings};

/// Top-level key (before `traceEvents`) describing the profile read: `{"profile",
/// "schema_version", "lnc", "worker_gids", "metadata", "summary", "system_metadata"}`.
pub const PROFILE_KEY: &str = "neuronExplorer";
/// Top-level key (after `traceEvents`) with what the read found: `{"problems",
/// "unknown", "missing"}` (see [`Findings`]).
pub const FINDINGS_KEY: &str = "neuronExplorerFindings";

#[derive(Clone, Debug, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A profile folder read as Kineto JSON (implements [`Read`]).
///
/// Strict mode ends the text with an I/O error of kind `InvalidData` whose message is
/// the [`NeuronError`] (table, column, row group). Lenient mode skips what is damaged and
/// lists it under [`FINDINGS_KEY`].
#[derive(Debug)]
pub struct KinetoStream {
    converter: Converter,
    findings: Findings,
    writer: Option<TraceWriter<Shared>>,
    shared: Shared,
    chunk: Vec<u8>,
    pos: usize,
    events: Vec<Event<'static>>,
    trailer: TraceMeta,
    failed: bool,
    /// A merged framework trace: its path, and its events still to come.
    framework: Option<(PathBuf, Option<FrameworkFeed>)>,
}

impl KinetoStream {
    /// Opens the profile at `dir`: lists its tables and surveys them (version, schema
    /// check, time base). Errors here are what no lenient read can get past: not a
    /// profile, an unknown major version; in strict mode, any damage met by the survey.
    pub fn open(dir: &Path, lenient: bool) -> Result<KinetoStream, NeuronError> {
        KinetoStream::open_inner(dir, None, lenient)
    }

    /// Opens the profile at `dir` merged with TorchNeuron's framework trace of the same
    /// process (`trace.json`, Kineto JSON): the trace's events and header first
    /// (`distributedInfo`, `deviceProperties`), then the profile's runtime calls and
    /// device executions, linked to the trace's host operators (see
    /// [`crate::framework`]); the profile's own `framework` rows are left out. What was
    /// linked is listed under [`FINDINGS_KEY`] (`framework`). Damage in the trace is an
    /// error naming it (strict) or listed under `problems` (lenient).
    pub fn open_with_framework(
        dir: &Path,
        framework: &Path,
        lenient: bool,
    ) -> Result<KinetoStream, NeuronError> {
        KinetoStream::open_inner(dir, Some(framework), lenient)
    }

    fn open_inner(
        dir: &Path,
        framework: Option<&Path>,
        lenient: bool,
    ) -> Result<KinetoStream, NeuronError> {
        let layout = ProfileLayout::open(dir)?;
        let mut findings = Findings::default();
        let s = survey(&layout, lenient, &mut findings)?;
        let scan = match framework {
            Some(path) => {
                let scan = scan_framework(path, lenient, &mut findings)?;
                let flow_sequence = scan_runtime_flows(&layout, lenient, &mut findings)?;
                Some((scan, flow_sequence))
            }
            None => None,
        };
        let base_ns = match &scan {
            Some((scan, _)) => [s.base_ns, scan.meta.base_time_ns(), scan.first_ns]
                .into_iter()
                .flatten()
                .min(),
            None => s.base_ns,
        };
        let mut meta = match &scan {
            // The trace's header, on the earliest base of the two.
            Some((scan, _)) => {
                let mut meta = scan.meta.clone();
                if let Some(base) = base_ns {
                    meta.set_base_time_ns(base);
                }
                meta
            }
            None => TraceMeta::kineto(base_ns),
        };
        let ranked = meta.rank().is_some();
        if s.worker_gids.len() == 1 && !ranked {
            let rank = *s.worker_gids.iter().next().expect("one");
            let text = format!(r#"{{"backend": "neuron", "rank": {rank}}}"#);
            meta.set_raw("distributedInfo", raw(text));
        }
        let profile = serde_json::json!({
            "profile": dir.display().to_string(),
            "schema_version": s.version,
            "lnc": s.lnc,
            "worker_gids": s.worker_gids,
            "metadata": s.metadata,
            "summary": s.summary,
            "system_metadata": s.system_metadata,
            "framework_trace": framework.map(|f| f.display().to_string()),
        });
        meta.set_raw(PROFILE_KEY, raw(profile.to_string()));
        meta.set_str("traceName", &dir.display().to_string());
        let shared = Shared::default();
        let writer = TraceWriter::with_options(
            shared.clone(),
            &meta,
            trace_format::WriteOptions::default().with_record_window_end(false),
        )
        .map_err(|e| NeuronError::io(dir, e))?;
        let mut converter = Converter::new(layout, s, lenient);
        if let Some((scan, flow_sequence)) = scan {
            converter = converter.with_links(Links {
                drivers: scan.drivers,
                flow_sequence,
                ..Links::default()
            });
        }
        Ok(KinetoStream {
            converter,
            findings,
            writer: Some(writer),
            shared,
            chunk: Vec::new(),
            pos: 0,
            events: Vec::new(),
            trailer: meta,
            failed: false,
            framework: framework.map(|f| (f.to_path_buf(), Some(FrameworkFeed::start(f, lenient)))),
        })
    }

    /// What the read found so far (complete once the stream has ended).
    pub fn findings(&self) -> &Findings {
        &self.findings
    }

    /// Produces more text into `chunk`; `Ok(false)` at the end.
    fn fill(&mut self) -> Result<bool, NeuronError> {
        loop {
            let taken = std::mem::take(&mut *self.shared.0.lock().expect("not poisoned"));
            if !taken.is_empty() {
                self.chunk = taken;
                self.pos = 0;
                return Ok(true);
            }
            let Some(writer) = self.writer.as_mut() else {
                return Ok(false);
            };
            self.events.clear();
            if let Some((_, feed @ Some(_))) = self.framework.as_mut() {
                match feed.as_mut().expect("matched").next()? {
                    Some(batch) => self.events = batch,
                    None => *feed = None,
                }
                for event in &self.events {
                    writer.write_event(event).map_err(io_error_path)?;
                }
                continue;
            }
            let more = self.converter.step(&mut self.events, &mut self.findings)?;
            for event in &self.events {
                writer.write_event(event).map_err(io_error_path)?;
            }
            if !more {
                let framework = match (&self.framework, self.converter.links()) {
                    (Some((path, _)), Some(links)) => Some(links.summary(path)),
                    _ => None,
                };
                let findings = serde_json::json!({
                    "problems": self.findings.problems,
                    "unknown": self.findings.unknown,
                    "missing": self.findings.missing,
                    "framework": framework,
                });
                self.trailer
                    .set_raw_after_events(FINDINGS_KEY, raw(findings.to_string()));
                let mut writer = self.writer.take().expect("present");
                writer.set_trailer(&self.trailer);
                writer.finish().map_err(io_error_path)?;
            }
        }
    }
}

fn io_error_path(e: io::Error) -> NeuronError {
    NeuronError::io(PathBuf::from("<kineto text>"), e)
}

fn raw(text: String) -> RawJson<'static> {
    RawJson::parse(text).expect("serde_json output is valid JSON")
}

impl Read for KinetoStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed {
            return Ok(0);
        }
        if self.pos >= self.chunk.len() {
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => {
                    self.failed = true;
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
                }
            }
        }
        let n = buf.len().min(self.chunk.len() - self.pos);
        buf[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
