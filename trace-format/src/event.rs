//! One trace event (an element of `traceEvents`), borrowed from the read buffer or built.

use std::borrow::Cow;
use std::fmt;

use crate::args::{ArgValue, Args};
use crate::category::Category;
use crate::json::RawJson;

/// The members of an event object this crate reads into [`Event`] fields and writes
/// from them (any other key is kept in [`Event::extra`]). The reader's decoder and the
/// writer both go by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKey {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Id,
    Bp,
    Scope,
    Args,
}

impl EventKey {
    /// How many keys there are (`Args` is the last).
    pub(crate) const COUNT: usize = EventKey::Args as usize + 1;

    /// The key spelled by `bytes` (a key's text between its quotes, unescaped).
    pub(crate) fn parse(bytes: &[u8]) -> Option<EventKey> {
        Some(match bytes {
            b"ph" => EventKey::Ph,
            b"cat" => EventKey::Cat,
            b"name" => EventKey::Name,
            b"pid" => EventKey::Pid,
            b"tid" => EventKey::Tid,
            b"ts" => EventKey::Ts,
            b"dur" => EventKey::Dur,
            b"id" => EventKey::Id,
            b"bp" => EventKey::Bp,
            b"s" => EventKey::Scope,
            b"args" => EventKey::Args,
            _ => return None,
        })
    }
}

/// The `ph` (phase) of an event: which shape it has.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Phase<'a> {
    /// `X`: an activity with a duration.
    Complete,
    /// `i`: an instant (`[memory]`, `Record Window End`).
    Instant,
    /// `s`: flow start.
    FlowStart,
    /// `t`: flow step.
    FlowStep,
    /// `f`: flow finish.
    FlowFinish,
    /// `M`: metadata (`process_name`, `thread_name`, sort indices, labels).
    Metadata,
    /// `C`: counter samples.
    Counter,
    /// `B`: duration begin (Chrome format; Kineto does not write it).
    Begin,
    /// `E`: duration end (Chrome format; Kineto does not write it).
    End,
    /// Any other phase, with its spelling.
    Other(Cow<'a, str>),
}

impl<'a> Phase<'a> {
    /// Classifies a `ph` string.
    pub fn parse(text: Cow<'a, str>) -> Self {
        match &*text {
            "X" => Phase::Complete,
            "i" => Phase::Instant,
            "s" => Phase::FlowStart,
            "t" => Phase::FlowStep,
            "f" => Phase::FlowFinish,
            "M" => Phase::Metadata,
            "C" => Phase::Counter,
            "B" => Phase::Begin,
            "E" => Phase::End,
            _ => Phase::Other(text),
        }
    }

    /// The spelling as it appears in the trace.
    pub fn as_str(&self) -> &str {
        match self {
            Phase::Complete => "X",
            Phase::Instant => "i",
            Phase::FlowStart => "s",
            Phase::FlowStep => "t",
            Phase::FlowFinish => "f",
            Phase::Metadata => "M",
            Phase::Counter => "C",
            Phase::Begin => "B",
            Phase::End => "E",
            Phase::Other(text) => text,
        }
    }

    /// Copies a borrowed `Other` spelling.
    pub fn into_owned(self) -> Phase<'static> {
        match self {
            Phase::Other(text) => Phase::Other(Cow::Owned(text.into_owned())),
            known => Phase::parse(Cow::Owned(known.as_str().to_owned())),
        }
    }
}

impl fmt::Display for Phase<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `pid`, `tid` or flow `id`: Kineto writes numbers, but also strings (`"Spans"`, `""`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ident<'a> {
    /// A numeric id.
    Num(i64),
    /// A string id.
    Str(Cow<'a, str>),
}

impl Ident<'_> {
    /// The numeric value, if numeric.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Ident::Num(n) => Some(*n),
            Ident::Str(_) => None,
        }
    }

    /// Copies a borrowed string.
    pub fn into_owned(self) -> Ident<'static> {
        match self {
            Ident::Num(n) => Ident::Num(n),
            Ident::Str(s) => Ident::Str(Cow::Owned(s.into_owned())),
        }
    }
}

impl fmt::Display for Ident<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ident::Num(n) => write!(f, "{n}"),
            Ident::Str(s) => f.write_str(s),
        }
    }
}

impl From<i64> for Ident<'_> {
    fn from(n: i64) -> Self {
        Ident::Num(n)
    }
}

impl<'a> From<&'a str> for Ident<'a> {
    fn from(s: &'a str) -> Self {
        Ident::Str(Cow::Borrowed(s))
    }
}

/// Which end of a flow an `s`/`t`/`f` event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FlowEnd {
    /// `s`: where the arrow starts (a launch, a forward op).
    Start,
    /// `t`: an intermediate step.
    Step,
    /// `f`: where the arrow ends (the device activity, the backward op).
    Finish,
}

