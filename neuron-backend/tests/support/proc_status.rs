//! This process's thread count and resident set, from `/proc/self`.

#![allow(dead_code)] // each test uses what it needs

/// A field of `/proc/self/status` (`Threads`, `VmRSS`), its first number.
fn status_field(name: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /proc/self/status"))
}

/// Threads of this process.
pub fn threads() -> u64 {
    status_field("Threads")
}

/// Resident set size, bytes.
pub fn rss_bytes() -> u64 {
    status_field("VmRSS") * 1024
}

/// Threads of this process whose name (as the kernel keeps it: 15 bytes) starts with
/// `prefix`.
pub fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end().starts_with(prefix))
        .count()
}
