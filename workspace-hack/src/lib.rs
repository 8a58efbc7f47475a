//! No code: a dependency of `neuronprof` (the `cli` package) whose only job is to turn
//! on, in the dependencies it shares with the workspace's other members, the union of
//! the features the members ask of them.
//!
//! Cargo unifies a dependency's features over the packages being built. Built alone
//! (`cargo run --release -p neuronprof`, the README's first command, or `cargo install
//! --path cli`), `neuronprof` would get `ahash` without `std` and `log` without `std`;
//! built with the viewer (`cargo build --workspace`), both get them from egui and winit.
//! A change in a crate's features changes its build hash and every crate's above it, so
//! the second build would compile Arrow, Parquet and DataFusion again (issue #37
//! measured it). Depending on this crate, `neuronprof` asks for the workspace's features,
//! and each dependency is compiled once. (`neuron-top` and the viewer built alone still
//! get a lighter Parquet than the workspace's: DataFusion, which they do not link, asks
//! it for codecs and an async reader; see the test.)
//!
//! The list is in `Cargo.toml`; `tests/tests/one_feature_set_per_dependency.rs` compares
//! `cargo tree`'s feature sets of `neuronprof` built alone with the workspace's
//! and names any dependency that differs, so the list cannot fall behind unnoticed.

#![warn(missing_docs)]
