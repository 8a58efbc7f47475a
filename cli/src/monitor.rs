//! `neuronprof monitor`: every live process's metrics as one neuron-monitor document
//! per period on standard output, or as Prometheus metrics over HTTP.
//!
//! Each period it discovers the publishing processes (`analysis::live_client`:
//! stale sockets removed), asks each for a report over the last period, and writes
//! one document: the processes' `neuron_runtime_data` entries side by side (copied
//! as they came, so fields this command does not know pass through), the first
//! process's `neuron_hardware_info`, plus `system_data` (from `/proc/stat` and
//! `/proc/meminfo`) and `instance_info`.
//!
//! Choices where the issue is silent:
//! - The first document comes after one period. A process that appears is asked once
//!   to start its history and shows from the next period on (its first window would be
//!   empty); a process that exits disappears (its socket goes with it); one that stops
//!   answering is listed with its pid and an `error`.
//! - `instance_info`: `instance_name` is the host name, `instance_type` the emulated
//!   topology the first process reports (`trn2.48xlarge`), `instance_id` empty (the
//!   devices are emulated; there is no EC2 metadata to ask). `system_data`'s
//!   `neuron_hw_counters` has no devices and says why.
//! - With `--prometheus ADDR` the documents go to the metrics server instead of
//!   standard output (`metrics_server`, concurrent clients): `GET /metrics` answers the
//!   latest period as rendered by `exporters::prometheus`, anything else 404. The
//!   address is loopback unless an IP is named or `--listen-public` is given
//!   (`metrics_server::reach`); the command says who can read it, with a warning when
//!   that reaches beyond the host.
//! - With `--otlp-endpoint URL` (or OpenTelemetry's `OTEL_EXPORTER_OTLP_ENDPOINT`) each
//!   document's metrics under Neuron Observer's names (`exporters::observer`) are also
//!   pushed to a collector, OTLP over HTTP/protobuf ([`OtlpFeed`]); a collector that
//!   fails is reported once on standard error and tried again each period.
//! - Ctrl-C or SIGTERM ends it after the current period; a closed standard output
//!   (`| head`) ends it quietly.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use analysis::live::{
    CpuTimes, HwCounters, InstanceInfo, MemoryInfo, RuntimeEntry, SystemData, SystemVcpuUsage,
};
use analysis::live_client::{discover, fetch};
use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// How long one process may take to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);

/// Parses a period: `1s`, `500ms`, `2m`, or plain seconds (`0.5`).
pub fn parse_period(text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .with_context(|| format!("--period {text:?}: expected e.g. 1s, 500ms or 0.5"))?;
    let seconds = value * scale;
    if !(seconds.is_finite() && seconds >= 0.01) {
        bail!("--period {text:?}: must be at least 10ms");
    }
    if seconds > neuron_backend::monitor::MAX_PERIOD_S {
        bail!(
            "--period {text:?}: publishers keep {} s of history",
            neuron_backend::monitor::MAX_PERIOD_S
        );
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// One process's answer, entries kept as raw JSON.
#[derive(Deserialize)]
struct ProcessAnswer {
    #[serde(default)]
    neuron_runtime_data: Vec<Box<RawValue>>,
    #[serde(default)]
    neuron_hardware_info: Option<Box<RawValue>>,
}

/// The topology our publisher names in its extension, for `instance_type`.
#[derive(Deserialize)]
struct TopologyOnly {
    #[serde(default)]
    report: TopologyReport,
}

#[derive(Deserialize, Default)]
struct TopologyReport {
    #[serde(default)]
    neuronprof: Option<TopologyExtension>,
}

#[derive(Deserialize, Default)]
struct TopologyExtension {
    #[serde(default)]
    topology: String,
}

#[derive(Serialize)]
struct Document<'a> {
    neuron_runtime_data: Vec<&'a RawValue>,
    system_data: &'a SystemData,
    instance_info: &'a InstanceInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    neuron_hardware_info: Option<&'a RawValue>,
}

/// `/proc/stat` counters at one instant.
#[derive(Debug, Clone, Default)]
struct ProcStat {
    /// `cpu`, `cpu0`, … with their 7 first fields (user, nice, system, idle, iowait,
    /// irq, softirq) in ticks.
    cpus: Vec<(String, [u64; 7])>,
    context_switches: u64,
}

fn read_proc_stat() -> Option<ProcStat> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let mut stat = ProcStat::default();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(name) = fields.next() else { continue };
        if name.starts_with("cpu") {
            let mut values = [0u64; 7];
            for v in &mut values {
                *v = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
            }
            stat.cpus.push((name.to_owned(), values));
        } else if name == "ctxt" {
            stat.context_switches = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        }
    }
    Some(stat)
}

