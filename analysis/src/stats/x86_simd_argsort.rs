//! numpy's `argsort(kind="quicksort")` for 64-bit keys as it runs when numpy dispatches to
//! Intel's x86-simd-sort: the AVX-512 kernel (numpy ≥ 1.25 on CPUs with AVX-512
//! SKX; numpy 2.x names the target `X86_V4`) and the AVX2 kernel (numpy 2.x on CPUs with
//! AVX2 but no AVX-512; target `X86_V3`). Equal keys come out in the order those kernels
//! leave them, which is what pandas' `sort_values(by=…)` (and so HTA) gives on such a
//! machine.
//!
//! Facts from the sources numpy 2.4 builds (`numpy/_core/src/npysort/quicksort.cpp`,
//! `x86_simd_argsort.dispatch.cpp`, `meson.build`, and the x86-simd-sort numpy 2.4.0
//! vendors, commit 6a7a01d: `xss-common-argsort.h`, `xss-network-keyvaluesort.hpp`,
//! `xss-reg-networks.hpp`, `avx512-64bit-common.h`, `avx2-64bit-qsort.hpp`,
//! `avx2-emu-funcs.hpp`; numpy 2.4.6 vendors a later commit, 5adb334, which was not at
//! hand, and agrees on every array tested). The data movement is reproduced one lane at
//! a time, not the SIMD instructions, and each key travels with its index where the
//! kernels move indices and gather keys through them (the same order, without random
//! reads). `tests/argsort_matches_numpy.rs` checks both kernels against numpy
//! permutation for permutation. Older numpy vendored older x86-simd-sort: numpy 2.2.6
//! (its commit 9a1b616) lacks only the sorted-input early exit (from 2025; without it
//! this code matched numpy 2.2.6 on all of the test's arrays), so it reorders ties in
//! already sorted input; numpy 1.26.4's kernel orders ties differently (178 of the
//! test's 710 arrays equal).
//!
//! The algorithm, for `n` keys:
//!
//! - numpy calls the kernel for every length (no size threshold), indices start as
//!   `0..n`. Nothing happens below two keys; keys already in non-decreasing order keep
//!   the identity order (`std::is_sorted` early exit).
//! - Recursion budget `2·⌊log2 n⌋` (a `double` log2); a range reached with no budget left
//!   goes to libstdc++'s `std::sort` on the indices (compare `key[a] < key[b]`).
//! - A range of at most 256 keys is sorted by a bitonic network on `V` registers of `L`
//!   lanes (`L` = 8 for AVX-512, 4 for AVX2; `V` the smallest power of two with
//!   `V·L ≥ n`), lanes past `n` padded with the largest key: each register sorted by its
//!   own network, then merged in pairs, fours, … (the upper register of each pair
//!   reversed, then half cleaners across registers, then inside each register).
//!   Every compare-exchange moves a pair only when the lower lane's key is strictly
//!   greater, so equal keys never trade places *in one step*, yet the network as a whole
//!   is not stable.
//! - Larger ranges: pivot = the middle (`[L/2]`) of `L` keys sampled at
//!   `left + k·⌊(right − left)/L⌋`, `k = 1..=L` (`right` inclusive). The partition sends
//!   keys `< pivot` left and `≥ pivot` right: first a scalar pass over `(len mod 4L)`
//!   keys at the left end (a key `≥ pivot` is swapped with the last unvisited one), then
//!   4×L-key blocks read alternately from whichever end has less free room, the first
//!   and last 4 blocks kept for the end. Each L-key register is written as two
//!   compress-stores: AVX-512 stores just the `<` lanes, in lane order, at the left
//!   cursor and just the `≥` lanes, in lane order, ending at the right cursor; AVX2
//!   permutes the register to `[< lanes in order, ≥ lanes in reverse order]` and stores
//!   all L lanes at the left cursor and again at the right cursor.
//! - The left part is sorted unless the pivot is the range's smallest key, the right part
//!   unless the pivot is its largest key (then the right part is all equal and keeps its
//!   order).
//!
//! Padding ties with keys equal to the type's largest value (`i64::MAX`, `+inf`), and
//! numpy's networks never swap ties; here padding sorts after every key instead, which
//! keeps the output a permutation by construction. The two gave the same order on every
//! array tried (the test's arrays include `i64::MAX` keys; 4,310 arrays with up to 30 %
//! of them in one search).

