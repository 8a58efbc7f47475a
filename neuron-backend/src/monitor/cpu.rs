//! CPU time of this process and of its threads, for `neuron_runtime_vcpu_usage`, and
//! the process's resident host memory, for `memory_used`.

/// User and system CPU time of the whole process so far, ns (`getrusage`).
pub(crate) fn process_cpu_ns() -> Option<(u64, u64)> {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_SELF is always supported.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return None;
    }
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000;
    Some((ns(usage.ru_utime), ns(usage.ru_stime)))
}

/// User and system CPU time of thread `tid` of this process so far, ns, from
/// `/proc/self/task/<tid>/stat` (fields 14 and 15, in clock ticks); `None` once the
/// thread has exited.
pub(crate) fn thread_cpu_ns(tid: i64) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    parse_stat_cpu_ns(&stat, clock_ticks_per_sec())
}

/// Fields 14 (utime) and 15 (stime) of a `stat` line, converted to ns. The command
/// name (field 2) is in parentheses and may hold spaces, so fields are counted after
/// its closing parenthesis.
pub(crate) fn parse_stat_cpu_ns(stat: &str, ticks_per_sec: u64) -> Option<(u64, u64)> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_ascii_whitespace();
    // After the name: field 3 (state) is the first; utime is field 14, the 12th here.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let tick_ns = 1_000_000_000 / ticks_per_sec.max(1);
    Some((utime * tick_ns, stime * tick_ns))
}

fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as u64
    } else {
        100
    }
}

/// Resident host memory of this process, bytes: field 2 of `/proc/self/statm` (resident
/// pages) times the page size; `None` where `/proc` cannot be read.
pub(crate) fn process_rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    parse_statm_rss_bytes(&statm, u64::try_from(page).ok().filter(|&p| p > 0)?)
}

/// Resident bytes from a `statm` line (size, resident, shared, ... in pages).
pub(crate) fn parse_statm_rss_bytes(statm: &str, page_bytes: u64) -> Option<u64> {
    let resident: u64 = statm.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(resident * page_bytes)
}

/// Online CPUs (the denominator of a usage percentage).
pub(crate) fn online_cpus() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

/// The calling thread's OS thread id.
pub(crate) fn current_tid() -> i64 {
    // SAFETY: the gettid system call has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let line = "123 (neuron rank) 0) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0";
        assert_eq!(
            parse_stat_cpu_ns(line, 100),
            Some((2_500_000_000, 500_000_000))
        );
        assert_eq!(parse_stat_cpu_ns("garbage", 100), None);
    }

    #[test]
    fn resident_pages_are_the_second_statm_field() {
        assert_eq!(
            parse_statm_rss_bytes("1000 250 40 3 0 200 0\n", 4096),
            Some(250 * 4096)
        );
        assert_eq!(parse_statm_rss_bytes("1000", 4096), None);
    }

    #[test]
    fn own_thread_has_cpu_time() {
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns(current_tid()).is_some());
        let (user, _) = process_cpu_ns().unwrap();
        assert!(user > 0);
    }
}
