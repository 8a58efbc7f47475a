use super::*;

const GIB: u64 = 1024 * MIB;

#[test]
fn size_classes_round_up_with_a_256_byte_minimum() {
    assert_eq!(size_class(1), 256);
    assert_eq!(size_class(256), 256);
    assert_eq!(size_class(257), 512);
    assert_eq!(size_class(1000), 1024);
    assert_eq!(size_class(1025), 1280);
    assert_eq!(size_class(5 * MIB + 1), 6 * MIB);
    assert_eq!(size_class(16 * MIB + 1), 18 * MIB);
    for request in [1u64, 300, 4097, 70_000, 3 * MIB, 15 * MIB + 7] {
        let class = size_class(request);
        assert!(
            class >= request && class.is_multiple_of(256),
            "{request} -> {class}"
        );
        assert!(class - request <= request / 4 + 256, "{request} -> {class}");
    }
}

#[test]
fn small_blocks_share_a_segment_and_are_reused() {
    let mut alloc = Allocator::new(0, GIB);
    let (a, a_bytes) = alloc.allocate(1000, MemoryCategory::Activations).unwrap();
    let (b, _) = alloc.allocate(1000, MemoryCategory::Activations).unwrap();
    assert_eq!(a_bytes, 1024);
    assert_eq!(b, a + 1024, "second block split from the same segment");
    let stats = alloc.stats();
    assert_eq!(stats.segments, 1);
    assert_eq!(stats.reserved_bytes, SMALL_SEGMENT_BYTES);
    assert_eq!(stats.allocated_bytes, 2048);
    alloc.free(a);
    let (c, _) = alloc.allocate(900, MemoryCategory::Other).unwrap();
    assert_eq!(c, a, "freed block reused");
    assert_eq!(alloc.stats().num_frees, 1);
}

#[test]
fn large_blocks_come_from_their_own_segments_and_merge_back() {
    let mut alloc = Allocator::new(1, GIB);
    let (a, _) = alloc.allocate(2 * MIB, MemoryCategory::Parameters).unwrap();
    let (b, _) = alloc.allocate(3 * MIB, MemoryCategory::Parameters).unwrap();
    assert_eq!(alloc.stats().segments, 1, "both from one 20 MiB segment");
    assert_eq!(alloc.stats().reserved_bytes, MEDIUM_SEGMENT_BYTES);
    let (big, big_bytes) = alloc.allocate(40 * MIB, MemoryCategory::Gradients).unwrap();
    assert_eq!(big_bytes, 40 * MIB);
    assert_eq!(alloc.stats().segments, 2);
    alloc.free(a);
    alloc.free(b);
    alloc.free(big);
    assert_eq!(alloc.stats().allocated_bytes, 0);
    assert_eq!(
        alloc.stats().reserved_bytes,
        60 * MIB,
        "cached until empty_cache"
    );
    assert_eq!(alloc.empty_cache(), 60 * MIB);
    assert_eq!(alloc.stats().reserved_bytes, 0);
    assert_eq!(alloc.stats().peak_allocated_bytes, 45 * MIB);
    assert_eq!(
        alloc
            .stats()
            .category(MemoryCategory::Parameters)
            .peak_bytes,
        5 * MIB
    );
}

