//! Our emulations of numpy's `argsort(kind="quicksort")` give numpy's exact permutation,
//! equal keys included, on 710 arrays full of ties (every size 0 to 300, 400 more up to
//! 5000, three of 100 000; random keys from small and large ranges, runs, sorted and
//! reversed inputs, all-equal, sorted with a few swaps, one dominating key, and stored
//! worst cases that reach every fallback), checked against the numpy in the HTA venv
//! (`NEURONPROF_HTA_PYTHON`, else `target/hta-venv`, which `.ci/run` creates; without
//! either the test skips with a message, except in CI where it fails).
//!
//! numpy picks its kernel at import time; the test runs it as the CPU allows (AVX-512 →
//! [`numpy_argsort_avx512`], AVX2 only → [`numpy_argsort_avx2`]), then forced down with
//! `NPY_DISABLE_CPU_FEATURES` to the AVX2 kernel and to the scalar introsort
//! ([`numpy_argsort_scalar`]), then once more as the CPU allows on the same keys as
//! float64. A kernel the CPU lacks is reported as not checked. The arrays travel through
//! files: four python launches in all. `NEURONPROF_ARGSORT_ROUNDS=N` multiplies the 400
//! random arrays by N for a longer search (N = 100, in release: 40,310 arrays, every one
//! equal on all four checks, with numpy 2.4.6 on an AVX-512 CPU).

#[path = "../../tests/support/skip.rs"]
mod skip;

mod support {
    pub mod adversary;
}

use std::path::Path;
use std::process::Command;

use analysis::stats::{numpy_argsort_avx2, numpy_argsort_avx512, numpy_argsort_scalar};
use support::adversary;

/// `NEURONPROF_HTA_PYTHON`, else the workspace's `target/hta-venv` python if it exists.
fn hta_python() -> Option<String> {
    if let Ok(python) = std::env::var("NEURONPROF_HTA_PYTHON") {
        return Some(python);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/hta-venv/bin/python");
    venv.exists().then(|| venv.to_string_lossy().into_owned())
}

/// Reads arrays (`argv[1]`: their lengths, little-endian i64; `argv[2]`: their keys,
/// one after another, as numpy dtype `argv[3]`), argsorts each with `kind="quicksort"`
/// and writes the indices to `argv[4]` as i64; prints the numpy version and the 64-bit
/// argsort kernel this numpy dispatches to (the dispatch targets are `X86_V4`/`X86_V3`
/// from numpy 2.4, `AVX512_SKX`/`AVX2` before).
const HARNESS: &str = r#"
import sys
import numpy as np
try:
    from numpy._core._multiarray_umath import __cpu_features__ as f
except ImportError:  # numpy 1.x
    from numpy.core._multiarray_umath import __cpu_features__ as f
if "X86_V4" in f:
    avx512, avx2 = f["X86_V4"], f["X86_V3"]
else:
    avx512 = f.get("AVX512_SKX", False) and f.get("AVX512F", False)
    avx2 = f.get("AVX2", False) and int(np.__version__.split(".")[0]) >= 2
lengths = np.fromfile(sys.argv[1], dtype="<i8")
keys = np.fromfile(sys.argv[2], dtype=sys.argv[3])
pos, out = 0, []
for n in lengths:
    out.append(np.argsort(keys[pos : pos + n].copy(), kind="quicksort").astype("<i8"))
    pos += n
(np.concatenate(out) if out else np.zeros(0, "<i8")).tofile(sys.argv[4])
print(np.__version__, "avx512" if avx512 else "avx2" if avx2 else "scalar")
"#;

/// splitmix64: a fixed sequence, so a failure names an array that stays the same.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One array of `n` keys in shape `kind`.
fn array(rng: &mut Rng, n: usize, kind: u64) -> Vec<i64> {
    let range = [1u64, 2, 3, 5, 8, 17, 100, 1000, 1 << 40][rng.below(9) as usize];
    let mut v: Vec<i64> = match kind {
        0 => (0..n).map(|_| rng.below(range) as i64).collect(),
        // Runs of equal keys, rising like timestamps.
        1 => {
            let mut t = 0i64;
            let mut v = Vec::with_capacity(n);
            while v.len() < n {
                let run = 1 + rng.below(12) as usize;
                v.extend(std::iter::repeat_n(t, run.min(n - v.len())));
                t += rng.below(3) as i64;
            }
            v
        }
        2 => vec![rng.below(5) as i64 - 2; n],
        // One key dominates: the SIMD kernels' pivot is then the smallest key level after
        // level, and they end in their std::sort fallback.
        5 => (0..n)
            .map(|_| match rng.below(40) {
                0 => rng.below(range) as i64,
                _ => 0,
            })
            .collect(),
        3 => (0..n as i64)
            .map(|i| i / (1 + range as i64 % 7))
            .rev()
            .collect(),
        // Negative and positive, a few extremes.
        _ => (0..n)
            .map(|_| match rng.below(20) {
                0 => i64::MIN,
                1 => i64::MAX - 1,
                // Ties with the networks' padding.
                2 | 3 => i64::MAX,
                _ => rng.below(range) as i64 - (range / 2) as i64,
            })
            .collect(),
    };
    if kind == 1 || kind == 3 {
        // Nearly sorted: a few swaps.
        for _ in 0..rng.below(4) {
            if n > 1 {
                let (a, b) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
                v.swap(a, b);
            }
        }
    }
    v
}

fn arrays() -> Vec<Vec<i64>> {
    let mut rng = Rng(0x5eed_0fa2_c5c5);
    let mut out = Vec::new();
    // Every length through the network sizes and the first partitions.
    for n in 0..=300 {
        let kind = rng.below(6);
        out.push(array(&mut rng, n, kind));
    }
    // NEURONPROF_ARGSORT_ROUNDS=N: N times as many (for a longer search; 1 by default).
    let rounds: usize = std::env::var("NEURONPROF_ARGSORT_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    for _ in 0..400 * rounds {
        let n = rng.below(5000) as usize;
        let kind = rng.below(6);
        out.push(array(&mut rng, n, kind));
    }
    for kind in [0, 1, 5] {
        out.push(array(&mut rng, 100_000, kind));
    }
    out.extend(worst_cases());
    out
}

/// Stored worst cases: McIlroy's adversary (`support/adversary.rs`, with runs of equal
/// keys) run against each emulation. They reach the heapsort fallbacks (numpy's own, and
/// libstdc++'s inside x86-simd-sort's `std::sort` fallback; the unit tests of
/// `analysis::stats` check that), where ties then decide the order. Stored, not made at
/// test time: made by a changed emulation they would follow its own comparisons.
const WORST_CASES: &str = "tests/data/argsort-worst-cases.txt";

/// `(n, tie)` of the stored worst cases; each is made against the AVX-512, AVX2 and
/// scalar emulations in turn.
const WORST_CASE_SHAPES: [(usize, usize); 2] = [(1000, 4), (2000, 8)];

fn worst_cases() -> Vec<Vec<i64>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(WORST_CASES);
    let text = std::fs::read_to_string(&path).expect("tests/data/argsort-worst-cases.txt");
    let cases: Vec<Vec<i64>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            l.split_whitespace()
                .map(|k| k.parse().expect("a key"))
                .collect()
        })
        .collect();
    assert_eq!(cases.len(), 3 * WORST_CASE_SHAPES.len(), "{WORST_CASES}");
    cases
}

