//! Incremental packet timestamps: most packets carry the nanoseconds since the previous
//! packet (one or two bytes) instead of a Unix-epoch time (nine bytes).
//!
//! Facts used (Perfetto's `clock_snapshot.proto`, `trace_packet.proto`,
//! `trace_packet_defaults.proto`, and its trace processor's clock tracker): a
//! `ClockSnapshot` may define a sequence-scoped clock (ids 64–127) with `is_incremental`;
//! each later packet timestamp on that clock is a delta from the previous one on it, the
//! first after the snapshot a delta from the snapshot's value. `TracePacketDefaults`
//! names the clock of packets that do not say (`timestamp_clock_id`). Deltas are
//! unsigned, and the trace processor refuses a snapshot whose readings do not grow
//! strictly against the previous snapshot of the same set of clocks (for the trace
//! clock, BOOTTIME) or marks the clock unusable (for the others).
//!
//! Our packets come track after track, each track in time order, so time goes back at
//! every track change. At such a change the writer starts a fresh incremental clock
//! (a snapshot pairing it with BOOTTIME at the track's first time, identity offset)
//! whose readings are above every earlier reading of that clock id; with 64 ids and
//! ids reused once their last reading is below the new start, a trace of any number of
//! tracks stays valid. A packet earlier than the current clock's last reading that is
//! not at a track change (an engine-utilization bucket closed late, a counter read out
//! of order), or when no clock id can be reused, carries its absolute time on BOOTTIME
//! with an explicit `timestamp_clock_id`.

use super::proto::{FIRST_SEQUENCE_CLOCK, SEQUENCE_CLOCKS};

/// How a packet states its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// The delta from the previous reading of the current default clock.
    Delta(u64),
    /// Absolute ns on BOOTTIME, with `timestamp_clock_id` set to it.
    Absolute(u64),
}

/// The writer's incremental clocks.
#[derive(Debug)]
pub struct Clocks {
    /// The default clock: its id and last reading.
    current: Option<(u32, u64)>,
    /// Per sequence-scoped clock: the value of its last snapshot.
    anchors: [Option<u64>; SEQUENCE_CLOCKS as usize],
}

impl Default for Clocks {
    fn default() -> Self {
        Clocks {
            current: None,
            anchors: [None; SEQUENCE_CLOCKS as usize],
        }
    }
}

impl Clocks {
    /// The stamp of a packet at `ts_ns` (advancing the default clock when a delta).
    pub fn stamp(&mut self, ts_ns: u64) -> Stamp {
        match &mut self.current {
            Some((_, last)) if ts_ns >= *last => {
                let delta = ts_ns - *last;
                *last = ts_ns;
                Stamp::Delta(delta)
            }
            _ => Stamp::Absolute(ts_ns),
        }
    }

    /// Whether a default clock was set (absolute stamps must then name BOOTTIME).
    pub fn has_default(&self) -> bool {
        self.current.is_some()
    }

    /// Called where time may start over (a new track): when `ts_ns` is before the
    /// default clock's last reading, picks a clock id whose last snapshot is below
    /// `ts_ns` and returns it: the caller writes a snapshot of it at `ts_ns` (with
    /// BOOTTIME at `ts_ns`) and makes it the default. `None`: nothing to write.
    pub fn restart(&mut self, ts_ns: u64) -> Option<u32> {
        if matches!(self.current, Some((_, last)) if ts_ns >= last) {
            return None;
        }
        // The unused id, else the one whose anchor is closest below `ts_ns` (keeps low
        // anchors for tracks that start early).
        let index = self.anchors.iter().position(Option::is_none).or_else(|| {
            (0..self.anchors.len())
                .filter(|&i| self.anchors[i].is_some_and(|a| a < ts_ns))
                .max_by_key(|&i| self.anchors[i])
        })?;
        self.anchors[index] = Some(ts_ns);
        let id = FIRST_SEQUENCE_CLOCK + index as u32;
        self.current = Some((id, ts_ns));
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_until_time_goes_back_then_absolute() {
        let mut clocks = Clocks::default();
        assert_eq!(clocks.stamp(100), Stamp::Absolute(100), "no clock yet");
        assert_eq!(clocks.restart(100), Some(64));
        assert_eq!(clocks.stamp(100), Stamp::Delta(0));
        assert_eq!(clocks.stamp(150), Stamp::Delta(50));
        assert_eq!(clocks.stamp(120), Stamp::Absolute(120));
        assert_eq!(clocks.stamp(151), Stamp::Delta(1));
        assert_eq!(clocks.restart(200), None, "not back: the clock goes on");
        assert_eq!(clocks.restart(10), Some(65), "back: a fresh clock");
        assert_eq!(clocks.stamp(12), Stamp::Delta(2));
    }

    #[test]
    fn ids_are_reused_only_above_their_last_snapshot() {
        let mut clocks = Clocks::default();
        // Tracks starting at 1000, 999, … use up the 64 ids with falling anchors.
        for i in 0..SEQUENCE_CLOCKS as u64 {
            assert_eq!(
                clocks.restart(1000 - i),
                Some(FIRST_SEQUENCE_CLOCK + i as u32)
            );
        }
        assert_eq!(clocks.restart(937), None, "not back from 937");
        assert_eq!(clocks.stamp(937), Stamp::Delta(0));
        assert_eq!(clocks.restart(500), None, "no id anchored below 500");
        assert_eq!(clocks.stamp(500), Stamp::Absolute(500));
        assert_eq!(clocks.stamp(2000), Stamp::Delta(1063));
        // Back to 995: the id anchored closest below it (994, the seventh) is reused.
        assert_eq!(clocks.restart(995), Some(FIRST_SEQUENCE_CLOCK + 6));
        assert_eq!(clocks.stamp(996), Stamp::Delta(1));
    }
}
