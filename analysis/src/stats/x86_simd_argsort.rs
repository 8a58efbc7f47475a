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
//! `avx2-emu-funcs.hpp`); the data movement is reproduced, one lane at a time, not the
//! SIMD instructions. `tests/argsort_matches_numpy.rs` checks both kernels against numpy
//! (2.4.6 when written) permutation for permutation. Older numpy vendored older
//! x86-simd-sort (the sorted-input early exit, for one, is from 2025), whose tie order
//! may differ.
//!
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
//! Keys equal to `i64::MAX` tie with the network's padding; numpy can then write
//! out-of-range indices. Here padding always sorts after real keys instead (the only
//! place this code knowingly departs from numpy; timestamps never reach `i64::MAX`).

/// Indices that sort `keys` the way numpy 2.x's `argsort(kind="quicksort")` does on an
/// x86-64 CPU with AVX-512 (x86-simd-sort's `avx512_argsort`).
pub fn numpy_argsort_avx512(keys: &[i64]) -> Vec<usize> {
    argsort::<8>(keys, Store::Compress)
}

/// Indices that sort `keys` the way numpy 2.x's `argsort(kind="quicksort")` does on an
/// x86-64 CPU with AVX2 but no AVX-512 (x86-simd-sort's `avx2_argsort`).
pub fn numpy_argsort_avx2(keys: &[i64]) -> Vec<usize> {
    argsort::<4>(keys, Store::PermuteBoth)
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

fn argsort<const L: usize>(keys: &[i64], store: Store) -> Vec<usize> {
    let n = keys.len();
    let mut arg: Vec<usize> = (0..n).collect();
    if n < 2 || keys.windows(2).all(|w| w[0] <= w[1]) {
        return arg;
    }
    let max_iters = 2 * ((n as f64).log2() as usize);
    let mut sorter = Sorter::<L> {
        keys,
        store,
        block: [0; 64],
        net: Vec::with_capacity(NETWORK_MAX),
    };
    sorter.sort(&mut arg, 0, n - 1, max_iters);
    arg
}

struct Sorter<'a, const L: usize> {
    keys: &'a [i64],
    store: Store,
    /// One partition block (`UNROLL·L` indices).
    block: [usize; 64],
    /// The network's registers, `(key, index)` per lane; `index == PAD` for padding.
    net: Vec<(i64, usize)>,
}

const PAD: usize = usize::MAX;

