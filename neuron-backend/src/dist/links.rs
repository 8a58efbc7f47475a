//! Links between chips, instances and pods, shared by every collective that crosses
//! them: the occupancy book that makes concurrent collectives of different groups share
//! bandwidth.
//!
//! Each collective that spans chips uses, on every chip it has ranks on, that chip's
//! link at its level (NeuronLink inside an instance, the UltraServer's links inside a
//! pod, EFA between pods) at a demand of its ranks on that chip times its per-rank
//! bandwidth ([`super::Topology::link_uses`]). When it is placed, the book looks at the
//! reservations on those links that overlap it in modeled time: where their rates and
//! its demand exceed a link's capacity, it gets what is left, but never less than a fair
//! share of the link among the collectives overlapping there (so a late one is not
//! starved; the link is then oversubscribed by what the earlier ones already took). Its
//! transfer runs at the smallest share of any of its links, and it reserves that rate on
//! each of them for its span.
//!
//! Collectives are placed when their last rank arrives, so when two of different groups
//! overlap in modeled time, the first placed (whose last rank arrived first in real
//! time) gets the bandwidth it needs. Placing one (its share, its steps, its
//! reservation) holds the book, so collectives placed at once on different rank threads
//! are still placed one after the other, each seeing those before it. A world whose
//! concurrent collectives never share a link (one data-parallel group, or groups inside
//! one chip) is deterministic; one whose groups overlap on a link can share it
//! differently from run to run: alike collectives starting at the same modeled instant
//! get the same set of shares in any order (only which group gets which varies), but
//! ones starting apart get shares that depend on the order.

use std::collections::BTreeMap;

/// One link of one chip at one level of the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkId {
    /// NeuronLink of chip `n` to the other chips of its instance.
    Chip(usize),
    /// The link of chip `n` to the other instances of its UltraServer.
    Pod(usize),
    /// The EFA network of chip `n` to other pods or instances.
    Efa(usize),
}

/// A collective's use of one link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkUse {
    /// Which link.
    pub link: LinkId,
    /// Bytes per ns the collective's ranks on that chip would move through it alone.
    pub demand_bytes_per_ns: f64,
    /// The link's capacity, bytes per ns.
    pub capacity_bytes_per_ns: f64,
}

#[derive(Debug, Clone, Copy)]
struct Reservation {
    start_ns: u64,
    end_ns: u64,
    bytes_per_ns: f64,
}

/// Reservations of every link of a world.
#[derive(Debug, Default)]
pub(crate) struct LinkBook {
    links: BTreeMap<LinkId, Vec<Reservation>>,
}

/// Reservations ending this long (modeled time) before a new one starts are dropped.
const HORIZON_NS: u64 = 10_000_000_000;

impl LinkBook {
    /// The fraction of its demand (at most 1) a collective using `uses` from `start_ns`
    /// for about `dur_ns` gets on its most loaded link.
    pub(crate) fn share(&mut self, uses: &[LinkUse], start_ns: u64, dur_ns: u64) -> f64 {
        let end_ns = start_ns + dur_ns.max(1);
        let mut share: f64 = 1.0;
        for u in uses {
            let list = self.links.entry(u.link).or_default();
            list.retain(|r| r.end_ns + HORIZON_NS > start_ns);
            let overlapping: Vec<&Reservation> = list
                .iter()
                .filter(|r| r.start_ns < end_ns && r.end_ns > start_ns)
                .collect();
            let taken: f64 = overlapping.iter().map(|r| r.bytes_per_ns).sum();
            let fair = u.capacity_bytes_per_ns / (overlapping.len() + 1) as f64;
            let free = (u.capacity_bytes_per_ns - taken).max(fair);
            if u.demand_bytes_per_ns > 0.0 {
                share = share.min(free / u.demand_bytes_per_ns);
            }
        }
        share.clamp(f64::MIN_POSITIVE, 1.0)
    }

    /// Reserves `share` of each use's demand over `start_ns..end_ns`.
    pub(crate) fn reserve(&mut self, uses: &[LinkUse], share: f64, start_ns: u64, end_ns: u64) {
        for u in uses {
            self.links.entry(u.link).or_default().push(Reservation {
                start_ns,
                end_ns,
                bytes_per_ns: u.demand_bytes_per_ns * share,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chip_link(chip: usize, demand: f64) -> LinkUse {
        LinkUse {
            link: LinkId::Chip(chip),
            demand_bytes_per_ns: demand,
            capacity_bytes_per_ns: 1024.0,
        }
    }

    #[test]
    fn overlapping_collectives_share_a_link_and_disjoint_ones_do_not() {
        let mut book = LinkBook::default();
        let a = [chip_link(0, 1024.0)];
        assert_eq!(book.share(&a, 0, 1000), 1.0);
        book.reserve(&a, 1.0, 0, 1000);
        // Overlapping: the link is full; a fair half is granted.
        assert_eq!(book.share(&a, 500, 1000), 0.5);
        // After it: the whole link.
        assert_eq!(book.share(&a, 1000, 1000), 1.0);
        // Another chip's link is independent.
        assert_eq!(book.share(&[chip_link(1, 1024.0)], 500, 1000), 1.0);
        // A small demand fits beside a half-used link.
        let mut book = LinkBook::default();
        book.reserve(&[chip_link(0, 512.0)], 1.0, 0, 1000);
        assert_eq!(book.share(&[chip_link(0, 256.0)], 0, 1000), 1.0);
        assert_eq!(book.share(&[chip_link(0, 1024.0)], 0, 1000), 0.5);
    }
}
