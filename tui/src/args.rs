//! Command line of `neuron-top`.

use std::path::PathBuf;
use std::time::Duration;

/// Where reports come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Attach to live neuronprof processes (all, or one pid).
    Live {
        /// Only this process.
        pid: Option<u32>,
    },
    /// A neuron-monitor JSON stream on standard input.
    Stdin,
    /// Recorded rank traces in a directory, replayed as reports.
    Replay {
        /// The directory (or one trace file).
        dir: PathBuf,
        /// Trace time each report covers; `None` picks one giving about 100 reports.
        period: Option<Duration>,
        /// The device the operators' roofline is against (`--device-spec NAME|FILE`:
        /// a built-in name or a device file); `None`: each trace's `deviceProperties`.
        device_spec: Option<String>,
    },
}

/// Parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// The source.
    pub source: Source,
    /// Refresh period asked of live publishers.
    pub refresh: Duration,
    /// Wall time between replay steps while playing.
    pub play_interval: Duration,
}

/// Usage text.
pub const USAGE: &str = "\
neuron-top: live NeuronCore, memory, collective and operator monitor

usage:
  neuron-top [--pid PID] [--refresh SECONDS]   attach to running neuronprof processes
                                               (endpoints in $XDG_RUNTIME_DIR/neuronprof,
                                               else /tmp/neuronprof-UID)
  neuron-top --stdin                           read a neuron-monitor JSON stream
                                               (e.g. `neuron-monitor | neuron-top --stdin`)
  neuron-top --replay TRACE_DIR [--period SECONDS] [--play-interval SECONDS]
             [--device-spec NAME|FILE]         replay recorded rank traces (default
                                               period: about 100 reports over the run;
                                               the roofline's device: the traces'
                                               deviceProperties, or a built-in name
                                               such as h100-sxm, mi300x, trn2, or a
                                               device file)

keys: ? help, q quit, f freeze, / filter, F %/TFLOPS, 1-9 a d tabs, Tab views,
      s u sort, arrows + x memory tree; replay: Left/Right step, space play";

impl Args {
    /// Parses arguments (without the program name). `Err` carries a message for the user;
    /// `Ok(None)` means help or version was printed.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Option<Args>, String> {
        let mut pid = None;
        let mut stdin = false;
        let mut replay: Option<PathBuf> = None;
        let mut period = None;
        let mut device_spec = None;
        let mut refresh = Duration::from_secs(1);
        let mut play_interval = Duration::from_millis(250);
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
            match arg.as_str() {
                "-h" | "--help" => {
                    println!("{USAGE}");
                    return Ok(None);
                }
                "-V" | "--version" => {
                    println!("neuron-top {}", env!("CARGO_PKG_VERSION"));
                    return Ok(None);
                }
                "--pid" | "-p" => {
                    let v = value("--pid")?;
                    pid = Some(
                        v.parse()
                            .map_err(|_| format!("--pid: not a process id: {v}"))?,
                    );
                }
                "--stdin" => stdin = true,
                "--replay" => replay = Some(PathBuf::from(value("--replay")?)),
                "--period" => period = Some(seconds("--period", &value("--period")?)?),
                "--device-spec" => device_spec = Some(value("--device-spec")?),
                "--refresh" => refresh = seconds("--refresh", &value("--refresh")?)?,
                "--play-interval" => {
                    play_interval = seconds("--play-interval", &value("--play-interval")?)?
                }
                other => return Err(format!("unknown argument `{other}`\n\n{USAGE}")),
            }
        }
        let source = match (stdin, replay, pid) {
            (true, Some(_), _) => return Err("--stdin and --replay exclude each other".into()),
            (true, None, Some(_)) | (false, Some(_), Some(_)) => {
                return Err("--pid applies to live attach only".into())
            }
            (true, None, None) => Source::Stdin,
            (false, Some(dir), None) => Source::Replay {
                dir,
                period,
                device_spec: device_spec.take(),
            },
            (false, None, pid) => Source::Live { pid },
        };
        if period.is_some() && !matches!(source, Source::Replay { .. }) {
            return Err("--period applies to --replay only".into());
        }
        if device_spec.is_some() {
            return Err("--device-spec applies to --replay only".into());
        }
        Ok(Some(Args {
            source,
            refresh,
            play_interval,
        }))
    }
}

fn seconds(name: &str, text: &str) -> Result<Duration, String> {
    let s: f64 = text
        .parse()
        .map_err(|_| format!("{name}: not a number of seconds: {text}"))?;
    if !(s > 0.0 && s.is_finite()) {
        return Err(format!("{name}: must be positive: {text}"));
    }
    Ok(Duration::from_secs_f64(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        Args::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn sources() {
        assert_eq!(
            parse(&[]).unwrap().unwrap().source,
            Source::Live { pid: None }
        );
        assert_eq!(
            parse(&["--pid", "42"]).unwrap().unwrap().source,
            Source::Live { pid: Some(42) }
        );
        assert_eq!(parse(&["--stdin"]).unwrap().unwrap().source, Source::Stdin);
        assert_eq!(
            parse(&["--replay", "d", "--period", "0.5"])
                .unwrap()
                .unwrap()
                .source,
            Source::Replay {
                dir: "d".into(),
                period: Some(Duration::from_millis(500)),
                device_spec: None,
            }
        );
        assert_eq!(
            parse(&["--replay", "d", "--device-spec", "mi300x"])
                .unwrap()
                .unwrap()
                .source,
            Source::Replay {
                dir: "d".into(),
                period: None,
                device_spec: Some("mi300x".into()),
            }
        );
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        assert!(parse(&["--stdin", "--replay", "d"])
            .unwrap_err()
            .contains("exclude"));
        assert!(parse(&["--pid", "x"])
            .unwrap_err()
            .contains("not a process id"));
        assert!(parse(&["--period", "1"])
            .unwrap_err()
            .contains("--replay only"));
        assert!(parse(&["--device-spec", "trn2"])
            .unwrap_err()
            .contains("--device-spec applies to --replay only"));
        assert!(parse(&["--replay", "d", "--device-spec"])
            .unwrap_err()
            .contains("--device-spec needs a value"));
        assert!(parse(&["--bogus"])
            .unwrap_err()
            .contains("unknown argument"));
    }
}
