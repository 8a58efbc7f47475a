//! A two-rank `dist::World` run profiled with `run_profiled`: one trace per rank, each
//! all-reduce one kernel with NCCL-style args (not a kernel plus a duplicate), linked
//! to its host op and launch, with `distributedInfo` for the rank.

mod common;

use neuron_backend::dist::{rank_of_thread, ReduceOp, World, WorldConfig};
use neuron_backend::DType;
use profiler::{RankOf, RunOptions};
use trace_format::Event;

fn cat<'e>(e: &'e Event<'_>) -> &'e str {
    e.category.as_ref().map_or("", |c| c.as_str())
}

#[test]
fn world_collectives_become_nccl_style_kernels() {
    let _serial = common::serial();
    let world = World::new(WorldConfig::new(2)).unwrap();
    let dir = common::temp_dir("world");
    let mut options = RunOptions::new(&dir, 2);
    options.steps = Some(3);
    for r in 0..2 {
        options
            .config
            .devices
            .push(common::device_info(&world.device(r).unwrap()));
    }
    let rank_of = |thread: u32| {
        rank_of_thread(thread).map(|t| RankOf {
            rank: t.rank as u32,
            world_size: t.world_size as u32,
        })
    };
    let run = profiler::run_profiled(&options, rank_of, |prof| {
        world.run(|rank| {
            let x = rank.device().ones(&[256], DType::F32).unwrap();
            // The thread-kept markers, as a per-step callback would use them.
            prof.begin_rank();
            for _ in 0..3 {
                let y = rank.world_group().all_reduce(&x, ReduceOp::Sum).unwrap();
                assert_eq!(y.to_vec_f32().unwrap()[0], 2.0);
                prof.step();
            }
        })
    })
    .unwrap();
    assert_eq!(run.files.len(), 2);
    for (r, path) in run.files.iter().enumerate() {
        let trace = common::read_back(path);
        assert_eq!(trace.meta.rank(), Some(r as i64), "{}", path.display());
        let events = &trace.events;
        let kernels: Vec<&Event<'_>> = events.iter().filter(|e| cat(e) == "kernel").collect();
        let collectives: Vec<&&Event<'_>> = kernels
            .iter()
            .filter(|k| k.arg("Collective name").is_some())
            .collect();
        assert_eq!(collectives.len(), 3, "one kernel per all-reduce");
        let correlations: std::collections::HashSet<i64> = kernels
            .iter()
            .map(|k| k.arg("correlation").and_then(|v| v.as_i64()).unwrap())
            .collect();
        assert_eq!(correlations.len(), kernels.len(), "no duplicated kernels");
        let ids: std::collections::HashSet<i64> = events
            .iter()
            .filter(|e| cat(e) == "cpu_op")
            .map(|e| e.arg("External id").and_then(|v| v.as_i64()).unwrap())
            .collect();
        for (seq, k) in collectives.iter().enumerate() {
            assert!(k.name().starts_with("nccl"), "{}", k.name());
            let arg = |key: &str| k.arg(key).map(|v| format!("{v:?}"));
            assert!(arg("Collective name").unwrap().contains("allreduce"));
            assert!(arg("Process Group Ranks").unwrap().contains("[0, 1]"));
            assert_eq!(k.arg("Group size").and_then(|v| v.as_i64()), Some(2));
            assert_eq!(k.arg("In msg nelems").and_then(|v| v.as_i64()), Some(256));
            assert_eq!(k.arg("Rank").and_then(|v| v.as_i64()), Some(r as i64));
            assert_eq!(k.arg("Seq").and_then(|v| v.as_i64()), Some(seq as i64));
            assert_eq!(k.pid.as_ref().and_then(|p| p.as_i64()), Some(r as i64));
            let external = k.arg("External id").and_then(|v| v.as_i64()).unwrap();
            assert!(ids.contains(&external), "linked to a host op");
        }
        assert_eq!(
            events
                .iter()
                .filter(|e| e.name() == "record_param_comms")
                .count(),
            3
        );
        let steps: Vec<&str> = events
            .iter()
            .filter(|e| e.name().starts_with("ProfilerStep#"))
            .map(|e| e.name())
            .collect();
        assert_eq!(
            steps,
            ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]
        );
        assert_eq!(trace.meta.get("dropped_records").unwrap().as_str(), "0");
        common::assert_tracks_nest(events);
    }
}
