//! numpy's default `argsort` (`kind="quicksort"`, an introsort), reproduced so that rows
//! with equal keys come out in the order pandas' `sort_values` gives them.
//!
//! Order among equal timestamps changes HTA's queue length and bandwidth steps and its
//! idle gaps, so a stable sort is not enough for equal numbers. This follows
//! `numpy/_core/src/npysort/quicksort.cpp` (`aquicksort_`, `aheapsort_`): median of three,
//! insertion sort below 17 elements, heapsort past a depth of 2·log2(n). (numpy builds
//! with AVX-512 may dispatch 64-bit argsorts to x86-simd-sort instead, whose tie order
//! differs.)

const SMALL_QUICKSORT: usize = 16;

/// Indices that sort `keys` the way `numpy.argsort(keys)` does.
pub fn numpy_argsort(keys: &[i64]) -> Vec<usize> {
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
fn heapsort(v: &[i64], a: &mut [usize]) {
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

    #[test]
    fn sorts_and_keeps_numpy_tie_order() {
        let keys: Vec<i64> = (0..200).map(|i| (i * 7919 % 13) as i64).collect();
        let order = numpy_argsort(&keys);
        assert!(order.windows(2).all(|w| keys[w[0]] <= keys[w[1]]));
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..200).collect::<Vec<_>>());
        assert_eq!(
            numpy_argsort(&[1, 0, 1, 0]),
            vec![1, 3, 0, 2],
            "small: insertion sort"
        );
        let mut a = vec![3usize, 1, 2, 0];
        heapsort(&[5, 1, 4, 2], &mut a);
        assert_eq!(a, vec![1, 3, 2, 0]);
    }
}