fn cpu_percentages(before: &[u64; 7], after: &[u64; 7]) -> CpuTimes {
    let delta: Vec<f64> = before
        .iter()
        .zip(after)
        .map(|(a, b)| b.saturating_sub(*a) as f64)
        .collect();
    let total: f64 = delta.iter().sum();
    let pct = |i: usize| {
        if total > 0.0 {
            delta[i] / total * 100.0
        } else {
            0.0
        }
    };
    CpuTimes {
        user: pct(0),
        nice: pct(1),
        system: pct(2),
        idle: pct(3),
        io_wait: pct(4),
        irq: pct(5),
        soft_irq: pct(6),
    }
}

fn memory_info(period_s: f64) -> MemoryInfo {
    let mut info = MemoryInfo {
        period: period_s,
        ..Default::default()
    };
    let Ok(text) = std::fs::read_to_string("/proc/meminfo") else {
        info.error = "/proc/meminfo is not readable".into();
        return info;
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.split_ascii_whitespace().next()?.parse::<u64>().ok())
            .map(|kib| kib * 1024)
    };
    let total = field("MemTotal").unwrap_or(0);
    let available = field("MemAvailable").unwrap_or(0);
    let swap_total = field("SwapTotal").unwrap_or(0);
    let swap_free = field("SwapFree").unwrap_or(0);
    info.memory_total_bytes = total;
    info.memory_used_bytes = total.saturating_sub(available);
    info.swap_total_bytes = swap_total;
    info.swap_used_bytes = swap_total.saturating_sub(swap_free);
    info
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Gathers the documents: discovery, one request per process, system groups.
#[derive(Debug)]
pub struct Collector {
    dir: PathBuf,
    period: Duration,
    /// Processes asked at least once (their history runs).
    primed: BTreeSet<u32>,
    last_stat: Option<(Instant, ProcStat)>,
    hostname: String,
}

impl Collector {
    /// A collector over the endpoints in `dir`, asking for windows of `period`.
    pub fn new(dir: &Path, period: Duration) -> Self {
        Collector {
            dir: dir.to_path_buf(),
            period,
            primed: BTreeSet::new(),
            last_stat: None,
            hostname: hostname(),
        }
    }

    /// Starts the history of every process found and the system counters; call one
    /// period before the first [`collect`](Self::collect).
    pub fn prime(&mut self) -> anyhow::Result<()> {
        self.last_stat = read_proc_stat().map(|s| (Instant::now(), s));
        let found = discover(&self.dir)?;
        for endpoint in found.endpoints {
            let _ = fetch(&endpoint.path, 0.0, FETCH_TIMEOUT);
            self.primed.insert(endpoint.pid);
        }
        Ok(())
    }

