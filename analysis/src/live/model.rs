//! The typed neuron-monitor document: defined once in the `monitor-schema` crate, which
//! the publisher (`neuron-backend::monitor`) writes with too.

pub use monitor_schema::*;
