//! The dependency graph: start and end nodes of events, weighted edges, the longest path
//! (networkx's `dag_longest_path`, tie for tie) and re-timing with new edge weights.

use serde::Serialize;

use crate::model::FastMap;

/// Why an edge exists (HTA's `CPEdgeType`, plus the cross-rank collective edge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// A span of an operator or kernel (start → end, or between nested operators'
    /// nodes on one thread): HTA `critical_path_operator`.
    Operator,
    /// A zero-weight ordering between top-level operators of a thread: HTA
    /// `critical_path_dependency`.
    Dependency,
    /// Launch call start → kernel start, when the stream's queue was empty: HTA
    /// `critical_path_kernel_launch_delay`. Zero weight when added only to keep the
    /// launch's causality (HTA's zero-weight launch edges).
    LaunchDelay,
    /// Previous kernel end → kernel start on one stream: HTA
    /// `critical_path_kernel_kernel_delay`.
    KernelKernelDelay,
    /// Device row end → end of the host call (or device row) that waited for it: HTA
    /// `critical_path_sync_dependency`.
    SyncDependency,
    /// Another rank's collective start → this rank's collective end: a collective ends
    /// only after every rank joined, so its completion depends on the last arrival.
    /// Weight: the collective's transfer time (end − last arrival). Not in HTA.
    CollectiveArrival,
}

impl EdgeKind {
    /// HTA's name for the edge type (`critical_path_operator`, …); ours for the
    /// collective edge.
    pub fn hta_name(self) -> &'static str {
        match self {
            EdgeKind::Operator => "critical_path_operator",
            EdgeKind::Dependency => "critical_path_dependency",
            EdgeKind::LaunchDelay => "critical_path_kernel_launch_delay",
            EdgeKind::KernelKernelDelay => "critical_path_kernel_kernel_delay",
            EdgeKind::SyncDependency => "critical_path_sync_dependency",
            EdgeKind::CollectiveArrival => "critical_path_collective_arrival",
        }
    }
}

/// A point in time: the start or end of one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// Time, in the graph's ticks.
    pub ts: i64,
    /// The event, an index into the graph's events.
    pub event: u32,
    /// Start (true) or end.
    pub is_start: bool,
}

/// A weighted edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Source node.
    pub src: u32,
    /// Destination node.
    pub dst: u32,
    /// Weight in ticks as HTA computes it (`dst.ts - src.ts`, or 0); may be negative
    /// when a child ends after its parent (rounding), then the longest path counts it
    /// as 0, as HTA does, while the breakdown shows it as is.
    pub weight: i64,
    /// Why the edge exists.
    pub kind: EdgeKind,
    /// The event the edge's time is attributed to (HTA's `edge_to_event_map`), when
    /// the edge is a span or a kernel-kernel delay.
    pub attributed: Option<u32>,
    /// Whether the edge's weight is a duration that scales with its event (spans of
    /// operators and kernels); delays, gaps and dependencies keep their weight.
    pub scales: bool,
    /// Whether the edge only orders two nodes (zero weight on the critical path): a
    /// launch before its kernel, or stream order, where HTA's rules chose another edge.
    /// Re-timing gives it the rank's smallest observed delay of its kind.
    pub causal: bool,
}

/// Nodes and edges, with each node's incoming and outgoing edges in insertion order
/// (which decides ties in the longest path, as networkx's adjacency order does).
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Nodes; a node's id is its index.
    pub nodes: Vec<Node>,
    /// Edges; an edge's id is its index.
    pub edges: Vec<Edge>,
    preds: Vec<Vec<u32>>,
    succs: Vec<Vec<u32>>,
    by_pair: FastMap<(u32, u32), u32>,
    /// Nodes in the order an edge first touched them (networkx's node order: a node
    /// enters a `DiGraph` with its first edge); nodes without edges are not in it.
    touched: Vec<u32>,
}

/// The graph has a cycle: no longest path (a damaged trace, or events whose times
/// contradict their order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// Nodes left on a cycle or behind one.
    pub nodes_on_cycles: usize,
}

impl Graph {
    /// Adds a node; returns its id.
    pub fn add_node(&mut self, node: Node) -> u32 {
        self.nodes.push(node);
        self.preds.push(Vec::new());
        self.succs.push(Vec::new());
        (self.nodes.len() - 1) as u32
    }

    /// Adds an edge, or replaces the one between the same two nodes (as networkx's
    /// `add_edge` does: the edge keeps its place, its data is replaced). Self-loops
    /// are refused (returns `None`).
    pub fn add_edge(&mut self, edge: Edge) -> Option<u32> {
        if edge.src == edge.dst {
            return None;
        }
        if let Some(&id) = self.by_pair.get(&(edge.src, edge.dst)) {
            self.edges[id as usize] = edge;
            return Some(id);
        }
        for node in [edge.src, edge.dst] {
            if self.preds[node as usize].is_empty() && self.succs[node as usize].is_empty() {
                self.touched.push(node);
            }
        }
        let id = self.edges.len() as u32;
        self.edges.push(edge);
        self.preds[edge.dst as usize].push(id);
        self.succs[edge.src as usize].push(id);
        self.by_pair.insert((edge.src, edge.dst), id);
        Some(id)
    }

    /// The edge between two nodes, if any.
    pub fn edge_between(&self, src: u32, dst: u32) -> Option<u32> {
        self.by_pair.get(&(src, dst)).copied()
    }

    /// Incoming edges of a node, in insertion order.
    pub fn preds(&self, node: u32) -> &[u32] {
        &self.preds[node as usize]
    }

    /// Outgoing edges of a node, in insertion order.
    pub fn succs(&self, node: u32) -> &[u32] {
        &self.succs[node as usize]
    }

