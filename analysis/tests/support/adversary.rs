// Inputs that drive a comparison sort to its worst case, made by running the sort itself
// against an adversary that decides each key only when a comparison needs it
// (M. D. McIlroy, "A killer adversary for quicksort", Software—Practice and Experience
// 29(4), 1999). Every key starts as "gas" (equal to every other gas key and above every
// decided one); comparing two gas keys fixes one of them as the next smallest value,
// preferring not to fix the latest pivot candidate. Rerun on the finished keys, the sort
// takes the same path, so the worst case is reproducible; here it sends numpy's sorts to
// their heapsort fallbacks, which random keys never reach.
//
// Two changes for tie order: the first two keys start fixed in descending order (a sort
// that first checks for sorted input, like x86-simd-sort, would otherwise fix every key in
// ascending order there), and with `tie > 1` up to `tie` keys fixed one after another get
// the same value wherever no earlier answer forbids it (a key that was gas when compared
// with a fixed key was answered "greater" and must stay so).
//
// Shared by `tests/argsort_matches_numpy.rs` and the unit tests of `src/stats`.

use std::cell::RefCell;
use std::cmp::Ordering;

struct State {
    value: Vec<usize>,
    /// Per key, the least value it may still be given.
    floor: Vec<usize>,
    gas: usize,
    level: usize,
    at_level: usize,
    tie: usize,
    candidate: usize,
}

impl State {
    fn fix(&mut self, i: usize) {
        if self.at_level >= self.tie || self.floor[i] > self.level {
            self.level = (self.level + 1).max(self.floor[i]);
            self.at_level = 0;
        }
        self.value[i] = self.level;
        self.at_level += 1;
    }
}

/// A key whose value the adversary decides on first comparison.
#[derive(Clone, Copy)]
pub struct Gas<'a> {
    index: usize,
    state: &'a RefCell<State>,
}

impl PartialEq for Gas<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.partial_cmp(other) == Some(Ordering::Equal)
    }
}

impl PartialOrd for Gas<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        let mut s = self.state.borrow_mut();
        let (x, y) = (self.index, other.index);
        let gas = s.gas;
        if s.value[x] == gas && s.value[y] == gas {
            let fix = if x == s.candidate { x } else { y };
            s.fix(fix);
        }
        if s.value[x] == gas {
            s.candidate = x;
        } else if s.value[y] == gas {
            s.candidate = y;
        }
        // A gas key was just answered "greater" than a fixed one.
        for (a, b) in [(x, y), (y, x)] {
            if s.value[a] == gas && s.value[b] != gas {
                s.floor[a] = s.floor[a].max(s.value[b] + 1);
            }
        }
        Some(s.value[x].cmp(&s.value[y]))
    }
}

/// `n` keys on which `sort` (an argsort over any `PartialOrd` keys) does its worst, with
/// runs of up to `tie` equal keys.
pub fn killer(n: usize, tie: usize, sort: impl FnOnce(&[Gas<'_>]) -> Vec<usize>) -> Vec<i64> {
    let gas = n + 2;
    let mut value = vec![gas; n];
    if n >= 2 {
        (value[0], value[1]) = (1, 0);
    }
    let state = RefCell::new(State {
        value,
        floor: vec![2; n],
        gas,
        level: 1,
        at_level: usize::MAX,
        tie: tie.max(1),
        candidate: 0,
    });
    {
        let keys: Vec<Gas<'_>> = (0..n)
            .map(|index| Gas {
                index,
                state: &state,
            })
            .collect();
        sort(&keys);
    }
    let value = state.into_inner().value;
    value.into_iter().map(|v| v as i64).collect()
}
