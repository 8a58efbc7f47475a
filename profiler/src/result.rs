//! One recorded window: what `on_trace_ready` receives and `Profiler::stop` returns.

use std::io::{self, Write};
use std::path::Path;

use runtime_hooks::{clock::ClockAnchor, Record, ThreadStats};
use trace_format::{Output, TraceWriter};

use crate::config::ProfilerConfig;
use crate::emit::{self, Window};
use crate::key_averages::KeyAverages;
use crate::model::{self, HostKind, TraceModel};
use crate::summary::Summary;

/// The activity of one recorded window, resolved and ready to be written as a Kineto
/// trace or summarized with [`ProfileResult::key_averages`].
#[derive(Debug, Clone)]
pub struct ProfileResult {
    pub(crate) model: TraceModel,
    pub(crate) config: ProfilerConfig,
    pub(crate) window: Window,
}

impl ProfileResult {
    /// Converts records (each thread's in recording order, as `runtime_hooks::drain`
    /// returns them) taken between `start_ns` and `end_ns` on the process timeline.
    ///
    /// `threads` maps the records' thread ids to OS thread ids and names
    /// (`runtime_hooks::thread_stats()`); `dropped_records` is what the trace reports
    /// as lost. Sessions call this for you; it is public for converting records
    /// collected some other way.
    pub fn from_records(
        records: &[Record],
        threads: &[ThreadStats],
        config: &ProfilerConfig,
        (start_ns, end_ns): (u64, u64),
        dropped_records: u64,
    ) -> Self {
        Self::build(
            records,
            threads,
            config,
            0,
            (start_ns, end_ns),
            dropped_records,
        )
    }

    pub(crate) fn build(
        records: &[Record],
        threads: &[ThreadStats],
        config: &ProfilerConfig,
        index: u64,
        (start_ns, end_ns): (u64, u64),
        dropped_records: u64,
    ) -> Self {
        let model = model::build(records, threads, config, dropped_records);
        let anchor: ClockAnchor = runtime_hooks::clock::anchor();
        ProfileResult {
            model,
            config: config.clone(),
            window: Window {
                index,
                start_ns,
                end_ns: end_ns.max(start_ns),
                anchor,
            },
        }
    }

    /// Writes the Kineto trace into `out` and returns it; `trace_name` becomes the
    /// `traceName` key (the path, as Kineto writes it).
    pub fn write_trace<W: Write>(&self, out: W, trace_name: Option<&str>) -> io::Result<W> {
        let meta = emit::metadata(&self.model, &self.config, &self.window, trace_name);
        let mut writer = TraceWriter::new(out, &meta)?;
        emit::write_events(&mut writer, &self.model, &self.config, &self.window)?;
        writer.finish()
    }

    /// Writes the trace to `path`, gzip-compressed when the name ends in `.gz`, like
    /// `torch.profiler.profile.export_chrome_trace`.
    pub fn export_chrome_trace(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        let gzip = path.extension().is_some_and(|e| e == "gz");
        let file = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        let out = if gzip {
            Output::gzip(file)
        } else {
            Output::plain(file)
        };
        let name = path.display().to_string();
        self.write_trace(out, Some(&name))?.close()?;
        Ok(())
    }

    /// The operator table (`key_averages()` in torch), one row per name.
    pub fn key_averages(&self) -> KeyAverages {
        KeyAverages::new(&self.model, &self.config, false)
    }

    /// The operator table with one row per name and input shape
    /// (`key_averages(group_by_input_shape=True)`); shapes need `record_shapes`.
    pub fn key_averages_by_input_shape(&self) -> KeyAverages {
        KeyAverages::new(&self.model, &self.config, true)
    }

    /// Step time, device utilization, peak memory and dropped records of the window.
    pub fn summary(&self) -> Summary {
        Summary::new(&self.model, (self.window.start_ns, self.window.end_ns))
    }

    /// Records lost in the window (full rings, exiting threads): the trace's
    /// `dropped_records`.
    pub fn dropped_records(&self) -> u64 {
        self.model.dropped_records
    }

    /// The `N` of every `ProfilerStep#N` range in the window, in order.
    pub fn steps(&self) -> Vec<u64> {
        let mut steps: Vec<u64> = self
            .model
            .host
            .iter()
            .filter(|h| h.kind == HostKind::UserRange)
            .filter_map(|h| h.name.strip_prefix("ProfilerStep#")?.parse().ok())
            .collect();
        steps.sort_unstable();
        steps.dedup();
        steps
    }

    /// The rank the result belongs to (from its `distributedInfo`), if any.
    pub fn rank(&self) -> Option<u32> {
        self.config.distributed.as_ref().map(|d| d.rank)
    }

    /// Index of this window in its session (the `N` of `PyTorch Profiler (N)`).
    pub fn window_index(&self) -> u64 {
        self.window.index
    }

    /// Start and end of the window, nanoseconds on the process timeline.
    pub fn window_ns(&self) -> (u64, u64) {
        (self.window.start_ns, self.window.end_ns)
    }

    /// The configuration the window was recorded with.
    pub fn config(&self) -> &ProfilerConfig {
        &self.config
    }

    /// Numbers of host spans, device spans (kernels, copies, collectives), instructions
    /// and DMA transfers in the window.
    pub fn activity_counts(&self) -> ActivityCounts {
        ActivityCounts {
            host_spans: self.model.host.len(),
            device_spans: self.model.device.len(),
            instructions: self.model.instructions.len(),
            dma_transfers: self.model.dmas.len(),
            memory_events: self.model.memory.len(),
            flows: self.model.flows.len(),
        }
    }
}

/// How much of each kind of activity a window holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ActivityCounts {
    /// Operators, user ranges, runtime calls and host collectives.
    pub host_spans: usize,
    /// Kernels, copies, memsets and collectives on execution queues.
    pub device_spans: usize,
    /// Engine instructions and semaphore waits.
    pub instructions: usize,
    /// DMA transfers.
    pub dma_transfers: usize,
    /// `[memory]` events.
    pub memory_events: usize,
    /// `ac2g` and `fwdbwd` flows (each a start and a finish event).
    pub flows: usize,
}