    /// Nodes with at least one edge (what networkx's `number_of_nodes` counts).
    pub fn connected_nodes(&self) -> usize {
        self.touched.len()
    }

    /// The nodes with edges in networkx's topological order (`topological_generations`:
    /// Kahn's algorithm by generations, roots in networkx's node order, children in
    /// edge order).
    pub fn topological_order(&self) -> Result<Vec<u32>, Cycle> {
        let n = self.touched.len();
        let mut indegree: Vec<u32> = self.preds.iter().map(|p| p.len() as u32).collect();
        let mut order = Vec::with_capacity(n);
        let mut generation: Vec<u32> = self
            .touched
            .iter()
            .copied()
            .filter(|&v| indegree[v as usize] == 0)
            .collect();
        while !generation.is_empty() {
            let mut next = Vec::new();
            for &v in &generation {
                for &e in &self.succs[v as usize] {
                    let child = self.edges[e as usize].dst;
                    indegree[child as usize] -= 1;
                    if indegree[child as usize] == 0 {
                        next.push(child);
                    }
                }
            }
            order.extend_from_slice(&generation);
            generation = next;
        }
        if order.len() < n {
            return Err(Cycle {
                nodes_on_cycles: n - order.len(),
            });
        }
        Ok(order)
    }

    /// The longest path by `weight(edge)` (negative weights count as 0), networkx's
    /// `dag_longest_path` exactly: each node keeps the first incoming edge of maximal
    /// length (a negative best restarts the path there), and the path ends at the first
    /// node in topological order with the maximal length. Returns the path's edges in
    /// order.
    pub fn longest_path(&self, weight: impl Fn(&Edge) -> i64) -> Result<Vec<u32>, Cycle> {
        let order = self.topological_order()?;
        // (length, edge that reached the node) per node.
        let mut dist: Vec<(i64, Option<u32>)> = vec![(0, None); self.nodes.len()];
        for &v in &order {
            let mut best: Option<(i64, u32)> = None;
            for &e in &self.preds[v as usize] {
                let edge = &self.edges[e as usize];
                let len = dist[edge.src as usize].0 + weight(edge).max(0);
                if best.is_none_or(|(b, _)| len > b) {
                    best = Some((len, e));
                }
            }
            dist[v as usize] = match best {
                Some((len, e)) if len >= 0 => (len, Some(e)),
                _ => (0, None),
            };
        }
        let Some(&first) = order.first() else {
            return Ok(Vec::new());
        };
        let mut end = first;
        for &v in &order {
            if dist[v as usize].0 > dist[end as usize].0 {
                end = v;
            }
        }
        let mut path = Vec::new();
        let mut v = end;
        while let Some(e) = dist[v as usize].1 {
            path.push(e);
            v = self.edges[e as usize].src;
        }
        path.reverse();
        Ok(path)
    }

    /// New node times when every edge's weight is `weight(edge)`: a node happens at the
    /// latest of its predecessors' times plus the edge weights; a node without incoming
    /// edges keeps its time. Returns the times by node id.
    pub fn retime(&self, weight: impl Fn(&Edge) -> i64) -> Result<Vec<i64>, Cycle> {
        let order = self.topological_order()?;
        let mut times: Vec<i64> = self.nodes.iter().map(|n| n.ts).collect();
        for &v in &order {
            let mut at: Option<i64> = None;
            for &e in &self.preds[v as usize] {
                let edge = &self.edges[e as usize];
                let t = times[edge.src as usize] + weight(edge).max(0);
                at = Some(at.map_or(t, |a| a.max(t)));
            }
            if let Some(t) = at {
                times[v as usize] = t;
            }
        }
        Ok(times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ts: i64) -> Node {
        Node {
            ts,
            event: 0,
            is_start: true,
        }
    }

    fn edge(src: u32, dst: u32, weight: i64) -> Edge {
        Edge {
            src,
            dst,
            weight,
            kind: EdgeKind::Operator,
            attributed: None,
            scales: true,
            causal: false,
        }
    }

    #[test]
    fn longest_path_takes_the_heaviest_chain_and_first_of_ties() {
        let mut g = Graph::default();
        for ts in [0, 1, 2, 3] {
            g.add_node(node(ts));
        }
        g.add_edge(edge(0, 1, 5));
        g.add_edge(edge(0, 2, 2));
        g.add_edge(edge(1, 3, 1));
        g.add_edge(edge(2, 3, 4)); // 0→2→3 = 6 = 0→1→3: the first predecessor wins
        let path = g.longest_path(|e| e.weight).unwrap();
        assert_eq!(path, vec![0, 2]);
        let times = g.retime(|e| e.weight).unwrap();
        assert_eq!(times, vec![0, 5, 2, 6]);
    }

    #[test]
    fn a_cycle_is_reported() {
        let mut g = Graph::default();
        g.add_node(node(0));
        g.add_node(node(1));
        g.add_edge(edge(0, 1, 1));
        g.add_edge(edge(1, 0, 1));
        assert_eq!(
            g.longest_path(|e| e.weight),
            Err(Cycle { nodes_on_cycles: 2 })
        );
    }

    #[test]
    fn a_repeated_edge_replaces_the_first_in_place() {
        let mut g = Graph::default();
        g.add_node(node(0));
        g.add_node(node(1));
        assert_eq!(g.add_edge(edge(0, 1, 1)), Some(0));
        assert_eq!(g.add_edge(edge(0, 1, 7)), Some(0));
        assert_eq!(g.edges.len(), 1);
        assert_eq!(g.edges[0].weight, 7);
        assert_eq!(g.add_edge(edge(1, 1, 7)), None);
    }
}
