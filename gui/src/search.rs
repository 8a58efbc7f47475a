//! Search by name and following flows: pure lookups on the [`Timeline`].

use crate::model::{SliceRef, Timeline};

/// At most this many matches are kept (the count is still exact).
pub const MAX_MATCHES: usize = 100_000;

/// Search state: the text, its matches (by start time) and the current one.
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// What the user typed.
    pub text: String,
    /// Set by `/`: the search field takes the keyboard on the next frame.
    pub focus_requested: bool,
    /// Matches, sorted by start time (at most [`MAX_MATCHES`]).
    pub matches: Vec<SliceRef>,
    /// Number of slices that matched.
    pub total: u64,
    /// Index in `matches` of the selected one.
    pub current: Option<usize>,
    /// The text `matches` were found for.
    pub searched: String,
}

impl Search {
    /// Finds `self.text` (case-insensitive substring of the name) when it changed.
    pub fn run(&mut self, timeline: &Timeline) {
        if self.text == self.searched {
            return;
        }
        self.searched = self.text.clone();
        let (matches, total) = find(timeline, &self.text);
        self.matches = matches;
        self.total = total;
        self.current = None;
    }

    /// Moves to the next match (wrapping) and returns it.
    pub fn next(&mut self, timeline: &Timeline) -> Option<SliceRef> {
        self.run(timeline);
        if self.matches.is_empty() {
            return None;
        }
        let i = self.current.map_or(0, |i| (i + 1) % self.matches.len());
        self.current = Some(i);
        Some(self.matches[i])
    }
}

/// Slices whose name contains `text` (ignoring case), sorted by start, and how many
/// matched in all. An empty text matches nothing.
pub fn find(timeline: &Timeline, text: &str) -> (Vec<SliceRef>, u64) {
    let needle = text.trim().to_lowercase();
    if needle.is_empty() {
        return (Vec::new(), 0);
    }
    // Names are interned: test each distinct name once, then scan ids.
    let wanted: Vec<bool> = timeline
        .names
        .iter()
        .map(|n| n.to_lowercase().contains(&needle))
        .collect();
    let mut found = Vec::new();
    let mut total = 0u64;
    for (t, track) in timeline.tracks.iter().enumerate() {
        for (depth, row) in track.rows().iter().enumerate() {
            for (i, name) in row.name.iter().enumerate() {
                if wanted[*name as usize] {
                    total += 1;
                    if found.len() < MAX_MATCHES {
                        found.push((
                            row.start_ns[i],
                            SliceRef {
                                track: t as u32,
                                depth: depth as u16,
                                index: i as u32,
                            },
                        ));
                    }
                }
            }
        }
    }
    found.sort_by_key(|(start, s)| (*start, s.track, s.depth));
    (found.into_iter().map(|(_, s)| s).collect(), total)
}

/// The slice at the other end of a flow of `slice`: forward follows an outgoing flow
/// (launch → kernel), backward an incoming one (kernel → its launch).
pub fn follow_flow(timeline: &Timeline, slice: SliceRef, forward: bool) -> Option<SliceRef> {
    timeline
        .flows_of(slice)
        .into_iter()
        .find(|(_, outgoing)| *outgoing == forward)
        .and_then(|(flow, _)| {
            let flow = &timeline.flows[flow as usize];
            let (track, t) = if forward { flow.to } else { flow.from };
            timeline.innermost_at(track, t)
        })
}
