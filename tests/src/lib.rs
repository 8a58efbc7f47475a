//! Helpers shared by the workspace's end-to-end tests and repository rules.
//!
//! The rules checked here come from `docs/ARCHITECTURE.md` ("Crates and arrows"):
//! which workspace crate may depend on which, and which leaf crates may depend
//! on nothing outside the standard library. [`arrows`] turns `cargo metadata`
//! output into a list of violations; the integration test
//! `tests/crate_dependencies_follow_design_arrows.rs` runs it on this workspace.
#![warn(missing_docs)]

pub mod arrows;