impl<const L: usize> Sorter<'_, L> {
    /// `argsort_`: sorts `arg[left..=right]`.
    fn sort(&mut self, arg: &mut [usize], left: usize, right: usize, max_iters: usize) {
        if max_iters == 0 {
            libstdcxx_sort(self.keys, &mut arg[left..=right]);
            return;
        }
        if right + 1 - left <= NETWORK_MAX {
            self.network(&mut arg[left..=right]);
            return;
        }
        let pivot = self.pivot(arg, left, right);
        let (pivot_index, smallest, biggest) = self.partition(arg, left, right + 1, pivot);
        if pivot != smallest {
            self.sort(arg, left, pivot_index - 1, max_iters - 1);
        }
        if pivot != biggest {
            self.sort(arg, pivot_index, right, max_iters - 1);
        }
    }

    /// `get_pivot_64bit`: the middle of `L` evenly spaced samples.
    fn pivot(&self, arg: &[usize], left: usize, right: usize) -> i64 {
        let step = (right - left) / L;
        let mut sample = [0i64; L];
        for (k, s) in sample.iter_mut().enumerate() {
            *s = self.keys[arg[left + (k + 1) * step]];
        }
        sample.sort_unstable();
        sample[L / 2]
    }

    /// `argpartition_unrolled::<4>` on `arg[left..right)` (this is only reached above
    /// 256 keys, past the non-unrolled variant's bound). Returns the first index of the
    /// `≥ pivot` part and the range's smallest and largest keys.
    fn partition(
        &mut self,
        arg: &mut [usize],
        mut left: usize,
        mut right: usize,
        pivot: i64,
    ) -> (usize, i64, i64) {
        let keys = self.keys;
        let block = UNROLL * L;
        let (mut smallest, mut biggest) = (i64::MAX, i64::MIN);
        for _ in 0..(right - left) % block {
            let k = keys[arg[left]];
            smallest = smallest.min(k);
            biggest = biggest.max(k);
            if k < pivot {
                left += 1;
            } else {
                right -= 1;
                arg.swap(left, right);
            }
        }
        if left == right {
            return (left, smallest, biggest);
        }
        for &i in &arg[left..right] {
            let k = keys[i];
            smallest = smallest.min(k);
            biggest = biggest.max(k);
        }
        let mut first = [0usize; 64];
        let mut last = [0usize; 64];
        first[..block].copy_from_slice(&arg[left..left + block]);
        last[..block].copy_from_slice(&arg[right - block..right]);
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
            self.block[..block].copy_from_slice(&arg[from..from + block]);
            for r in 0..UNROLL {
                let reg: [usize; L] = self.block[r * L..(r + 1) * L].try_into().unwrap();
                let ge = self.store_register(arg, l_store, r_store, &reg, pivot);
                l_store += L - ge;
                r_store -= ge;
            }
        }
        for saved in [&first, &last] {
            for r in 0..UNROLL {
                let reg: [usize; L] = saved[r * L..(r + 1) * L].try_into().unwrap();
                let ge = self.store_register(arg, l_store, r_store, &reg, pivot);
                l_store += L - ge;
                r_store = r_store.wrapping_sub(ge);
            }
        }
        (l_store, smallest, biggest)
    }

    /// `partition_vec`: writes one register's indices split by `key < pivot`; returns
    /// how many were `≥ pivot`. `r_store + L` is the end of the right part's free room.
    fn store_register(
        &self,
        arg: &mut [usize],
        l_store: usize,
        r_store: usize,
        reg: &[usize; L],
        pivot: i64,
    ) -> usize {
        let keys = self.keys;
        let ge = reg.iter().filter(|&&i| keys[i] >= pivot).count();
        match self.store {
            Store::Compress => {
                let (mut l, mut r) = (l_store, r_store.wrapping_add(L) - ge);
                for &i in reg {
                    if keys[i] < pivot {
                        arg[l] = i;
                        l += 1;
                    } else {
                        arg[r] = i;
                        r += 1;
                    }
                }
            }
            Store::PermuteBoth => {
                let mut permuted = [0usize; L];
                let (mut l, mut r) = (0, L);
                for &i in reg {
                    if keys[i] < pivot {
                        permuted[l] = i;
                        l += 1;
                    } else {
                        r -= 1;
                        permuted[r] = i;
                    }
                }
                arg[l_store..l_store + L].copy_from_slice(&permuted);
                arg[r_store..r_store + L].copy_from_slice(&permuted);
            }
        }
        ge
    }

    /// `argsort_n::<256>`: the bitonic network on `arg` (1 ..= 256 indices).
    fn network(&mut self, arg: &mut [usize]) {
        let n = arg.len();
        let mut vecs = NETWORK_MAX / L;
        while vecs > 1 && n * 2 <= vecs * L {
            vecs /= 2;
        }
        let keys = self.keys;
        let net = &mut self.net;
        net.clear();
        net.extend(arg.iter().map(|&i| (keys[i], i)));
        net.resize(vecs * L, (i64::MAX, PAD));
        for v in 0..vecs {
            sort_register::<L>(&mut net[v * L..(v + 1) * L]);
        }
        let mut per = 2;
        while per <= vecs {
            for group in net.chunks_exact_mut(per * L) {
                merge_registers::<L>(group, per);
            }
            per *= 2;
        }
        for (a, &(_, i)) in arg.iter_mut().zip(net.iter()) {
            *a = i;
        }
    }
}

/// One compare-exchange: the pair trades places only when `lo`'s key is strictly greater
/// (the kernels keep each lane's own index wherever the min/max result equals its key).
#[inline(always)]
fn coex(net: &mut [(i64, usize)], lo: usize, hi: usize) {
    let (a, b) = (net[lo], net[hi]);
    if a.0 > b.0 || (a.0 == b.0 && a.1 == PAD && b.1 != PAD) {
        net[lo] = b;
        net[hi] = a;
    }
}

/// One in-register step: every lane whose bit in `max_lanes` is clear takes the minimum
/// of itself and lane `i ^ xor` (which takes the maximum).
#[inline(always)]
fn lane_step<const L: usize>(reg: &mut [(i64, usize)], xor: usize, max_lanes: u32) {
    for i in 0..L {
        if max_lanes >> i & 1 == 0 {
            coex(reg, i, i ^ xor);
        }
    }
}

/// `sort_reg_8lanes` / `sort_reg_4lanes` (key-index versions).
fn sort_register<const L: usize>(reg: &mut [(i64, usize)]) {
    if L == 8 {
        lane_step::<L>(reg, 1, 0xAA);
        lane_step::<L>(reg, 3, 0xCC);
        lane_step::<L>(reg, 1, 0xAA);
        lane_step::<L>(reg, 7, 0xF0);
        lane_step::<L>(reg, 2, 0xCC);
        lane_step::<L>(reg, 1, 0xAA);
    } else {
        lane_step::<L>(reg, 1, 0xA);
        lane_step::<L>(reg, 3, 0xC);
        lane_step::<L>(reg, 1, 0xA);
    }
}

/// `bitonic_merge_reg_8lanes` / `_4lanes`: half cleaners inside one register.
fn clean_register<const L: usize>(reg: &mut [(i64, usize)]) {
    if L == 8 {
        lane_step::<L>(reg, 4, 0xF0);
        lane_step::<L>(reg, 2, 0xCC);
        lane_step::<L>(reg, 1, 0xAA);
    } else {
        lane_step::<L>(reg, 2, 0xC);
        lane_step::<L>(reg, 1, 0xA);
    }
}

