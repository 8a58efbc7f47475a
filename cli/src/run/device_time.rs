//! Each rank's device time over its recorded steps, as `analyze`'s Steps table splits it
//! (`analysis::analyses::steps`): working, moving data in collectives, waiting in them
//! for a late peer, and idle. A collective kernel runs while it waits for the last
//! rank, but that time is the late rank's, not this device's work; the four parts add
//! up to the steps' device windows.

use analysis::analyses::collectives::CollectiveTotals;
use analysis::analyses::steps::StepSplit;

/// One rank's device time over its recorded steps (each step's device window, else its
/// host window, as [`StepSplit::window`]), µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankDeviceTime {
    /// The rank.
    pub rank: i64,
    /// Its steps.
    pub steps: usize,
    /// Σ of its steps' windows.
    pub steps_us: f64,
    /// Computation, copies or other device work, without exposed communication.
    pub working_us: f64,
    /// Exposed communication that moved data.
    pub transfer_us: f64,
    /// Exposed communication waiting for a late peer.
    pub waiting_us: f64,
    /// No device work (waiting for the host's launches or for anything else).
    pub idle_us: f64,
    /// All the time its collectives in these steps waited for a late peer, the part
    /// hidden under computation included (`waiting_us` is the exposed part).
    pub collective_wait_us: f64,
}

impl RankDeviceTime {
    /// Every rank with steps in `steps`, with its collectives' waiting in those steps
    /// from `per_step` (an analysis report's `steps` and `collectives.per_step`), by rank.
    pub fn of(steps: &[StepSplit], per_step: &[CollectiveTotals]) -> Vec<Self> {
        let mut out: Vec<RankDeviceTime> = Vec::new();
        for s in steps {
            let at = match out.iter().position(|r| r.rank == s.rank) {
                Some(at) => at,
                None => {
                    out.push(RankDeviceTime {
                        rank: s.rank,
                        steps: 0,
                        steps_us: 0.0,
                        working_us: 0.0,
                        transfer_us: 0.0,
                        waiting_us: 0.0,
                        idle_us: 0.0,
                        collective_wait_us: 0.0,
                    });
                    out.len() - 1
                }
            };
            let r = &mut out[at];
            r.steps += 1;
            r.steps_us += s.dur_us;
            r.working_us += s.computation_us + s.memory_us + s.other_device_us;
            r.transfer_us += s.communication_us - s.peer_wait_us;
            r.waiting_us += s.peer_wait_us;
            r.idle_us += s.host_bound_idle_us + s.other_idle_us;
            r.collective_wait_us += per_step
                .iter()
                .filter(|c| c.rank == s.rank && c.step == Some(s.step))
                .map(|c| c.wait_us)
                .sum::<f64>();
        }
        out.sort_by_key(|r| r.rank);
        out
    }

    /// `us` as a share of the steps' time, in percent (0 without steps).
    pub fn percent(&self, us: f64) -> f64 {
        if self.steps_us > 0.0 {
            us / self.steps_us * 100.0
        } else {
            0.0
        }
    }

    /// The mean step, µs (0 without steps).
    pub fn mean_step_us(&self) -> f64 {
        if self.steps > 0 {
            self.steps_us / self.steps as f64
        } else {
            0.0
        }
    }
}