/// Indices that sort `keys` the way numpy 2.x's `argsort(kind="quicksort")` does on an
/// x86-64 CPU with AVX-512 (x86-simd-sort's `avx512_argsort`). `keys` must be totally
/// ordered by `<` (integers, or floats without NaN: numpy sorts arrays with NaN
/// elsewhere).
pub fn numpy_argsort_avx512<K: PartialOrd + Copy>(keys: &[K]) -> Vec<usize> {
    argsort::<K, 8>(keys, Store::Compress)
}

/// Indices that sort `keys` the way numpy 2.x's `argsort(kind="quicksort")` does on an
/// x86-64 CPU with AVX2 but no AVX-512 (x86-simd-sort's `avx2_argsort`). Keys as for
/// [`numpy_argsort_avx512`].
pub fn numpy_argsort_avx2<K: PartialOrd + Copy>(keys: &[K]) -> Vec<usize> {
    argsort::<K, 4>(keys, Store::PermuteBoth)
}

/// How a partitioned register is written back.
#[derive(Clone, Copy)]
enum Store {
    /// AVX-512 `vpcompressq`: only the selected lanes, packed, in lane order.
    Compress,
    /// AVX2 emulation: the register permuted to `[< lanes, ≥ lanes reversed]`, written
    /// whole at both cursors.
    PermuteBoth,
}

/// Ranges up to this length are sorted by the bitonic network.
const NETWORK_MAX: usize = 256;
/// Registers per partition block.
const UNROLL: usize = 4;

fn argsort<K: PartialOrd + Copy, const L: usize>(keys: &[K], store: Store) -> Vec<usize> {
    let n = keys.len();
    if n < 2 || !keys.windows(2).any(|w| w[1] < w[0]) {
        return (0..n).collect();
    }
    // The kernels move indices and gather keys through them; moving each key with its
    // index is the same data movement without the random reads.
    let mut arg: Vec<(K, usize)> = keys.iter().copied().zip(0..).collect();
    let max_iters = 2 * ((n as f64).log2() as usize);
    let mut sorter = Sorter::<K, L> {
        store,
        net: Vec::with_capacity(NETWORK_MAX),
    };
    sorter.sort(&mut arg, 0, n - 1, max_iters);
    arg.into_iter().map(|(_, i)| i).collect()
}

/// An index with its key.
type Item<K> = (K, usize);

struct Sorter<K, const L: usize> {
    store: Store,
    /// The network's registers when padding is needed; `index == PAD` for padding.
    net: Vec<Item<K>>,
}

const PAD: usize = usize::MAX;

impl<K: PartialOrd + Copy, const L: usize> Sorter<K, L> {
    /// `argsort_`: sorts `arg[left..=right]`.
    fn sort(&mut self, arg: &mut [Item<K>], left: usize, right: usize, max_iters: usize) {
        if max_iters == 0 {
            #[cfg(test)]
            tests::count(&tests::STD_SORTS);
            libstdcxx_sort(&mut arg[left..=right]);
            return;
        }
        if right + 1 - left <= NETWORK_MAX {
            self.network(&mut arg[left..=right]);
            return;
        }
        let pivot = pivot::<K, L>(arg, left, right);
        let pivot_index = self.partition(arg, left, right + 1, pivot);
        // The kernel compares the pivot with the range's smallest and largest keys: the
        // pivot is the smallest exactly when no key went left, the largest exactly when
        // no key on the right exceeds it.
        if pivot_index > left {
            self.sort(arg, left, pivot_index - 1, max_iters - 1);
        }
        if arg[pivot_index..=right].iter().any(|e| pivot < e.0) {
            self.sort(arg, pivot_index, right, max_iters - 1);
        }
    }