/// A Kineto trace event. Fields mirror the JSON keys, with units in names.
///
/// Timestamps are resolved to absolute nanoseconds since the Unix epoch (see the crate docs,
/// "Timestamps"). Fields absent from the JSON are `None`; keys this crate does not model
/// are kept in `extra`, in order, as raw JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Event<'a> {
    /// `ph`.
    pub phase: Phase<'a>,
    /// `cat`; `M` events and global instants have none.
    pub category: Option<Category<'a>>,
    /// `name`.
    pub name: Option<Cow<'a, str>>,
    /// `pid`: OS process id for host events, device index for device events.
    pub pid: Option<Ident<'a>>,
    /// `tid`: thread id for host events, stream / queue id for device events.
    pub tid: Option<Ident<'a>>,
    /// `ts`, as absolute nanoseconds since the Unix epoch.
    pub ts_ns: Option<i64>,
    /// `dur`, in nanoseconds.
    pub dur_ns: Option<i64>,
    /// Flow `id` of `s`/`t`/`f` events (for `ac2g`, the correlation id).
    pub flow_id: Option<Ident<'a>>,
    /// `bp`: flow binding point (`"e"`: bind to the enclosing slice).
    pub binding_point: Option<Cow<'a, str>>,
    /// `s` of instants: scope, `"t"` thread, `"p"` process, `"g"` global.
    pub scope: Option<Cow<'a, str>>,
    /// `args`, when present.
    pub args: Option<Args<'a>>,
    /// Keys not listed above, in input order, with their raw JSON values.
    pub extra: Vec<(Cow<'a, str>, RawJson<'a>)>,
}

impl<'a> Event<'a> {
    /// An event of the given phase with no other field set.
    pub fn new(phase: Phase<'a>) -> Self {
        Event {
            phase,
            category: None,
            name: None,
            pid: None,
            tid: None,
            ts_ns: None,
            dur_ns: None,
            flow_id: None,
            binding_point: None,
            scope: None,
            args: None,
            extra: Vec::new(),
        }
    }

    /// An `X` event.
    pub fn complete(
        category: Category<'a>,
        name: impl Into<Cow<'a, str>>,
        pid: impl Into<Ident<'a>>,
        tid: impl Into<Ident<'a>>,
        ts_ns: i64,
        dur_ns: i64,
    ) -> Self {
        Event {
            category: Some(category),
            name: Some(name.into()),
            pid: Some(pid.into()),
            tid: Some(tid.into()),
            ts_ns: Some(ts_ns),
            dur_ns: Some(dur_ns.max(0)),
            ..Event::new(Phase::Complete)
        }
    }

    /// An `i` event; `scope` is `"t"`, `"p"` or `"g"`.
    pub fn instant(
        category: Option<Category<'a>>,
        name: impl Into<Cow<'a, str>>,
        scope: &'a str,
        pid: impl Into<Ident<'a>>,
        tid: impl Into<Ident<'a>>,
        ts_ns: i64,
    ) -> Self {
        Event {
            category,
            name: Some(name.into()),
            scope: Some(Cow::Borrowed(scope)),
            pid: Some(pid.into()),
            tid: Some(tid.into()),
            ts_ns: Some(ts_ns),
            ..Event::new(Phase::Instant)
        }
    }

    /// A flow `s` or `f` event of category `cat` (its name is the category, as Kineto does);
    /// a finish gets `"bp": "e"`.
    pub fn flow(
        end: FlowEnd,
        category: Category<'a>,
        flow_id: i64,
        pid: impl Into<Ident<'a>>,
        tid: impl Into<Ident<'a>>,
        ts_ns: i64,
    ) -> Self {
        let phase = match end {
            FlowEnd::Start => Phase::FlowStart,
            FlowEnd::Step => Phase::FlowStep,
            FlowEnd::Finish => Phase::FlowFinish,
        };
        Event {
            name: Some(Cow::Owned(category.as_str().to_owned())),
            category: Some(category),
            flow_id: Some(Ident::Num(flow_id)),
            binding_point: (end == FlowEnd::Finish).then_some(Cow::Borrowed("e")),
            pid: Some(pid.into()),
            tid: Some(tid.into()),
            ts_ns: Some(ts_ns),
            ..Event::new(phase)
        }
    }

    /// An `M` event such as `process_name` or `thread_sort_index`.
    pub fn metadata(
        name: impl Into<Cow<'a, str>>,
        pid: impl Into<Ident<'a>>,
        tid: impl Into<Ident<'a>>,
        ts_ns: i64,
        args: Args<'a>,
    ) -> Self {
        Event {
            name: Some(name.into()),
            pid: Some(pid.into()),
            tid: Some(tid.into()),
            ts_ns: Some(ts_ns),
            args: Some(args),
            ..Event::new(Phase::Metadata)
        }
    }

