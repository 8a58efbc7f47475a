//! Kineto traces (what `torch.profiler` writes), read and written, streaming.
#![warn(missing_docs)]

mod args;
mod category;
mod error;
mod event;
mod json;
mod meta;
mod reader;
mod sink;
mod time;
mod writer;

pub use args::{ArgValue, Args, ArgsIter};
pub use category::Category;
pub use error::{Location, ReadError};
pub use event::{Event, FlowEnd, Ident, Phase};
pub use json::RawJson;
pub use meta::{
    DeviceProperties, DistributedInfo, MetaEntry, Placement, ProcessGroupConfig, TraceMeta,
};
pub use reader::{read_path, read_path_lenient, ReadOptions, ReadReport, TimeBase, TraceReader};
pub use sink::{from_fn, CollectSink, CountingSink, FnSink, TraceSink};
pub use writer::{Output, TraceWriter, WriteOptions};