#[test]
fn out_of_memory_is_an_error_and_the_device_stays_usable() {
    let mut alloc = Allocator::new(2, 100 * MIB);
    let (a, _) = alloc
        .allocate(60 * MIB, MemoryCategory::Parameters)
        .unwrap();
    let (_b, _) = alloc
        .allocate(30 * MIB, MemoryCategory::Activations)
        .unwrap();
    let err = alloc.allocate(20 * MIB, MemoryCategory::Other).unwrap_err();
    let BackendError::OutOfMemory {
        device,
        requested_bytes,
        free_bytes,
        reserved_bytes,
        capacity_bytes,
        largest_categories,
        ..
    } = err.clone()
    else {
        panic!("{err}");
    };
    assert_eq!(device, "neuron:2");
    assert_eq!(requested_bytes, 20 * MIB);
    assert_eq!(reserved_bytes, 90 * MIB);
    assert_eq!(free_bytes, 10 * MIB);
    assert_eq!(capacity_bytes, 100 * MIB);
    assert_eq!(largest_categories[0], ("parameters".to_string(), 60 * MIB));
    let text = err.to_string();
    assert!(
        text.contains("out of memory") && text.contains("parameters"),
        "{text}"
    );
    assert_eq!(alloc.stats().num_ooms, 1);
    // Free and retry: the cached 60 MiB segment is released to make room.
    alloc.free(a);
    alloc.allocate(20 * MIB, MemoryCategory::Other).unwrap();
}

#[test]
fn freeing_twice_or_unknown_addresses_changes_nothing() {
    let mut alloc = Allocator::new(0, GIB);
    let (a, _) = alloc.allocate(4096, MemoryCategory::Other).unwrap();
    alloc.free(a);
    let before = alloc.stats();
    alloc.free(a);
    alloc.free(12345);
    assert_eq!(alloc.stats(), before);
}

#[test]
fn an_unsplit_block_is_counted_whole_on_allocate_and_free() {
    let mut alloc = Allocator::new(0, GIB);
    // 1.5 MiB + 1.5 MiB + 16 MiB leave 1 MiB of a 20 MiB segment, too little to split
    // off, so the third block holds 17 MiB; freeing the middle leaves a 1.5 MiB hole that
    // a 1.25 MiB request takes whole (its 0.25 MiB rest is not worth a large block).
    let (_a, _) = alloc.allocate(3 * MIB / 2, MemoryCategory::Other).unwrap();
    let (b, _) = alloc.allocate(3 * MIB / 2, MemoryCategory::Other).unwrap();
    let (_c, c_bytes) = alloc.allocate(15 * MIB + 1, MemoryCategory::Other).unwrap();
    assert_eq!(c_bytes, 17 * MIB);
    alloc.free(b);
    let (d, d_bytes) = alloc
        .allocate(5 * MIB / 4, MemoryCategory::Gradients)
        .unwrap();
    assert_eq!(d, b);
    assert_eq!(d_bytes, 3 * MIB / 2);
    assert_eq!(
        alloc
            .stats()
            .category(MemoryCategory::Gradients)
            .allocated_bytes,
        3 * MIB / 2
    );
    alloc.free(d);
    assert_eq!(
        alloc
            .stats()
            .category(MemoryCategory::Gradients)
            .allocated_bytes,
        0
    );
}

#[test]
fn resetting_peaks_and_counts_keeps_the_current_totals() {
    let mut alloc = Allocator::new(1, GIB);
    let (a, _) = alloc
        .allocate(40 * MIB, MemoryCategory::Activations)
        .unwrap();
    let (b, _) = alloc.allocate(2 * MIB, MemoryCategory::Parameters).unwrap();
    alloc.free(a);
    let before = alloc.stats();
    assert_eq!(before.peak_allocated_bytes, 42 * MIB);
    alloc.reset_peak_stats();
    let after = alloc.stats();
    assert_eq!(
        after.peak_allocated_bytes,
        2 * MIB,
        "the peak is the current value"
    );
    assert_eq!(after.peak_reserved_bytes, after.reserved_bytes);
    assert_eq!(after.category(MemoryCategory::Activations).peak_bytes, 0);
    assert_eq!(
        after.category(MemoryCategory::Parameters).peak_bytes,
        2 * MIB
    );
    assert_eq!((after.num_allocs, after.num_frees), (2, 1), "counts kept");
    alloc.reset_accumulated_stats();
    let counts = alloc.stats();
    assert_eq!(
        (counts.num_allocs, counts.num_frees, counts.num_ooms),
        (0, 0, 0)
    );
    assert_eq!(counts.allocated_bytes, 2 * MIB, "totals kept");
    alloc.free(b);
    assert_eq!(alloc.stats().num_frees, 1);
}