    /// One document over the last period, as one line of JSON.
    pub fn collect(&mut self) -> anyhow::Result<String> {
        let period_s = self.period.as_secs_f64();
        let found = discover(&self.dir)?;
        let mut answers: Vec<ProcessAnswer> = Vec::new();
        let mut errors: Vec<Box<RawValue>> = Vec::new();
        let mut live = BTreeSet::new();
        for endpoint in &found.endpoints {
            live.insert(endpoint.pid);
            if self.primed.insert(endpoint.pid) {
                // New: start its history now, report it next period.
                let _ = fetch(&endpoint.path, 0.0, FETCH_TIMEOUT);
                continue;
            }
            let answer = fetch(&endpoint.path, period_s, FETCH_TIMEOUT)
                .map_err(|e| e.to_string())
                .and_then(|text| {
                    serde_json::from_str::<ProcessAnswer>(&text)
                        .map_err(|e| format!("bad answer from {}: {e}", endpoint.path.display()))
                });
            match answer {
                Ok(answer) => answers.push(answer),
                Err(error) => {
                    let entry = RuntimeEntry {
                        pid: endpoint.pid,
                        address: endpoint.path.display().to_string(),
                        neuron_runtime_tag: endpoint.pid.to_string(),
                        error,
                        ..Default::default()
                    };
                    errors.push(RawValue::from_string(serde_json::to_string(&entry)?)?);
                }
            }
        }
        self.primed.retain(|pid| live.contains(pid));

        let system = self.system_data(period_s);
        let topology = answers
            .iter()
            .flat_map(|a| &a.neuron_runtime_data)
            .find_map(|entry| {
                serde_json::from_str::<TopologyOnly>(entry.get())
                    .ok()
                    .and_then(|t| t.report.neuronprof)
                    .map(|e| e.topology)
                    .filter(|t| !t.is_empty())
            })
            .unwrap_or_default();
        let instance = InstanceInfo {
            instance_name: self.hostname.clone(),
            instance_type: topology,
            ..Default::default()
        };
        let document = Document {
            neuron_runtime_data: answers
                .iter()
                .flat_map(|a| a.neuron_runtime_data.iter().map(|r| r.as_ref()))
                .chain(errors.iter().map(|r| r.as_ref()))
                .collect(),
            system_data: &system,
            instance_info: &instance,
            neuron_hardware_info: answers
                .iter()
                .find_map(|a| a.neuron_hardware_info.as_deref()),
        };
        Ok(serde_json::to_string(&document)?)
    }