    /// `argpartition_unrolled::<4>` on `arg[left..right)` (this is only reached above
    /// 256 keys, past the non-unrolled variant's bound). Returns the first index of the
    /// `≥ pivot` part.
    fn partition(
        &mut self,
        arg: &mut [Item<K>],
        mut left: usize,
        mut right: usize,
        pivot: K,
    ) -> usize {
        let block = UNROLL * L;
        for _ in 0..(right - left) % block {
            if arg[left].0 < pivot {
                left += 1;
            } else {
                right -= 1;
                arg.swap(left, right);
            }
        }
        if left == right {
            return left;
        }
        let first: Vec<Item<K>> = arg[left..left + block].to_vec();
        let last: Vec<Item<K>> = arg[right - block..right].to_vec();
        let mut loaded: Vec<Item<K>> = Vec::with_capacity(block);
        let mut r_store = right - L;
        let mut l_store = left;
        left += block;
        right -= block;
        while right != left {
            let from = if (r_store + L) - right < left - l_store {
                right -= block;
                right
            } else {
                left += block;
                left - block
            };
            loaded.clear();
            loaded.extend_from_slice(&arg[from..from + block]);
            for reg in loaded.chunks_exact(L) {
                let ge = self.store_register(arg, l_store, r_store, reg, pivot);
                l_store += L - ge;
                r_store -= ge;
            }
        }
        for saved in [&first, &last] {
            for reg in saved.chunks_exact(L) {
                let ge = self.store_register(arg, l_store, r_store, reg, pivot);
                l_store += L - ge;
                r_store = r_store.wrapping_sub(ge);
            }
        }
        l_store
    }

    /// `partition_vec`: writes one register's items split by `key < pivot`; returns how
    /// many were `≥ pivot`. `r_store + L` is the end of the right part's free room.
    #[inline(always)]
    fn store_register(
        &self,
        arg: &mut [Item<K>],
        l_store: usize,
        r_store: usize,
        reg: &[Item<K>],
        pivot: K,
    ) -> usize {
        let ng = L - reg.iter().filter(|e| e.0 < pivot).count();
        match self.store {
            Store::Compress => {
                // `< pivot` lanes packed at l_store, `≥` lanes packed to end at r_store + L.
                let (mut l, mut r) = (l_store, r_store.wrapping_add(L) - ng);
                for &e in reg {
                    if e.0 < pivot {
                        arg[l] = e;
                        l += 1;
                    } else {
                        arg[r] = e;
                        r += 1;
                    }
                }
            }
            Store::PermuteBoth => {
                // `[< lanes in order, ≥ lanes last-first]`, stored whole at both cursors.
                let (mut l, mut r) = (l_store, l_store + L);
                for &e in reg {
                    if e.0 < pivot {
                        arg[l] = e;
                        l += 1;
                    } else {
                        r -= 1;
                        arg[r] = e;
                    }
                }
                if r_store != l_store {
                    arg.copy_within(l_store..l_store + L, r_store);
                }
            }
        }
        ng
    }

    /// `argsort_n::<256>`: the bitonic network on `arg` (1 ..= 256 items).
    fn network(&mut self, arg: &mut [Item<K>]) {
        let n = arg.len();
        let mut vecs = NETWORK_MAX / L;
        while vecs > 1 && n * 2 <= vecs * L {
            vecs /= 2;
        }
        if n == vecs * L {
            network_steps::<K, L, false>(arg, vecs);
            return;
        }
        let net = &mut self.net;
        net.clear();
        net.extend_from_slice(arg);
        net.resize(vecs * L, (arg[0].0, PAD));
        network_steps::<K, L, true>(net, vecs);
        arg.copy_from_slice(&net[..n]);
    }
}

/// `get_pivot_64bit`: the middle of `L` evenly spaced samples.
fn pivot<K: PartialOrd + Copy, const L: usize>(arg: &[Item<K>], left: usize, right: usize) -> K {
    let step = (right - left) / L;
    let mut sample = [arg[left].0; L];
    for (k, s) in sample.iter_mut().enumerate() {
        *s = arg[left + (k + 1) * step].0;
    }
    // Any sort gives the same middle value.
    for i in 1..L {
        let mut j = i;
        while j > 0 && sample[j] < sample[j - 1] {
            sample.swap(j, j - 1);
            j -= 1;
        }
    }
    sample[L / 2]
}

/// The whole network on `vecs` registers: sort each, then merge pairs, fours, ….
fn network_steps<K: PartialOrd + Copy, const L: usize, const PADDED: bool>(
    net: &mut [Item<K>],
    vecs: usize,
) {
    let (regs, rest) = net.as_chunks_mut::<L>();
    debug_assert!(rest.is_empty() && regs.len() == vecs);
    for reg in regs.iter_mut() {
        sort_register::<K, L, PADDED>(reg);
    }
    let mut per = 2;
    while per <= vecs {
        for group in regs.chunks_exact_mut(per) {
            merge_registers::<K, L, PADDED>(group);
        }
        per *= 2;
    }
}