/// The statistic arrays' invariants after any sequence: the aggregate is the sum of the
/// pools, and each current value is what was added less what was removed.
fn check_consistent(stats: &MemoryStats) {
    let p = &stats.pools;
    for (name, array) in [
        ("allocation", p.allocation),
        ("segment", p.segment),
        ("active", p.active),
        ("inactive_split", p.inactive_split),
        ("allocated_bytes", p.allocated_bytes),
        ("reserved_bytes", p.reserved_bytes),
        ("active_bytes", p.active_bytes),
        ("inactive_split_bytes", p.inactive_split_bytes),
        ("requested_bytes", p.requested_bytes),
    ] {
        assert_eq!(
            array[0].current,
            array[1].current + array[2].current,
            "{name}: all = small + large"
        );
        for stat in array {
            assert!(stat.peak >= stat.current, "{name}: {stat:?}");
        }
    }
    assert_eq!(p.allocated_bytes[0].current, stats.allocated_bytes);
    assert_eq!(p.reserved_bytes[0].current, stats.reserved_bytes);
    assert_eq!(p.segment[0].current, stats.segments);
    assert_eq!(p.allocation[0].current, stats.active_blocks);
}

#[test]
fn pool_statistics_count_blocks_bytes_and_segments_per_pool() {
    let mut alloc = Allocator::new(0, GIB);
    let (a, a_bytes) = alloc.allocate(1000, MemoryCategory::Other).unwrap();
    let (b, b_bytes) = alloc.allocate(3 * MIB, MemoryCategory::Other).unwrap();
    let s = alloc.stats();
    check_consistent(&s);
    let p = &s.pools;
    assert_eq!((a_bytes, b_bytes), (1024, 3 * MIB));
    assert_eq!(p.allocation[SMALL_POOL_STAT].current, 1);
    assert_eq!(p.allocation[LARGE_POOL_STAT].current, 1);
    assert_eq!(p.allocated_bytes[SMALL_POOL_STAT].current, 1024);
    assert_eq!(p.allocated_bytes[LARGE_POOL_STAT].current, 3 * MIB);
    assert_eq!(p.requested_bytes[0].current, 1000 + 3 * MIB);
    assert_eq!(
        p.reserved_bytes[SMALL_POOL_STAT].current,
        SMALL_SEGMENT_BYTES
    );
    assert_eq!(
        p.reserved_bytes[LARGE_POOL_STAT].current,
        MEDIUM_SEGMENT_BYTES
    );
    // Both segments are split: the rest of each is an inactive split block.
    assert_eq!(p.inactive_split[0].current, 2);
    assert_eq!(
        p.inactive_split_bytes[0].current,
        SMALL_SEGMENT_BYTES - 1024 + MEDIUM_SEGMENT_BYTES - 3 * MIB
    );
    assert_eq!(s.num_device_alloc, 2);
    alloc.free(a);
    alloc.free(b);
    let s = alloc.stats();
    check_consistent(&s);
    let p = &s.pools;
    assert_eq!(p.allocation[0].current, 0);
    assert_eq!(p.allocation[0].allocated, 2);
    assert_eq!(p.allocation[0].freed, 2);
    assert_eq!(p.allocated_bytes[0].allocated, 1024 + 3 * MIB);
    assert_eq!(p.allocated_bytes[0].freed, 1024 + 3 * MIB);
    assert_eq!(p.allocated_bytes[0].peak, 1024 + 3 * MIB);
    assert_eq!(p.requested_bytes[0].current, 0);
    assert_eq!(
        (
            p.inactive_split[0].current,
            p.inactive_split_bytes[0].current
        ),
        (0, 0),
        "merged back into whole free segments"
    );
    assert_eq!(
        alloc.empty_cache(),
        SMALL_SEGMENT_BYTES + MEDIUM_SEGMENT_BYTES
    );
    let s = alloc.stats();
    check_consistent(&s);
    assert_eq!(s.pools.segment[0].freed, 2);
    assert_eq!(s.pools.reserved_bytes[0].current, 0);
    assert_eq!(s.num_device_free, 2);
    alloc.reset_accumulated_stats();
    alloc.reset_peak_stats();
    let s = alloc.stats();
    assert_eq!(s.pools.allocated_bytes[0], Stat::default());
    assert_eq!(s.num_device_alloc, 0);
}

