//! Process groups and the rendezvous where a collective's ranks meet.
//!
//! Every collective call on a group gets the next sequence number of the calling rank
//! in that group; the ranks' calls with the same number meet in one slot. Each rank
//! leaves its contribution (input values, shape, dtype, and the modeled instant its
//! device is ready); the last to arrive resolves the collective for everyone (the
//! modeled start is the latest ready instant, the end the same instant for all, and the
//! numerics), and wakes the others. A rank that waits longer than the world's timeout
//! (wall time) gives up with [`BackendError::CollectiveTimeout`] naming the ranks that
//! never came; the slot is marked failed so a late rank errors at once instead of
//! waiting in turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use runtime_hooks::NameId;

use super::Topology;
use crate::tensor::Values;
use crate::{BackendError, DType, Device};

/// Which meeting a call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SlotKey {
    /// The `n`-th collective of the group.
    Collective(u64),
    /// The `n`-th message from group rank `src` to group rank `dst`.
    PointToPoint { src: usize, dst: usize, n: u64 },
}

/// What one rank brings to a collective.
#[derive(Debug)]
pub(crate) struct Contribution {
    /// The collective and its arguments as this rank called it, for example
    /// `all_reduce(sum)`; every rank must agree.
    pub(crate) signature: String,
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: DType,
    /// `None` with numerics off (or for a receive).
    pub(crate) values: Option<Values>,
    /// When this rank's device can start the collective, ns on the timeline.
    pub(crate) ready_ns: u64,
    /// This rank's device (its DMA engines carry its part of the transfers).
    pub(crate) device: Device,
}

/// What the last rank decided for everyone.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) start_ns: u64,
    /// The participant whose device was ready last (the one the others waited for).
    pub(crate) last: usize,
    pub(crate) end_ns: u64,
    /// How each participant's transfers move (the same steps and rate for all).
    pub(crate) schedule: crate::timing::CollectiveSchedule,
    /// Output values per participant (in participant order), `None` without numerics.
    pub(crate) outputs: Vec<Option<Values>>,
}

#[derive(Debug, Default)]
struct Slot {
    contributions: Vec<Option<Contribution>>,
    outcome: Option<Arc<Result<Outcome, BackendError>>>,
    taken: usize,
    /// Set by the first rank that timed out: the ranks that never arrived.
    failed: Option<Vec<usize>>,
}

