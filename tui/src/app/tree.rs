//! The memory-details tree (AWS neuron-top's fourth pane): per runtime, host memory and
//! device memory by category, per NeuronCore, and the loaded models with their subgraphs.

use super::{App, Runtime};

/// One visible row of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeNode {
    /// Stable identity (`"9001/rank0/device/nc0"`), the key of the expanded set.
    pub path: String,
    /// Nesting depth, 0 at the top.
    pub depth: usize,
    /// Text.
    pub label: String,
    /// Bytes, where the node is a memory figure.
    pub bytes: Option<u64>,
    /// Whether it has children.
    pub has_children: bool,
    /// Whether its children are shown.
    pub expanded: bool,
}

struct Node {
    path: String,
    parent: Option<usize>,
    depth: usize,
    label: String,
    bytes: Option<u64>,
    has_children: bool,
}

struct Builder {
    nodes: Vec<Node>,
}

impl Builder {
    fn add(
        &mut self,
        parent: Option<usize>,
        key: &str,
        label: String,
        bytes: Option<u64>,
    ) -> usize {
        let (path, depth) = match parent {
            Some(p) => {
                self.nodes[p].has_children = true;
                (
                    format!("{}/{key}", self.nodes[p].path),
                    self.nodes[p].depth + 1,
                )
            }
            None => (key.to_string(), 0),
        };
        self.nodes.push(Node {
            path,
            parent,
            depth,
            label,
            bytes,
            has_children: false,
        });
        self.nodes.len() - 1
    }

    fn runtime(&mut self, parent: Option<usize>, prefix: &str, rt: &Runtime) {
        let report = &rt.entry.report;
        let Some(mem) = &report.memory_used else {
            let key = format!("{prefix}none");
            self.add(parent, &key, "no memory report".to_string(), None);
            return;
        };
        let used = &mem.neuron_runtime_used_bytes;
        let host = self.add(
            parent,
            &format!("{prefix}host"),
            "host memory".into(),
            Some(used.host),
        );
        for (label, bytes) in used.usage_breakdown.host.entries() {
            self.add(Some(host), label, label.to_string(), Some(bytes));
        }
        let device = self.add(
            parent,
            &format!("{prefix}device"),
            "device memory".into(),
            Some(used.neuron_device),
        );
        for (core, m) in &used.usage_breakdown.neuroncore_memory_usage {
            let nc = self.add(
                Some(device),
                &format!("nc{core}"),
                format!("NC{core}"),
                Some(m.total()),
            );
            for (label, bytes) in m.entries() {
                self.add(Some(nc), label, label.to_string(), Some(bytes));
            }
        }
        if !mem.loaded_models.is_empty() {
            let models = self.add(parent, &format!("{prefix}models"), "models".into(), None);
            for model in &mem.loaded_models {
                let total: u64 = model
                    .subgraphs
                    .values()
                    .map(|s| s.memory_used_bytes.host + s.memory_used_bytes.neuron_device)
                    .sum();
                let running = if model.is_running { ", running" } else { "" };
                let m = self.add(
                    Some(models),
                    &format!("model{}", model.model_id),
                    format!("model {} {}{running}", model.model_id, model.name),
                    Some(total),
                );
                for (name, sg) in &model.subgraphs {
                    let s = self.add(
                        Some(m),
                        name,
                        format!("{name} on NC{}", sg.neuroncore_index),
                        None,
                    );
                    let b = &sg.memory_used_bytes;
                    self.add(Some(s), "host", "host".into(), Some(b.host));
                    self.add(Some(s), "device", "device".into(), Some(b.neuron_device));
                }
            }
        }
    }
}

impl App {
    fn full_tree(&self) -> Vec<Node> {
        let mut b = Builder { nodes: Vec::new() };
        let runtimes = self.selected_runtimes();
        if self.selected == 0 {
            for rt in runtimes {
                let top = b.add(None, &rt.tag, rt.label(), None);
                b.runtime(Some(top), "", rt);
            }
        } else if let Some(rt) = runtimes.first() {
            b.runtime(None, &format!("{}/", rt.tag), rt);
        }
        b.nodes
    }

    /// The visible rows of the memory-details tree for the selected tab. With a filter,
    /// rows that match, their ancestors and their descendants show, expanded.
    pub fn tree_nodes(&self) -> Vec<TreeNode> {
        let nodes = self.full_tree();
        let mut visible = vec![false; nodes.len()];
        if self.filter.is_empty() {
            for (i, n) in nodes.iter().enumerate() {
                visible[i] = match n.parent {
                    None => true,
                    Some(p) => visible[p] && self.expanded.contains(&nodes[p].path),
                };
            }
        } else {
            let matched: Vec<bool> = nodes
                .iter()
                .map(|n| self.matches_filter(&n.label))
                .collect();
            for i in 0..nodes.len() {
                if matched[i] {
                    // The node, its ancestors.
                    let mut at = Some(i);
                    while let Some(j) = at {
                        visible[j] = true;
                        at = nodes[j].parent;
                    }
                }
                if let Some(p) = nodes[i].parent {
                    // Descendants of a match.
                    if matched[p] || (visible[p] && matched_ancestor(&nodes, &matched, p)) {
                        visible[i] = true;
                    }
                }
            }
        }
        nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| visible[*i])
            .map(|(_, n)| TreeNode {
                path: n.path.clone(),
                depth: n.depth,
                label: n.label.clone(),
                bytes: n.bytes,
                has_children: n.has_children,
                expanded: n.has_children
                    && (!self.filter.is_empty() || self.expanded.contains(&n.path)),
            })
            .collect()
    }

    pub(super) fn set_expanded_at_cursor(&mut self, expand: bool) {
        let nodes = self.tree_nodes();
        let Some(node) = nodes.get(self.tree_cursor) else {
            return;
        };
        if expand && node.has_children {
            self.expanded.insert(node.path.clone());
        } else if !expand {
            if node.expanded {
                self.expanded.remove(&node.path);
            } else if let Some(parent) = node.path.rfind('/').map(|i| &node.path[..i]) {
                // Collapse the parent and move onto it.
                let parent = parent.to_string();
                self.expanded.remove(&parent);
                if let Some(i) = self.tree_nodes().iter().position(|n| n.path == parent) {
                    self.tree_cursor = i;
                }
            }
        }
    }

    pub(super) fn toggle_expand_all(&mut self) {
        let nodes = self.full_tree();
        let expandable: Vec<&str> = nodes
            .iter()
            .filter(|n| n.has_children)
            .map(|n| n.path.as_str())
            .collect();
        if expandable.iter().all(|p| self.expanded.contains(*p)) {
            for p in expandable {
                self.expanded.remove(p);
            }
            self.tree_cursor = 0;
        } else {
            for p in expandable {
                self.expanded.insert(p.to_string());
            }
        }
    }
}

fn matched_ancestor(nodes: &[Node], matched: &[bool], mut i: usize) -> bool {
    loop {
        if matched[i] {
            return true;
        }
        match nodes[i].parent {
            Some(p) => i = p,
            None => return false,
        }
    }
}
