//! numpy's default `argsort` (`kind="quicksort"`) in its scalar form, an introsort,
//! reproduced so that rows with equal keys come out in the order pandas' `sort_values`
//! gives them where numpy runs it: numpy before 1.25, numpy 1.25/1.26 on x86-64 without
//! AVX-512, numpy 2.x on x86-64 without AVX2 and on every other architecture (64-bit
//! keys). Where numpy dispatches to x86-simd-sort instead, see
//! [`super::numpy_argsort_avx512`] and [`super::numpy_argsort_avx2`].
//!
//! Order among equal timestamps changes HTA's queue length and bandwidth steps and its
//! idle gaps, so a stable sort is not enough for equal numbers. This follows
//! `numpy/_core/src/npysort/quicksort.cpp` (`aquicksort_`, `aheapsort_`): median of three,
//! partitioning while a range spans more than `SMALL_QUICKSORT` (15) positions, insertion
//! sort below, heapsort past a depth of 2·⌊log2 n⌋. `tests/argsort_matches_numpy.rs`
//! checks it against numpy forced onto this path (`NPY_DISABLE_CPU_FEATURES`).

const SMALL_QUICKSORT: usize = 15;

/// Indices that sort `keys` the way numpy's scalar `argsort(kind="quicksort")` does.
/// `keys` must be totally ordered by `<` (integers, or floats without NaN: numpy sorts
/// NaN last, which this does not reproduce).
pub fn numpy_argsort_scalar<K: PartialOrd + Copy>(keys: &[K]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    if keys.len() < 2 {
        return idx;
    }
    let v = keys;
    let mut stack: Vec<(usize, usize, i32)> = Vec::new();
    let (mut pl, mut pr) = (0usize, keys.len() - 1);
    let mut cdepth: i32 = 2 * (usize::BITS - 1 - keys.len().leading_zeros()) as i32;
    loop {
        if cdepth < 0 {
            #[cfg(test)]
            tests::HEAP_SORTS.with(|c| c.set(c.get() + 1));
            heapsort(v, &mut idx[pl..=pr]);
        } else {
            while pr - pl > SMALL_QUICKSORT {
                let pm = pl + ((pr - pl) >> 1);
                if v[idx[pm]] < v[idx[pl]] {
                    idx.swap(pm, pl);
                }
                if v[idx[pr]] < v[idx[pm]] {
                    idx.swap(pr, pm);
                }
                if v[idx[pm]] < v[idx[pl]] {
                    idx.swap(pm, pl);
                }
                let vp = v[idx[pm]];
                let mut pi = pl;
                let mut pj = pr - 1;
                idx.swap(pm, pj);
                loop {
                    pi += 1;
                    while v[idx[pi]] < vp {
                        pi += 1;
                    }
                    pj -= 1;
                    while vp < v[idx[pj]] {
                        pj -= 1;
                    }
                    if pi >= pj {
                        break;
                    }
                    idx.swap(pi, pj);
                }
                idx.swap(pi, pr - 1);
                cdepth -= 1;
                if pi - pl < pr - pi {
                    stack.push((pi + 1, pr, cdepth));
                    pr = pi - 1;
                } else {
                    stack.push((pl, pi - 1, cdepth));
                    pl = pi + 1;
                }
            }
            for pi in pl + 1..=pr {
                let vi = idx[pi];
                let vp = v[vi];
                let mut pj = pi;
                while pj > pl && vp < v[idx[pj - 1]] {
                    idx[pj] = idx[pj - 1];
                    pj -= 1;
                }
                idx[pj] = vi;
            }
        }
        let Some((l, r, d)) = stack.pop() else { break };
        (pl, pr, cdepth) = (l, r, d);
    }
    idx
}

/// numpy's `aheapsort_` on a slice of indices (1-based arithmetic as in numpy).
fn heapsort<K: PartialOrd + Copy>(v: &[K], a: &mut [usize]) {
    let n = a.len();
    let get = |a: &[usize], i: usize| a[i - 1];
    for l in (1..=n >> 1).rev() {
        let tmp = get(a, l);
        let (mut i, mut j) = (l, l << 1);
        while j <= n {
            if j < n && v[get(a, j)] < v[get(a, j + 1)] {
                j += 1;
            }
            if v[tmp] < v[get(a, j)] {
                a[i - 1] = get(a, j);
                i = j;
                j += j;
            } else {
                break;
            }
        }
        a[i - 1] = tmp;
    }
    let mut n = n;
    while n > 1 {
        let tmp = get(a, n);
        a[n - 1] = get(a, 1);
        n -= 1;
        let (mut i, mut j) = (1, 2);
        while j <= n {
            if j < n && v[get(a, j)] < v[get(a, j + 1)] {
                j += 1;
            }
            if v[tmp] < v[get(a, j)] {
                a[i - 1] = get(a, j);
                i = j;
                j += j;
            } else {
                break;
            }
        }
        a[i - 1] = tmp;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Ranges that went to the heapsort fallback.
        pub(super) static HEAP_SORTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    mod adversary {
        include!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/adversary.rs"
        ));
    }

    /// McIlroy's adversary against the median of three reaches the heapsort fallback.
    #[test]
    fn adversarial_keys_reach_the_heapsort() {
        for (n, tie) in [(100, 1), (1000, 4), (2000, 8)] {
            let keys = adversary::killer(n, tie, |k| numpy_argsort_scalar(k));
            HEAP_SORTS.set(0);
            let order = numpy_argsort_scalar(&keys);
            assert!(HEAP_SORTS.get() > 0, "n = {n}");
            assert!(order.windows(2).all(|w| keys[w[0]] <= keys[w[1]]));
        }
    }

    #[test]
    fn sorts_and_keeps_numpy_tie_order() {
        let keys: Vec<i64> = (0..200).map(|i| (i * 7919 % 13) as i64).collect();
        let order = numpy_argsort_scalar(&keys);
        assert!(order.windows(2).all(|w| keys[w[0]] <= keys[w[1]]));
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
        // numpy 2.4.6 with NPY_DISABLE_CPU_FEATURES="X86_V4 X86_V3" (FNV-1a of the order).
        let keys: Vec<i64> = (0..3000).map(|i| i * 7919 % 13).collect();
        let fnv = numpy_argsort_scalar(&keys)
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &i| {
                (h ^ i as u64).wrapping_mul(0x0100_0000_01b3)
            });
        assert_eq!(fnv, 0xeb00_e52f_c805_d0ab);
        assert_eq!(
            numpy_argsort_scalar(&[1, 0, 1, 0]),
            vec![1, 3, 0, 2],
            "small: insertion sort"
        );
        let mut a = vec![3usize, 1, 2, 0];
        heapsort(&[5, 1, 4, 2], &mut a);
        assert_eq!(a, vec![1, 3, 2, 0]);
    }
}
