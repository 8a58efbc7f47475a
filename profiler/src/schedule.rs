//! `torch.profiler.schedule`: which steps are skipped, warmed up, recorded and saved.

/// What the profiler does during a step, like `torch.profiler.ProfilerAction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProfilerAction {
    /// Not recording.
    None,
    /// Recording is on but what is recorded is thrown away (the first steps after
    /// enabling pay one-time costs such as ring registration).
    Warmup,
    /// Recording.
    Record,
    /// Recording; the trace is handed to `on_trace_ready` at the end of this step.
    RecordAndSave,
}

impl ProfilerAction {
    /// Whether records of this step are kept.
    pub fn is_recording(self) -> bool {
        matches!(self, ProfilerAction::Record | ProfilerAction::RecordAndSave)
    }
}

/// A profiling schedule, the same cycle as `torch.profiler.schedule(skip_first, wait,
/// warmup, active, repeat)`.
///
/// Steps count from 0 (the step before the first [`crate::Profiler::step`] call). The first
/// `skip_first` steps are not recorded; then cycles of `wait` idle steps, `warmup` warm-up
/// steps and `active` recorded steps follow, the last active step of each cycle saving
/// the trace. `repeat` cycles are run (0: cycles go on until the profiler stops).
///
/// ```
/// use profiler::{ProfilerAction::*, Schedule};
/// let s = Schedule::new(1, 1, 1, 2, 1);
/// let actions: Vec<_> = (0..7).map(|step| s.action(step)).collect();
/// assert_eq!(actions, [None, None, Warmup, Record, RecordAndSave, None, None]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// Steps skipped at the start.
    pub skip_first: u64,
    /// Idle steps at the start of each cycle.
    pub wait: u64,
    /// Warm-up steps after the idle ones.
    pub warmup: u64,
    /// Recorded steps at the end of each cycle (at least 1).
    pub active: u64,
    /// Number of cycles; 0 repeats until the profiler stops.
    pub repeat: u64,
}

impl Schedule {
    /// A schedule; `active` is raised to 1 if 0 (torch rejects 0).
    pub fn new(skip_first: u64, wait: u64, warmup: u64, active: u64, repeat: u64) -> Self {
        Schedule {
            skip_first,
            wait,
            warmup,
            active: active.max(1),
            repeat,
        }
    }

    /// The action for step `step`: torch's `schedule_fn`.
    pub fn action(&self, step: u64) -> ProfilerAction {
        if step < self.skip_first {
            return ProfilerAction::None;
        }
        let step = step - self.skip_first;
        let cycle = self.wait + self.warmup + self.active;
        if self.repeat > 0 && step / cycle >= self.repeat {
            return ProfilerAction::None;
        }
        let in_cycle = step % cycle;
        if in_cycle < self.wait {
            ProfilerAction::None
        } else if in_cycle < self.wait + self.warmup {
            ProfilerAction::Warmup
        } else if in_cycle + 1 < cycle {
            ProfilerAction::Record
        } else {
            ProfilerAction::RecordAndSave
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ProfilerAction::*;
    use super::*;

    #[test]
    fn cycles_repeat_then_stop() {
        let s = Schedule::new(0, 1, 0, 1, 2);
        let actions: Vec<_> = (0..6).map(|step| s.action(step)).collect();
        assert_eq!(
            actions,
            [None, RecordAndSave, None, RecordAndSave, None, None]
        );
    }

    #[test]
    fn repeat_zero_goes_on() {
        let s = Schedule::new(2, 0, 1, 1, 0);
        assert_eq!(s.action(0), None);
        assert_eq!(s.action(2), Warmup);
        assert_eq!(s.action(3), RecordAndSave);
        assert_eq!(s.action(1001), RecordAndSave);
    }

    #[test]
    fn zero_active_is_one() {
        assert_eq!(Schedule::new(0, 0, 0, 0, 1).active, 1);
        assert!(Record.is_recording() && !Warmup.is_recording());
    }
}