#[test]
#[ignore = "rewrites tests/data/argsort-worst-cases.txt from the emulations"]
fn regenerate_worst_cases() {
    let mut text = String::from(
        "# McIlroy worst cases with runs of equal keys (tests/support/adversary.rs), one a\n\
         # line, made against numpy_argsort_avx512, _avx2 and _scalar for each (n, tie) in\n\
         # argsort_matches_numpy.rs's WORST_CASE_SHAPES. Made by: cargo test -p analysis\n\
         # --test argsort_matches_numpy -- --ignored regenerate_worst_cases\n",
    );
    for (n, tie) in WORST_CASE_SHAPES {
        for keys in [
            adversary::killer(n, tie, |k| numpy_argsort_avx512(k)),
            adversary::killer(n, tie, |k| numpy_argsort_avx2(k)),
            adversary::killer(n, tie, |k| numpy_argsort_scalar(k)),
        ] {
            let line: Vec<String> = keys.iter().map(i64::to_string).collect();
            text += &line.join(" ");
            text.push('\n');
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(WORST_CASES);
    std::fs::write(path, text).expect("write the worst cases");
}

/// Writes the arrays' lengths to `lengths.bin` and their keys to `i64.bin` and, as
/// floats, `f64.bin` in `dir`.
fn write_arrays(dir: &Path, arrays: &[Vec<i64>]) {
    let lengths: Vec<u8> = arrays
        .iter()
        .flat_map(|a| (a.len() as i64).to_le_bytes())
        .collect();
    let ints: Vec<u8> = arrays
        .iter()
        .flatten()
        .flat_map(|k| k.to_le_bytes())
        .collect();
    let floats: Vec<u8> = arrays
        .iter()
        .flatten()
        .flat_map(|&k| (k as f64).to_le_bytes())
        .collect();
    for (name, bytes) in [
        ("lengths.bin", lengths),
        ("i64.bin", ints),
        ("f64.bin", floats),
    ] {
        std::fs::write(dir.join(name), bytes).expect("write the arrays");
    }
}

/// Runs the harness with `NPY_DISABLE_CPU_FEATURES=disable`; returns numpy's version, its
/// kernel and every array's permutation.
fn numpy_argsorts(
    python: &str,
    dir: &Path,
    arrays: &[Vec<i64>],
    disable: &str,
    float: bool,
) -> (String, String, Vec<Vec<usize>>) {
    let output = dir.join("order.bin");
    let (keys, dtype) = if float {
        ("f64.bin", "<f8")
    } else {
        ("i64.bin", "<i8")
    };
    let run = Command::new(python)
        .args(["-c", HARNESS])
        .arg(dir.join("lengths.bin"))
        .arg(dir.join(keys))
        .arg(dtype)
        .arg(&output)
        .env("NPY_DISABLE_CPU_FEATURES", disable)
        .output()
        .expect("start python");
    assert!(
        run.status.success(),
        "numpy harness failed (NPY_DISABLE_CPU_FEATURES={disable:?}): {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let mut words = stdout.split_whitespace();
    let version = words.next().unwrap_or_default().to_owned();
    let kernel = words.next().unwrap_or_default().to_owned();
    let bytes = std::fs::read(&output).expect("read numpy's order");
    let mut flat = bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as usize);
    let orders = arrays
        .iter()
        .map(|a| flat.by_ref().take(a.len()).collect())
        .collect();
    (version, kernel, orders)
}

/// Compares every array; returns how many differ (and prints the first few).
fn mismatches<K>(arrays: &[Vec<K>], numpy: &[Vec<usize>], ours: fn(&[K]) -> Vec<usize>) -> usize {
    let mut bad = 0;
    for (i, (keys, want)) in arrays.iter().zip(numpy).enumerate() {
        let got = ours(keys);
        if &got != want {
            if bad < 3 {
                let at = got.iter().zip(want).position(|(g, w)| g != w).unwrap_or(0);
                eprintln!(
                    "array {i} (n = {}): first difference at position {at}: ours {:?}, numpy {:?}",
                    keys.len(),
                    &got[at..(at + 8).min(got.len())],
                    &want[at..(at + 8).min(want.len())]
                );
            }
            bad += 1;
        }
    }
    bad
}

#[test]
fn argsort_matches_numpy_on_every_kernel_this_cpu_has() {
    let Some(python) = hta_python() else {
        skip::skipped(
            "analysis: argsort_matches_numpy",
            "no numpy: run `bash scripts/hta-venv` or set NEURONPROF_HTA_PYTHON to a python \
             with numpy",
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("neuronprof-argsort-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let arrays = arrays();
    write_arrays(&dir, &arrays);

    let (version, native, orders) = numpy_argsorts(&python, &dir, &arrays, "", false);
    // numpy 2.4 dispatches to targets X86_V4 / X86_V3. Older numpy dispatches to
    // AVX512_SKX / AVX2 but keeps taking its AVX-512 kernel until AVX512F is off too
    // (seen with numpy 2.2.6). numpy ignores names it does not know.
    let no_avx512 = "X86_V4 AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX \
                     AVX512_CNL AVX512_ICL AVX512_SPR";
    let no_avx2 = format!("{no_avx512} X86_V3 AVX2");
    let (no_avx512, no_avx2) = (no_avx512, no_avx2.as_str());
    let mut failures = Vec::new();
    let mut check = |kernel: &str, orders: &[Vec<usize>]| {
        let ours: fn(&[i64]) -> Vec<usize> = match kernel {
            "avx512" => numpy_argsort_avx512,
            "avx2" => numpy_argsort_avx2,
            _ => numpy_argsort_scalar,
        };
        let bad = mismatches(&arrays, orders, ours);
        eprintln!(
            "numpy {version}, {kernel} kernel, int64: {} of {} arrays match",
            arrays.len() - bad,
            arrays.len()
        );
        if bad > 0 {
            failures.push(format!("{kernel}: {bad} arrays differ"));
        }
    };
    check(&native, &orders);
    if native != "avx512" {
        eprintln!("AVX-512 kernel not checked: this CPU (or numpy build) does not use it");
    }
    let mut kernels_seen = vec![native.clone()];
    for disable in [no_avx512, no_avx2] {
        let (_, kernel, orders) = numpy_argsorts(&python, &dir, &arrays, disable, false);
        if kernels_seen.contains(&kernel) {
            continue;
        }
        check(&kernel, &orders);
        kernels_seen.push(kernel);
    }
    if !kernels_seen.iter().any(|k| k == "avx2") {
        eprintln!("AVX2 kernel not checked: this CPU (or numpy build) does not use it");
    }
    // float64 takes the same paths (no NaN here); checked on the native kernel.
    let floats: Vec<Vec<f64>> = arrays
        .iter()
        .map(|a| a.iter().map(|&k| k as f64).collect())
        .collect();
    let (_, kernel, orders) = numpy_argsorts(&python, &dir, &arrays, "", true);
    let ours: fn(&[f64]) -> Vec<usize> = match kernel.as_str() {
        "avx512" => numpy_argsort_avx512,
        "avx2" => numpy_argsort_avx2,
        _ => numpy_argsort_scalar,
    };
    let bad = mismatches(&floats, &orders, ours);
    eprintln!(
        "numpy {version}, {kernel} kernel, float64: {} of {} arrays match",
        floats.len() - bad,
        floats.len()
    );
    if bad > 0 {
        failures.push(format!("{kernel} float64: {bad} arrays differ"));
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        kernels_seen.iter().any(|k| k == "scalar"),
        "numpy did not fall back to its scalar argsort with NPY_DISABLE_CPU_FEATURES={no_avx2:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("; "));
}
