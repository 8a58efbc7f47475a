//! Times the numpy argsort emulations on 5 million 64-bit keys (median of `--runs N`,
//! default 7), against numpy's scalar introsort emulation in the same run:
//!
//! ```text
//! cargo run --release -p analysis --example argsort_bench -- [--runs N] [--n KEYS]
//! ```
//!
//! Two inputs, both full of ties like trace timestamps: `random` (keys drawn from
//! `0..n/5`) and `timestamps` (rising in runs of equal values, with 1% of the keys moved
//! elsewhere, as launches and kernel starts interleave).

use std::time::{Duration, Instant};

use analysis::stats::{numpy_argsort_avx2, numpy_argsort_avx512, numpy_argsort_scalar};

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn inputs(n: usize) -> Vec<(&'static str, Vec<i64>)> {
    let mut s = 42u64;
    let random = (0..n)
        .map(|_| (splitmix(&mut s) % (n as u64 / 5).max(1)) as i64)
        .collect();
    let mut t = 0i64;
    let mut timestamps: Vec<i64> = (0..n)
        .map(|_| {
            t += (splitmix(&mut s) % 3) as i64;
            t
        })
        .collect();
    for _ in 0..n / 100 {
        let a = splitmix(&mut s) as usize % n;
        let b = splitmix(&mut s) as usize % n;
        timestamps.swap(a, b);
    }
    vec![("random", random), ("timestamps", timestamps)]
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let runs = value("--runs", 7).max(1);
    let n = value("--n", 5_000_000);
    type Sort = fn(&[i64]) -> Vec<usize>;
    let sorts: [(&str, Sort); 3] = [
        ("scalar", numpy_argsort_scalar),
        ("avx512", numpy_argsort_avx512),
        ("avx2", numpy_argsort_avx2),
    ];
    for (input, keys) in inputs(n) {
        let mut baseline = Duration::ZERO;
        for (name, sort) in sorts {
            let times: Vec<Duration> = (0..runs)
                .map(|_| {
                    let start = Instant::now();
                    let order = sort(&keys);
                    let took = start.elapsed();
                    assert_eq!(order.len(), keys.len());
                    took
                })
                .collect();
            let m = median(times);
            if name == "scalar" {
                baseline = m;
            }
            println!(
                "{input:>10} n={n} {name:>6}: median {:8.1} ms of {runs} ({:.2}x scalar)",
                m.as_secs_f64() * 1e3,
                m.as_secs_f64() / baseline.as_secs_f64()
            );
        }
    }
}