#[test]
fn blocks_are_reused_only_by_their_own_stream() {
    let mut alloc = Allocator::new(0, GIB);
    let (a, _) = alloc.allocate_on(4096, MemoryCategory::Other, 0).unwrap();
    alloc.free(a);
    let (b, _) = alloc.allocate_on(4096, MemoryCategory::Other, 6).unwrap();
    assert_ne!(b, a, "stream 6 does not take stream 0's block");
    assert_eq!(
        alloc.stats().segments,
        2,
        "stream 6 reserved a segment of its own"
    );
    let (c, _) = alloc.allocate_on(4096, MemoryCategory::Other, 0).unwrap();
    assert_eq!(c, a, "stream 0 reuses its own block at once");
    alloc.free(b);
    let (d, _) = alloc.allocate_on(4096, MemoryCategory::Other, 6).unwrap();
    assert_eq!(d, b);
    check_consistent(&alloc.stats());
}

#[test]
fn a_block_freed_while_another_stream_uses_it_waits_for_that_stream() {
    let mut alloc = Allocator::new(0, GIB);
    let (a, bytes) = alloc.allocate_on(4096, MemoryCategory::Other, 0).unwrap();
    alloc.free_pending(a, 1_000);
    let s = alloc.stats();
    check_consistent(&s);
    assert_eq!(s.allocated_bytes, 0, "no longer allocated");
    assert_eq!(s.pools.active_bytes[0].current, bytes, "still active");
    assert_eq!(s.pools.requested_bytes[0].current, 4096);
    let (b, _) = alloc.allocate_on(4096, MemoryCategory::Other, 0).unwrap();
    assert_ne!(b, a, "not reused before the stream passes the free");
    assert_eq!(alloc.release_completed(999), 0);
    assert_eq!(alloc.latest_pending_ns(), Some(1_000));
    assert_eq!(alloc.release_completed(1_000), 1);
    assert_eq!(alloc.latest_pending_ns(), None);
    assert_eq!(alloc.stats().pools.active_bytes[0].current, bytes);
    let (c, _) = alloc.allocate_on(4096, MemoryCategory::Other, 0).unwrap();
    assert_eq!(c, a, "reused once the stream passed it");
    // Freeing a pending block again changes nothing.
    alloc.free_pending(b, 5);
    let before = alloc.stats();
    alloc.free(b);
    alloc.free_pending(b, 7);
    assert_eq!(alloc.stats(), before);
    check_consistent(&before);
}

#[test]
fn blocks_list_every_segment_block_with_its_state() {
    let mut alloc = Allocator::new(0, GIB);
    let (a, _) = alloc.allocate_on(1000, MemoryCategory::Other, 3).unwrap();
    let (b, _) = alloc.allocate_on(1000, MemoryCategory::Other, 3).unwrap();
    alloc.free_pending(b, 10);
    let blocks = alloc.blocks();
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    assert_eq!(
        (blocks[0].addr, blocks[0].state),
        (a, BlockState::Allocated)
    );
    assert_eq!(blocks[0].requested_bytes, 1000);
    assert_eq!(
        (blocks[1].addr, blocks[1].state),
        (b, BlockState::PendingFree)
    );
    assert_eq!(blocks[2].state, BlockState::Free);
    assert!(blocks.iter().all(|x| x.stream == 3 && x.small_pool));
    assert_eq!(
        blocks.iter().map(|x| x.bytes).sum::<u64>(),
        blocks[0].segment_bytes,
        "the blocks tile the segment"
    );
}