    /// Adds one argument (builder style).
    pub fn with_arg(
        mut self,
        key: impl Into<Cow<'a, str>>,
        value: impl Into<ArgValue<'a>>,
    ) -> Self {
        self.args.get_or_insert_with(Args::new).push(key, value);
        self
    }

    /// The name, or `""` when absent.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// The category after legacy normalisation (`Kernel` → `kernel`, `async` → `ac2g`).
    pub fn normalized_category(&self) -> Option<Category<'a>> {
        self.category.as_ref().map(Category::normalized)
    }

    /// Looks up an argument by key (`correlation`, `Device Type`, `External id`).
    pub fn arg(&self, key: &str) -> Option<ArgValue<'_>> {
        self.args.as_ref()?.get(key)
    }

    /// The end time `ts_ns + dur_ns`, when both are known.
    pub fn end_ns(&self) -> Option<i64> {
        self.ts_ns?.checked_add(self.dur_ns.unwrap_or(0))
    }

    /// For `s`/`t`/`f` events: which end of a flow this is.
    pub fn flow_end(&self) -> Option<FlowEnd> {
        match self.phase {
            Phase::FlowStart => Some(FlowEnd::Start),
            Phase::FlowStep => Some(FlowEnd::Step),
            Phase::FlowFinish => Some(FlowEnd::Finish),
            _ => None,
        }
    }

    /// For `s`/`t`/`f` events: the flow's kind, normalised (`ac2g`, `fwdbwd`), from `cat`
    /// or, when `cat` is absent, from `name` (Kineto writes both the same; legacy traces
    /// use `async` / `async_cpu_to_gpu`, which become `ac2g`).
    pub fn flow_category(&self) -> Option<Category<'a>> {
        self.flow_end()?;
        match &self.category {
            Some(category) => Some(category.normalized()),
            None => Some(Category::parse(self.name.clone()?).normalized()),
        }
    }

    /// Whether this is `[memory]` instant (Kineto's memory allocation/free record).
    pub fn is_memory_event(&self) -> bool {
        self.phase == Phase::Instant && self.name() == "[memory]"
    }

    /// Whether this is the `Record Window End` global instant Kineto writes last.
    pub fn is_record_window_end(&self) -> bool {
        self.phase == Phase::Instant && self.name() == "Record Window End"
    }

    /// Copies all borrowed text, so the event can outlive the sink callback.
    pub fn into_owned(self) -> Event<'static> {
        let own = |c: Cow<'a, str>| Cow::Owned(c.into_owned());
        Event {
            phase: self.phase.into_owned(),
            category: self.category.map(Category::into_owned),
            name: self.name.map(own),
            pid: self.pid.map(Ident::into_owned),
            tid: self.tid.map(Ident::into_owned),
            ts_ns: self.ts_ns,
            dur_ns: self.dur_ns,
            flow_id: self.flow_id.map(Ident::into_owned),
            binding_point: self.binding_point.map(own),
            scope: self.scope.map(own),
            args: self.args.map(Args::into_owned),
            extra: self
                .extra
                .into_iter()
                .map(|(k, v)| (own(k), v.into_owned()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_fill_kineto_fields() {
        let e =
            Event::complete(Category::Kernel, "k", 0, 7, 1_000, -5).with_arg("correlation", 9i64);
        assert_eq!(
            e.dur_ns,
            Some(0),
            "negative durations clamp to 0 as Kineto does"
        );
        assert_eq!(e.arg("correlation").and_then(|v| v.as_i64()), Some(9));
        let f = Event::flow(FlowEnd::Finish, Category::Ac2g, 9, 0, 7, 1_000);
        assert_eq!(f.flow_end(), Some(FlowEnd::Finish));
        assert_eq!(f.binding_point.as_deref(), Some("e"));
        assert_eq!(f.name(), "ac2g");
        let owned = f.clone().into_owned();
        assert_eq!(owned, f);
        assert_eq!(f.flow_category(), Some(Category::Ac2g));
        let mut legacy = Event::flow(FlowEnd::Start, Category::LegacyAsync, 1, 0, 0, 0);
        assert_eq!(legacy.flow_category(), Some(Category::Ac2g));
        legacy.category = None;
        legacy.name = Some("async_cpu_to_gpu".into());
        assert_eq!(legacy.flow_category(), Some(Category::Ac2g));
        assert_eq!(e.flow_category(), None);
    }

    #[test]
    fn phases_round_trip_their_spelling() {
        for text in ["X", "i", "s", "t", "f", "M", "C", "B", "E", "b", "weird"] {
            assert_eq!(Phase::parse(Cow::Borrowed(text)).as_str(), text);
        }
    }
}