/// One compare-exchange: the pair trades places only when `lo`'s key is strictly greater
/// (the kernels keep each lane's own index wherever the min/max result equals its key).
/// Padding sorts after every key.
#[inline(always)]
fn coex<K: PartialOrd + Copy, const PADDED: bool>(lo: &mut Item<K>, hi: &mut Item<K>) {
    let (a, b) = (*lo, *hi);
    let swap = if PADDED {
        b.1 != PAD && (a.1 == PAD || b.0 < a.0)
    } else {
        b.0 < a.0
    };
    *lo = if swap { b } else { a };
    *hi = if swap { a } else { b };
}

/// One in-register step: every lane whose bit in `max_lanes` is clear takes the minimum
/// of itself and lane `i ^ xor` (which takes the maximum).
#[inline(always)]
fn lane_step<K: PartialOrd + Copy, const L: usize, const PADDED: bool>(
    reg: &mut [Item<K>; L],
    xor: usize,
    max_lanes: u32,
) {
    for i in 0..L {
        if max_lanes >> i & 1 == 0 {
            let (mut lo, mut hi) = (reg[i], reg[(i ^ xor) % L]);
            coex::<K, PADDED>(&mut lo, &mut hi);
            reg[i] = lo;
            reg[(i ^ xor) % L] = hi;
        }
    }
}

/// `sort_reg_8lanes` / `sort_reg_4lanes` (key-index versions).
#[inline(always)]
fn sort_register<K: PartialOrd + Copy, const L: usize, const PADDED: bool>(reg: &mut [Item<K>; L]) {
    if L == 8 {
        lane_step::<K, L, PADDED>(reg, 1, 0xAA);
        lane_step::<K, L, PADDED>(reg, 3, 0xCC);
        lane_step::<K, L, PADDED>(reg, 1, 0xAA);
        lane_step::<K, L, PADDED>(reg, 7, 0xF0);
        lane_step::<K, L, PADDED>(reg, 2, 0xCC);
        lane_step::<K, L, PADDED>(reg, 1, 0xAA);
    } else {
        lane_step::<K, L, PADDED>(reg, 1, 0xA);
        lane_step::<K, L, PADDED>(reg, 3, 0xC);
        lane_step::<K, L, PADDED>(reg, 1, 0xA);
    }
}

/// `bitonic_merge_reg_8lanes` / `_4lanes`: half cleaners inside one register.
#[inline(always)]
fn clean_register<K: PartialOrd + Copy, const L: usize, const PADDED: bool>(
    reg: &mut [Item<K>; L],
) {
    if L == 8 {
        lane_step::<K, L, PADDED>(reg, 4, 0xF0);
        lane_step::<K, L, PADDED>(reg, 2, 0xCC);
        lane_step::<K, L, PADDED>(reg, 1, 0xAA);
    } else {
        lane_step::<K, L, PADDED>(reg, 2, 0xC);
        lane_step::<K, L, PADDED>(reg, 1, 0xA);
    }
}

/// `coex` lane by lane between two registers, the second one's lanes read reversed when
/// `REVERSED`.
#[inline(always)]
fn coex_registers<
    K: PartialOrd + Copy,
    const L: usize,
    const PADDED: bool,
    const REVERSED: bool,
>(
    lo: &mut [Item<K>; L],
    hi: &mut [Item<K>; L],
) {
    for (lane, l) in lo.iter_mut().enumerate() {
        let h = if REVERSED { L - 1 - lane } else { lane };
        coex::<K, PADDED>(l, &mut hi[h]);
    }
}

/// `bitonic_merge_n_vec` on a group of registers (two sorted halves).
fn merge_registers<K: PartialOrd + Copy, const L: usize, const PADDED: bool>(
    group: &mut [[Item<K>; L]],
) {
    let per = group.len();
    // Register i against register per-1-i reversed, lane by lane.
    let (low, high) = group.split_at_mut(per / 2);
    for (i, lo) in low.iter_mut().enumerate() {
        coex_registers::<K, L, PADDED, true>(lo, &mut high[per / 2 - 1 - i]);
    }
    // Half cleaners across registers.
    let mut num = per / 2;
    while num >= 2 {
        for chunk in group.chunks_exact_mut(num) {
            let (lo, hi) = chunk.split_at_mut(num / 2);
            for (a, b) in lo.iter_mut().zip(hi) {
                coex_registers::<K, L, PADDED, false>(a, b);
            }
        }
        num /= 2;
    }
    for reg in group.iter_mut() {
        clean_register::<K, L, PADDED>(reg);
    }
}