/// One process group, shared by its ranks.
#[derive(Debug)]
pub(crate) struct GroupShared {
    pub(crate) name: String,
    /// Global ranks, in group-rank order.
    pub(crate) ranks: Vec<usize>,
    pub(crate) name_id: NameId,
    /// `Process Group Ranks` as Kineto writes it, for example `[0, 1, 2, 3]`.
    pub(crate) ranks_id: NameId,
    /// The collective queue (index among the collective queues) the group uses.
    pub(crate) queue_slot: usize,
    pub(crate) topology: Arc<Topology>,
    /// The world's link occupancy, shared by all its groups.
    pub(crate) links: Arc<Mutex<super::links::LinkBook>>,
    pub(crate) timeout: Duration,
    next_seq: Vec<AtomicU64>,
    p2p_seq: Mutex<HashMap<(usize, usize, bool), u64>>,
    slots: Mutex<HashMap<SlotKey, Slot>>,
    arrived: Condvar,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Slots are updated in single steps; a panicking rank leaves them consistent.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl GroupShared {
    pub(crate) fn new(
        name: &str,
        ranks: Vec<usize>,
        queue_slot: usize,
        topology: Arc<Topology>,
        links: Arc<Mutex<super::links::LinkBook>>,
        timeout: Duration,
    ) -> Self {
        let listed = ranks
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        GroupShared {
            name: name.to_string(),
            name_id: runtime_hooks::intern(name),
            ranks_id: runtime_hooks::intern(&format!("[{listed}]")),
            next_seq: ranks.iter().map(|_| AtomicU64::new(0)).collect(),
            ranks,
            queue_slot,
            topology,
            links,
            timeout,
            p2p_seq: Mutex::new(HashMap::new()),
            slots: Mutex::new(HashMap::new()),
            arrived: Condvar::new(),
        }
    }

    /// The next collective sequence number of group rank `group_rank`.
    pub(crate) fn next_seq(&self, group_rank: usize) -> u64 {
        self.next_seq[group_rank].fetch_add(1, Ordering::Relaxed)
    }

    /// The next message number from `src` to `dst`, as the sender (`sending`) or the
    /// receiver counts it (both count the same messages).
    pub(crate) fn next_p2p(&self, src: usize, dst: usize, sending: bool) -> u64 {
        let mut seq = lock(&self.p2p_seq);
        let n = seq.entry((src, dst, sending)).or_default();
        *n += 1;
        *n - 1
    }

    /// Meets the other `participants` (group ranks) of `key`: leaves `contribution` as
    /// participant `me` (an index into `participants`), and returns the outcome once
    /// the last has arrived; the last runs `resolve` over all contributions. With
    /// `wait` false (a send), leaves the contribution and returns `None` at once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn meet(
        &self,
        key: SlotKey,
        collective: &'static str,
        participants: &[usize],
        me: usize,
        contribution: Contribution,
        resolve: impl FnOnce(&[Contribution]) -> Result<Outcome, BackendError>,
    ) -> Result<Arc<Result<Outcome, BackendError>>, BackendError> {
        let seq = match key {
            SlotKey::Collective(n) | SlotKey::PointToPoint { n, .. } => n,
        };
        let mut slots = lock(&self.slots);
        let slot = slots.entry(key).or_insert_with(|| Slot {
            contributions: participants.iter().map(|_| None).collect(),
            ..Default::default()
        });
        let timeout_error = |missing: &[usize], waited: Duration| BackendError::CollectiveTimeout {
            collective,
            group: self.name.clone(),
            seq,
            rank: self.ranks[participants[me]],
            missing_ranks: missing.to_vec(),
            waited_ms: waited.as_millis() as u64,
        };
        if let Some(missing) = &slot.failed {
            return Err(timeout_error(missing, Duration::ZERO));
        }
        slot.contributions[me] = Some(contribution);
        if slot.contributions.iter().all(Option::is_some) {
            let all: Vec<Contribution> = slot
                .contributions
                .iter_mut()
                .flat_map(Option::take)
                .collect();
            slot.outcome = Some(Arc::new(resolve(&all)));
            self.arrived.notify_all();
        }
        let began = Instant::now();
        let deadline = began + self.timeout;
        loop {
            let slot = slots.get_mut(&key).expect("a slot stays until all took it");
            if let Some(outcome) = slot.outcome.clone() {
                slot.taken += 1;
                if slot.taken == participants.len() {
                    slots.remove(&key);
                }
                return Ok(outcome);
            }
            let now = Instant::now();
            if now >= deadline {
                let missing: Vec<usize> = slot
                    .contributions
                    .iter()
                    .zip(participants)
                    .filter(|(c, _)| c.is_none())
                    .map(|(_, &p)| self.ranks[p])
                    .collect();
                slot.failed = Some(missing.clone());
                return Err(timeout_error(&missing, now - began));
            }
            slots = self
                .arrived
                .wait_timeout(slots, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// One rank's handle on a process group.
#[derive(Debug, Clone)]
pub struct ProcessGroup {
    pub(crate) shared: Arc<GroupShared>,
    /// This rank's index in the group.
    pub(crate) group_rank: usize,
    pub(crate) device: Device,
}

impl ProcessGroup {
    /// The group's name (`Process Group Name`; the world group is `"0"` as in PyTorch).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Number of ranks in the group.
    pub fn size(&self) -> usize {
        self.shared.ranks.len()
    }

    /// This rank's index in the group.
    pub fn rank(&self) -> usize {
        self.group_rank
    }

    /// The group's global ranks, in group-rank order.
    pub fn ranks(&self) -> &[usize] {
        &self.shared.ranks
    }

    /// The device this rank drives.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The execution queue (device queue index) the group's collectives run on.
    pub fn queue(&self) -> usize {
        let p = self.device.profile();
        p.compute_queues as usize + self.shared.queue_slot % p.collective_queues.max(1) as usize
    }
}