    fn system_data(&mut self, period_s: f64) -> SystemData {
        let now = read_proc_stat().map(|s| (Instant::now(), s));
        let vcpu = match (&self.last_stat, &now) {
            (Some((t0, before)), Some((t1, after))) => {
                let mut usage = SystemVcpuUsage {
                    period: t1.duration_since(*t0).as_secs_f64(),
                    context_switch_count: after
                        .context_switches
                        .saturating_sub(before.context_switches),
                    ..Default::default()
                };
                for (name, values) in &after.cpus {
                    let Some((_, old)) = before.cpus.iter().find(|(n, _)| n == name) else {
                        continue;
                    };
                    let times = cpu_percentages(old, values);
                    if name == "cpu" {
                        usage.average_usage = times;
                    } else {
                        usage
                            .usage_data
                            .insert(name.trim_start_matches("cpu").to_owned(), times);
                    }
                }
                usage
            }
            _ => SystemVcpuUsage {
                period: period_s,
                error: "/proc/stat is not readable".into(),
                ..Default::default()
            },
        };
        self.last_stat = now;
        SystemData {
            neuron_hw_counters: Some(HwCounters {
                period: period_s,
                neuron_devices: Vec::new(),
                error: "no hardware counters: the Neuron devices are emulated".into(),
            }),
            vcpu_usage: Some(vcpu),
            memory_info: Some(memory_info(period_s)),
        }
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_signal: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Makes Ctrl-C and SIGTERM end the loop after the current period.
fn install_stop_handlers() {
    let handler = request_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Sleeps until `deadline`, waking early when a stop was requested; returns whether
/// to go on.
fn sleep_until(deadline: Instant) -> bool {
    loop {
        if STOP.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}

/// What `neuronprof monitor` was asked for.
#[derive(Debug, Clone)]
pub struct MonitorOptions {
    /// The window of each document.
    pub period: Duration,
    /// Where the endpoints are (default: `analysis::live_client::endpoint_dir`).
    pub dir: PathBuf,
    /// Stop after this many documents.
    pub count: Option<u64>,
    /// Serve Prometheus metrics on this address instead of printing.
    pub prometheus: Option<String>,
    /// Where `prometheus` may be (`--listen-public`: off the loopback too).
    pub exposure: metrics_server::Exposure,
    /// Push Observer-named metrics to this OTLP/HTTP metrics URL each period.
    pub otlp: Option<String>,
}

/// Runs the monitor until stopped (or `count` documents).
pub fn run_monitor(options: &MonitorOptions) -> anyhow::Result<()> {
    install_stop_handlers();
    let mut collector = Collector::new(&options.dir, options.period);
    collector.prime()?;
    // The server lives until the loop ends; scrapes are answered on its threads.
    let mut metrics = match &options.prometheus {
        Some(addr) => {
            let exposition = metrics_server::Exposition::default();
            let server = metrics_server::MetricsServer::bind_with(
                addr,
                options.exposure,
                exposition.clone(),
            )
            .context("--prometheus")?;
            let local = server.local_addr();
            let audience = metrics_server::reach::audience(&local);
            if metrics_server::reach::is_public(&local) {
                eprintln!(
                    "neuronprof monitor: warning: serving the metrics of every process on \
                     this host at http://{local}{}: {audience}",
                    metrics_server::METRICS_PATH
                );
            } else {
                eprintln!(
                    "neuronprof monitor: serving http://{local}{} ({audience})",
                    metrics_server::METRICS_PATH
                );
            }
            Some((server, PrometheusFeed::new(exposition)))
        }
        None => None,
    };
    let mut otlp = match &options.otlp {
        Some(url) => {
            let feed = OtlpFeed::new(url)?;
            eprintln!("neuronprof monitor: pushing OTLP metrics to {url}");
            Some(feed)
        }
        None => None,
    };
    let mut next = Instant::now() + options.period;
    let mut written = 0u64;
    while sleep_until(next) {
        next += options.period;
        let line = collector.collect()?;
        if let Some(feed) = &mut otlp {
            feed.update_and_report(&line)?;
        }
        match &mut metrics {
            Some((_server, feed)) => feed.update(&line)?,
            None => {
                let mut out = std::io::stdout().lock();
                let wrote = out
                    .write_all(line.as_bytes())
                    .and_then(|()| out.write_all(b"\n"))
                    .and_then(|()| out.flush());
                if let Err(err) = wrote {
                    if err.kind() == std::io::ErrorKind::BrokenPipe {
                        return Ok(());
                    }
                    return Err(err).context("writing to standard output");
                }
            }
        }
        written += 1;
        if options.count.is_some_and(|count| written >= count) {
            break;
        }
    }
    Ok(())
}

/// Renders each document as Prometheus text, with the running counters, into the
/// [`Exposition`](metrics_server::Exposition) a metrics server serves.
#[derive(Debug, Default)]
pub struct PrometheusFeed {
    state: exporters::prometheus::PrometheusState,
    exposition: metrics_server::Exposition,
}

impl PrometheusFeed {
    /// A feed publishing into `exposition`.
    pub fn new(exposition: metrics_server::Exposition) -> Self {
        PrometheusFeed {
            state: Default::default(),
            exposition,
        }
    }

    /// Takes one document (a JSON line from [`Collector::collect`]).
    pub fn update(&mut self, document: &str) -> anyhow::Result<()> {
        let doc = analysis::live::parse_document(document).context("reading a document")?;
        self.state.observe(&doc);
        let mut text = Vec::new();
        self.state.render(&doc, &mut text)?;
        self.exposition.set(String::from_utf8(text)?);
        Ok(())
    }
}

/// Pushes each document's Neuron Observer-named series (`exporters::observer`) to an
/// OpenTelemetry collector, OTLP/HTTP protobuf (`exporters::otlp`,
/// `metrics_server::push`).
#[derive(Debug)]
pub struct OtlpFeed {
    pusher: metrics_server::push::OtlpPusher,
    failing: bool,
}

impl OtlpFeed {
    /// A feed posting to `url`, the full metrics URL (`…/v1/metrics`).
    pub fn new(url: &str) -> anyhow::Result<Self> {
        Ok(OtlpFeed {
            pusher: metrics_server::push::OtlpPusher::new(url)?,
            failing: false,
        })
    }

    /// Pushes one document (a JSON line from [`Collector::collect`]), its points stamped
    /// with the current time; `Err` when the document does not parse or the collector
    /// does not take it.
    pub fn update(&mut self, document: &str) -> anyhow::Result<()> {
        let doc = analysis::live::parse_document(document).context("reading a document")?;
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let body = exporters::otlp::export_request(&doc, now_ns);
        self.pusher.push(body)?;
        Ok(())
    }

    /// [`update`](Self::update), a collector's failure reported on standard error
    /// once (and its recovery) rather than ending the monitor.
    fn update_and_report(&mut self, document: &str) -> anyhow::Result<()> {
        match self.update(document) {
            Ok(()) => {
                if std::mem::take(&mut self.failing) {
                    eprintln!("neuronprof monitor: OTLP push works again");
                }
                Ok(())
            }
            Err(err)
                if err
                    .downcast_ref::<metrics_server::push::PushError>()
                    .is_some() =>
            {
                if !std::mem::replace(&mut self.failing, true) {
                    eprintln!("neuronprof monitor: warning: {err:#} (retrying each period)");
                }
                Ok(())
            }
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_parse_with_units() {
        assert_eq!(parse_period("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_period("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_period("0.5").unwrap(), Duration::from_millis(500));
        assert!(parse_period("0s").is_err());
        assert!(parse_period("fast").is_err());
        assert!(parse_period("10m")
            .unwrap_err()
            .to_string()
            .contains("history"));
    }

    #[test]
    fn cpu_shares_add_up() {
        let times = cpu_percentages(&[0; 7], &[30, 0, 10, 60, 0, 0, 0]);
        assert_eq!((times.user, times.system, times.idle), (30.0, 10.0, 60.0));
    }

    #[test]
    fn a_process_that_does_not_answer_is_listed_with_an_error() {
        use std::os::unix::fs::PermissionsExt as _;
        use std::os::unix::net::UnixListener;
        let dir =
            std::env::temp_dir().join(format!("neuronprof-monitor-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Our own pid, so the process exists; the "endpoint" closes without a word.
        let listener =
            UnixListener::bind(dir.join(format!("{}.sock", std::process::id()))).unwrap();
        // Discovery probes, the priming request and the request all get closed on.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                drop(stream);
            }
        });
        let mut collector = Collector::new(&dir, Duration::from_millis(100));
        let first: serde_json::Value = serde_json::from_str(&collector.collect().unwrap()).unwrap();
        assert_eq!(
            first["neuron_runtime_data"].as_array().unwrap().len(),
            0,
            "new: primed only"
        );
        let second: serde_json::Value =
            serde_json::from_str(&collector.collect().unwrap()).unwrap();
        let entries = second["neuron_runtime_data"].as_array().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0]["pid"], std::process::id());
        assert!(
            entries[0]["error"].as_str().unwrap().contains(".sock"),
            "{}",
            entries[0]
        );
        assert!(second["system_data"]["memory_info"]["memory_total_bytes"].as_u64() > Some(0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn memory_comes_from_proc() {
        let info = memory_info(1.0);
        assert!(
            info.memory_total_bytes > 0 && info.memory_used_bytes > 0,
            "{info:?}"
        );
        assert!(info.memory_used_bytes <= info.memory_total_bytes);
    }
}