/// libstdc++'s `std::sort` (introsort: median of three moved to the front, unguarded
/// partition, heapsort past `2·⌊log2 n⌋` levels, then one insertion sort over the whole
/// range with 16-element runs) on items compared by key.
fn libstdcxx_sort<K: PartialOrd + Copy>(a: &mut [Item<K>]) {
    let n = a.len();
    if n < 2 {
        return;
    }
    introsort_loop(a, 2 * (n.ilog2() as usize));
    // __final_insertion_sort
    if n > THRESHOLD {
        insertion_sort(&mut a[..THRESHOLD]);
        for i in THRESHOLD..n {
            unguarded_linear_insert(a, i);
        }
    } else {
        insertion_sort(a);
    }
}

const THRESHOLD: usize = 16;

fn introsort_loop<K: PartialOrd + Copy>(a: &mut [Item<K>], mut depth: usize) {
    let mut last = a.len();
    while last > THRESHOLD {
        if depth == 0 {
            #[cfg(test)]
            tests::count(&tests::HEAP_SORTS);
            heap_sort(&mut a[..last]);
            return;
        }
        depth -= 1;
        let s = &mut a[..last];
        // __move_median_to_first(first, first+1, mid, last-1)
        let (x, y, z) = (1, last / 2, last - 1);
        let m = if s[x].0 < s[y].0 {
            if s[y].0 < s[z].0 {
                y
            } else if s[x].0 < s[z].0 {
                z
            } else {
                x
            }
        } else if s[x].0 < s[z].0 {
            x
        } else if s[y].0 < s[z].0 {
            z
        } else {
            y
        };
        s.swap(0, m);
        // __unguarded_partition(first+1, last, first)
        let pivot = s[0].0;
        let (mut i, mut j) = (1, last);
        loop {
            while s[i].0 < pivot {
                i += 1;
            }
            j -= 1;
            while pivot < s[j].0 {
                j -= 1;
            }
            if i >= j {
                break;
            }
            s.swap(i, j);
            i += 1;
        }
        introsort_loop(&mut s[i..], depth);
        last = i;
    }
}

fn insertion_sort<K: PartialOrd + Copy>(a: &mut [Item<K>]) {
    for i in 1..a.len() {
        if a[i].0 < a[0].0 {
            let v = a[i];
            a.copy_within(0..i, 1);
            a[0] = v;
        } else {
            unguarded_linear_insert(a, i);
        }
    }
}

fn unguarded_linear_insert<K: PartialOrd + Copy>(a: &mut [Item<K>], mut last: usize) {
    let v = a[last];
    while v.0 < a[last - 1].0 {
        a[last] = a[last - 1];
        last -= 1;
    }
    a[last] = v;
}

/// `std::__partial_sort(first, last, last)`: `__make_heap` then `__sort_heap`.
fn heap_sort<K: PartialOrd + Copy>(a: &mut [Item<K>]) {
    let n = a.len();
    if n < 2 {
        return;
    }
    let mut parent = (n - 2) / 2;
    loop {
        let v = a[parent];
        adjust_heap(a, parent, n, v);
        if parent == 0 {
            break;
        }
        parent -= 1;
    }
    let mut last = n;
    while last > 1 {
        last -= 1;
        let v = a[last];
        a[last] = a[0];
        adjust_heap(a, 0, last, v);
    }
}