/// `bitonic_merge_n_vec::<per>` on `per` registers (two sorted halves of `per / 2`).
fn merge_registers<const L: usize>(group: &mut [(i64, usize)], per: usize) {
    // Register i against register per-1-i reversed, lane by lane.
    for i in 0..per / 2 {
        let j = per - 1 - i;
        for lane in 0..L {
            coex(group, i * L + lane, j * L + (L - 1 - lane));
        }
    }
    // Half cleaners across registers.
    let mut num = per / 2;
    while num >= 2 {
        for j in (0..per).step_by(num) {
            for i in 0..num / 2 {
                let (a, b) = ((i + j) * L, (i + j + num / 2) * L);
                for lane in 0..L {
                    coex(group, a + lane, b + lane);
                }
            }
        }
        num /= 2;
    }
    for reg in group.chunks_exact_mut(L) {
        clean_register::<L>(reg);
    }
}

/// libstdc++'s `std::sort` (introsort: median of three moved to the front, unguarded
/// partition, heapsort past `2·⌊log2 n⌋` levels, then one insertion sort over the whole
/// range with 16-element runs) on indices compared by `keys[a] < keys[b]`.
pub(crate) fn libstdcxx_sort(keys: &[i64], a: &mut [usize]) {
    let n = a.len();
    if n < 2 {
        return;
    }
    let less = |x: usize, y: usize| keys[x] < keys[y];
    introsort_loop(keys, a, 2 * (n.ilog2() as usize));
    // __final_insertion_sort
    if n > THRESHOLD {
        insertion_sort(keys, &mut a[..THRESHOLD]);
        for i in THRESHOLD..n {
            unguarded_linear_insert(a, i, &less);
        }
    } else {
        insertion_sort(keys, a);
    }
}

const THRESHOLD: usize = 16;

fn introsort_loop(keys: &[i64], a: &mut [usize], mut depth: usize) {
    let less = |x: usize, y: usize| keys[x] < keys[y];
    let mut last = a.len();
    while last > THRESHOLD {
        if depth == 0 {
            heap_sort(keys, &mut a[..last]);
            return;
        }
        depth -= 1;
        let s = &mut a[..last];
        // __move_median_to_first(first, first+1, mid, last-1)
        let (x, y, z) = (1, last / 2, last - 1);
        let m = if less(s[x], s[y]) {
            if less(s[y], s[z]) {
                y
            } else if less(s[x], s[z]) {
                z
            } else {
                x
            }
        } else if less(s[x], s[z]) {
            x
        } else if less(s[y], s[z]) {
            z
        } else {
            y
        };
        s.swap(0, m);
        // __unguarded_partition(first+1, last, first)
        let pivot = s[0];
        let (mut i, mut j) = (1, last);
        loop {
            while less(s[i], pivot) {
                i += 1;
            }
            j -= 1;
            while less(pivot, s[j]) {
                j -= 1;
            }
            if i >= j {
                break;
            }
            s.swap(i, j);
            i += 1;
        }
        introsort_loop(keys, &mut s[i..], depth);
        last = i;
    }
}

fn insertion_sort(keys: &[i64], a: &mut [usize]) {
    let less = |x: usize, y: usize| keys[x] < keys[y];
    for i in 1..a.len() {
        if less(a[i], a[0]) {
            let v = a[i];
            a.copy_within(0..i, 1);
            a[0] = v;
        } else {
            unguarded_linear_insert(a, i, &less);
        }
    }
}

fn unguarded_linear_insert(a: &mut [usize], mut last: usize, less: &impl Fn(usize, usize) -> bool) {
    let v = a[last];
    while less(v, a[last - 1]) {
        a[last] = a[last - 1];
        last -= 1;
    }
    a[last] = v;
}

/// `std::__partial_sort(first, last, last)`: `__make_heap` then `__sort_heap`.
fn heap_sort(keys: &[i64], a: &mut [usize]) {
    let n = a.len();
    if n < 2 {
        return;
    }
    let mut parent = (n - 2) / 2;
    loop {
        let v = a[parent];
        adjust_heap(keys, a, parent, n, v);
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
        adjust_heap(keys, a, 0, last, v);
    }
}

fn adjust_heap(keys: &[i64], a: &mut [usize], mut hole: usize, len: usize, v: usize) {
    let less = |x: usize, y: usize| keys[x] < keys[y];
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(a[child], a[child - 1]) {
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
    while hole > top && less(a[parent], v) {
        a[hole] = a[parent];
        hole = parent;
        parent = hole.wrapping_sub(1) / 2;
    }
    a[hole] = v;
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let keys: Vec<i64> = (0..500).map(|i| (i * 7919) % 17).collect();
        let mut a: Vec<usize> = (0..500).collect();
        libstdcxx_sort(&keys, &mut a);
        assert!(a.windows(2).all(|w| keys[w[0]] <= keys[w[1]]));
        let mut h: Vec<usize> = (0..500).collect();
        heap_sort(&keys, &mut h);
        assert!(h.windows(2).all(|w| keys[w[0]] <= keys[w[1]]));
        let mut seen = h.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..500).collect::<Vec<_>>());
    }
}