fn adjust_heap<K: PartialOrd + Copy>(a: &mut [Item<K>], mut hole: usize, len: usize, v: Item<K>) {
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if a[child].0 < a[child - 1].0 {
            child -= 1;
        }
        a[hole] = a[child];
        hole = child;
    }
    if len & 1 == 0 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        a[hole] = a[child - 1];
        hole = child - 1;
    }
    // __push_heap
    let mut parent = hole.wrapping_sub(1) / 2;
    while hole > top && a[parent].0 < v.0 {
        a[hole] = a[parent];
        hole = parent;
        parent = hole.wrapping_sub(1) / 2;
    }
    a[hole] = v;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Ranges handed to the `std::sort` fallback, and heapsorts inside it.
        pub(super) static STD_SORTS: Cell<usize> = const { Cell::new(0) };
        pub(super) static HEAP_SORTS: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn count(counter: &'static std::thread::LocalKey<Cell<usize>>) {
        counter.with(|c| c.set(c.get() + 1));
    }

    mod adversary {
        include!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/adversary.rs"
        ));
    }

    /// McIlroy's adversary against each kernel: it peels a few keys per level until the
    /// depth budget runs out, and then drives the `std::sort` fallback into its heapsort.
    #[test]
    fn adversarial_keys_reach_std_sort_and_its_heapsort() {
        for avx512 in [true, false] {
            let sort = if avx512 {
                numpy_argsort_avx512::<i64>
            } else {
                numpy_argsort_avx2::<i64>
            };
            for (n, tie) in [(1000, 4), (2000, 8), (5000, 1)] {
                let keys = adversary::killer(n, tie, |k| {
                    if avx512 {
                        numpy_argsort_avx512(k)
                    } else {
                        numpy_argsort_avx2(k)
                    }
                });
                STD_SORTS.set(0);
                HEAP_SORTS.set(0);
                let order = sort(&keys);
                assert!(STD_SORTS.get() > 0 && HEAP_SORTS.get() > 0, "n = {n}");
                assert!(order.windows(2).all(|w| keys[w[0]] <= keys[w[1]]));
            }
        }
    }

    /// FNV-1a over the indices: a short fingerprint of a whole permutation.
    fn fingerprint(order: &[usize]) -> u64 {
        order.iter().fold(0xcbf2_9ce4_8422_2325, |h, &i| {
            (h ^ i as u64).wrapping_mul(0x0100_0000_01b3)
        })
    }

    fn cases() -> [Vec<i64>; 3] {
        [
            (0..300).map(|i| i * 7919 % 5).collect(),
            (0..3000).map(|i| i * 7919 % 13).collect(),
            (0..2000)
                .map(|i| if i % 29 == 0 { i % 37 } else { 0 })
                .collect(),
        ]
    }

    /// Fingerprints of numpy 2.4.6's `argsort(kind="quicksort")` on `cases()`, printed on
    /// an AVX-512 (Ice Lake) CPU: as it runs, and with `NPY_DISABLE_CPU_FEATURES=X86_V4`
    /// (the AVX2 kernel). The live comparison is `tests/argsort_matches_numpy.rs`; these
    /// keep a machine without numpy or AVX-512 honest.
    #[test]
    fn permutations_are_numpys() {
        let avx512 = [
            0x24a8_f7dc_be74_058b,
            0xa3f5_92ce_2e3a_12e1,
            0xa6e1_07f0_bbff_ebd1,
        ];
        let avx2 = [
            0xf4ab_a957_e91d_05f3,
            0x6f6e_cd05_8aac_7e7d,
            0xb323_bc77_cb8e_c491,
        ];
        for ((keys, a512), a2) in cases().iter().zip(avx512).zip(avx2) {
            assert_eq!(fingerprint(&numpy_argsort_avx512(keys)), a512);
            assert_eq!(fingerprint(&numpy_argsort_avx2(keys)), a2);
        }
        assert_eq!(
            numpy_argsort_avx512(&cases()[0])[..6],
            [0, 5, 295, 40, 45, 50]
        );
    }

    #[test]
    fn sorts_every_length_and_keeps_sorted_input_as_is() {
        for n in 0..700 {
            let keys: Vec<i64> = (0..n as i64).map(|i| (i * 31 + 7) % 11 - 5).collect();
            for order in [numpy_argsort_avx512(&keys), numpy_argsort_avx2(&keys)] {
                assert!(
                    order.windows(2).all(|w| keys[w[0]] <= keys[w[1]]),
                    "n = {n}"
                );
                let mut seen = order.clone();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>());
            }
        }
        let sorted = [1, 1, 2, 2, 2, 3];
        assert_eq!(numpy_argsort_avx512(&sorted), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn padding_sorts_after_the_largest_key() {
        let keys = [i64::MAX, 3, i64::MAX, 1, 2];
        let order = numpy_argsort_avx512(&keys);
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2, 3, 4]);
        assert_eq!(&order[..3], &[3, 4, 1]);
    }

    #[test]
    fn libstdcxx_sort_sorts_and_its_heapsort_too() {
        let items: Vec<(i64, usize)> = (0..500).map(|i| ((i as i64 * 7919) % 17, i)).collect();
        let mut a = items.clone();
        libstdcxx_sort(&mut a);
        assert!(a.windows(2).all(|w| w[0].0 <= w[1].0));
        let mut h = items.clone();
        heap_sort(&mut h);
        assert!(h.windows(2).all(|w| w[0].0 <= w[1].0));
        let mut seen: Vec<usize> = h.iter().map(|e| e.1).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..500).collect::<Vec<_>>());
    }
}
