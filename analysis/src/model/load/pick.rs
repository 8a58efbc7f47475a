//! What the model needs of one event, taken from the event alone ([`pick`]), so a
//! parallel read computes it on the reader's worker threads ([`Picker`]) and
//! [`super::RankSink::add`] only interns and builds rows, in event order.

use trace_format::{ArgValue, Category, Event, EventMapper, EventText, Ident, TextSpan};

use super::super::{CollectiveArgs, HostOpKind, MemoryEvent};
use crate::classify::{is_device_work_category, is_runtime_call_category};

/// [`pick`] with what the header said, shared by a parallel read's worker threads.
pub(super) struct Picker {
    pub(super) base_ns: i64,
    pub(super) host_ops: bool,
}

impl EventMapper for Picker {
    type Item = Picked<'static>;

    fn map(&self, index: u64, event: &Event<'_>) -> Option<Picked<'static>> {
        self.map_in(index, event, EventText::new(&[]))
    }

    fn map_in(
        &self,
        _index: u64,
        event: &Event<'_>,
        text: EventText<'_>,
    ) -> Option<Picked<'static>> {
        Some(pick(event, self.base_ns, self.host_ops).into_owned(text))
    }
}

/// A string of the event: borrowed (a sequential read), a span of the event's text (a
/// parallel read: no copy between the worker and the calling thread), or a copy (when the
/// reader unescaped it, so it is not in the text).
pub(super) enum Text<'a> {
    Borrowed(&'a str),
    Span(TextSpan),
    Owned(String),
}

impl<'a> Text<'a> {
    fn into_owned(self, text: EventText<'_>) -> Text<'static> {
        match self {
            Text::Borrowed(s) => match text.span_of(s) {
                Some(span) => Text::Span(span),
                None => Text::Owned(s.to_owned()),
            },
            Text::Span(span) => Text::Span(span),
            Text::Owned(s) => Text::Owned(s),
        }
    }

    /// The string; `text` is the event's text, as given with the item.
    pub(super) fn get<'s>(&'s self, text: EventText<'s>) -> &'s str {
        match self {
            Text::Borrowed(s) => s,
            // The reader gives the consumer the text it gave the mapper, so the span is in it.
            Text::Span(span) => text.get(*span).unwrap_or_default(),
            Text::Owned(s) => s,
        }
    }
}

/// What [`super::RankSink::add`] needs of one event: everything that depends on the event
/// alone (times, args), so a parallel read computes it on worker threads. Borrows from
/// the event in a sequential read.
// Most events of a trace are complete events: boxing that variant would cost an
// allocation per event to save space on the few others.
#[allow(clippy::large_enum_variant)]
pub(super) enum Picked<'a> {
    /// No `ts` (marks the timestamps as not whole microseconds).
    NoTs,
    /// Neither a memory event nor a kept complete event; `ts` was not whole µs.
    Other { fractional_ts: bool },
    /// A `[memory]` instant.
    Memory {
        fractional_ts: bool,
        event: MemoryEvent,
    },
    /// An event with a category and a duration (not `Trace`).
    Complete(Complete<'a>),
}

/// See [`Picked::Complete`].
pub(super) struct Complete<'a> {
    pub(super) fractional_ts: bool,
    pub(super) ts_rel_ns: i64,
    pub(super) dur_ns: i64,
    /// Known categories are enum variants: no allocation to own them.
    pub(super) category: Category<'a>,
    pub(super) name: Text<'a>,
    pub(super) pid: Option<Ident<'a>>,
    pub(super) tid: Option<Ident<'a>>,
    pub(super) args: PickedArgs,
    /// Host operators only (when kept): whether the normalised category is device work.
    pub(super) device_work: bool,
    /// Host operators only (when kept): `cpu_op`, `user_annotation`, a runtime call or a
    /// Python frame.
    pub(super) host_operator: bool,
    /// Host operators only (when kept): which kind.
    pub(super) kind: HostOpKind,
    /// Host operators only (when kept): the `Input Dims` array's JSON text.
    pub(super) input_dims: Option<Text<'a>>,
    /// Host operators only (when kept): the `Input type`, `Input Strides` and `Concrete
    /// Inputs` arrays' JSON texts (`record_shapes`), when any is present.
    pub(super) shape_args: Option<Box<[Option<Text<'a>>; 3]>>,
}

impl Picked<'_> {
    /// Owns what it borrows from the event, as spans of `text` where it can.
    fn into_owned(self, text: EventText<'_>) -> Picked<'static> {
        match self {
            Picked::NoTs => Picked::NoTs,
            Picked::Other { fractional_ts } => Picked::Other { fractional_ts },
            Picked::Memory {
                fractional_ts,
                event,
            } => Picked::Memory {
                fractional_ts,
                event,
            },
            Picked::Complete(c) => Picked::Complete(Complete {
                fractional_ts: c.fractional_ts,
                ts_rel_ns: c.ts_rel_ns,
                dur_ns: c.dur_ns,
                category: c.category.into_owned(),
                name: c.name.into_owned(text),
                pid: c.pid.map(Ident::into_owned),
                tid: c.tid.map(Ident::into_owned),
                args: c.args,
                device_work: c.device_work,
                host_operator: c.host_operator,
                kind: c.kind,
                input_dims: c.input_dims.map(|dims| dims.into_owned(text)),
                shape_args: c.shape_args.map(|texts| {
                    let [a, b, c] = *texts;
                    let own = |t: Option<Text<'_>>| t.map(|t| t.into_owned(text));
                    Box::new([own(a), own(b), own(c)])
                }),
            }),
        }
    }
}

/// Takes what the model needs from `event`; `base_ns` is the header's time base.
pub(super) fn pick<'a>(event: &'a Event<'_>, base_ns: i64, host_ops: bool) -> Picked<'a> {
    let Some(ts_ns) = event.ts_ns else {
        return Picked::NoTs;
    };
    let ts_rel_ns = ts_ns.saturating_sub(base_ns);
    let fractional_ts = ts_rel_ns % 1000 != 0;
    if event.is_memory_event() {
        let int = |key: &str| event.arg(key).map_or(-1, |v| int_coerce(&v));
        return Picked::Memory {
            fractional_ts,
            event: MemoryEvent {
                ts_rel_ns,
                device_type: int("Device Type"),
                device_id: int("Device Id"),
                addr: int("Addr"),
                bytes: event.arg("Bytes").map_or(0, |v| int_coerce(&v)),
                total_allocated_bytes: int("Total Allocated"),
                total_reserved_bytes: int("Total Reserved"),
            },
        };
    }
    let (Some(category), Some(dur_ns)) = (&event.category, event.dur_ns) else {
        return Picked::Other { fractional_ts };
    };
    if category.as_str() == "Trace" {
        return Picked::Other { fractional_ts };
    }
    let (mut device_work, mut host_operator, mut kind) = (false, false, HostOpKind::Operator);
    if host_ops {
        let normalized = category.normalized();
        device_work = is_device_work_category(normalized.as_str());
        let category = normalized.as_str();
        if is_runtime_call_category(category) {
            kind = HostOpKind::RuntimeCall;
        } else if category == "python_function" {
            kind = HostOpKind::PythonFunction;
        }
        host_operator =
            kind != HostOpKind::Operator || matches!(category, "cpu_op" | "user_annotation");
    }
    let (args, input_dims, shape_args) = PickedArgs::of(event);
    Picked::Complete(Complete {
        fractional_ts,
        ts_rel_ns,
        dur_ns,
        category: category.clone(),
        name: Text::Borrowed(event.name()),
        pid: event.pid.clone(),
        tid: event.tid.clone(),
        args,
        device_work,
        host_operator,
        kind,
        input_dims: input_dims.filter(|_| host_operator).map(Text::Borrowed),
        shape_args: shape_args
            .filter(|_| host_operator)
            .map(|texts| Box::new(texts.map(|t| t.map(Text::Borrowed)))),
    })
}

/// The args a row needs, picked in one pass over `args` instead of one scan per key
/// (with duplicate keys, the first usable value wins).
pub(super) struct PickedArgs {
    pub(super) stream: i64,
    pub(super) correlation: i64,
    pub(super) bytes: i64,
    pub(super) memory_bw_gbps: f64,
    pub(super) flops: Option<i64>,
    pub(super) core: Option<i64>,
    pub(super) engine: Option<String>,
    pub(super) dma_queue: Option<i64>,
    /// `External id` (the first such key, when an integer), -1 when absent.
    pub(super) external_id: i64,
    /// `wait_on_stream` (CUDA `Stream Wait Event`/`Event Sync` rows), -1 when absent.
    pub(super) wait_on_stream: i64,
    /// `wait_on_cuda_event_record_corr_id`, -1 when absent.
    pub(super) wait_on_event_corr: i64,
    /// Args few events have (collectives, engine busy times), boxed: a parallel read
    /// moves every event's picks between threads.
    pub(super) rare: Option<Box<RareArgs>>,
}

/// See [`PickedArgs::rare`].
#[derive(Default)]
pub(super) struct RareArgs {
    pub(super) collective: Option<String>,
    pub(super) process_group: Option<String>,
    pub(super) seq: Option<i64>,
    pub(super) in_nelems: Option<i64>,
    pub(super) out_nelems: Option<i64>,
    pub(super) dtype: Option<String>,
    pub(super) group_size: Option<i64>,
    /// `In split size`, `Out split size` and `Process Group Ranks`, as written (a list
    /// in a string, `"[0, 1]"`, or a JSON array).
    pub(super) lists: [Option<String>; 3],
    pub(super) engine_busy: Vec<(String, i64)>,
    /// A compiled graph's kernel (`python/`): `passes`, `pass_spans_ns` and
    /// `pass_costs`.
    pub(super) passes: Option<String>,
    pub(super) pass_spans: Option<String>,
    pub(super) pass_costs: Option<String>,
}

impl PickedArgs {
    /// The args of `event` in one pass, its `Input Dims` when that is an array (as
    /// `event.arg("Input Dims")`: the first such key), and its `Input type`, `Input
    /// Strides` and `Concrete Inputs` arrays when any is present. Values are decoded only
    /// for the keys taken.
    #[allow(clippy::type_complexity)]
    fn of<'a>(event: &'a Event<'_>) -> (Self, Option<&'a str>, Option<[Option<&'a str>; 3]>) {
        let mut picked = PickedArgs {
            stream: -1,
            correlation: -1,
            bytes: -1,
            memory_bw_gbps: 0.0,
            flops: None,
            core: None,
            engine: None,
            dma_queue: None,
            external_id: -1,
            wait_on_stream: -1,
            wait_on_event_corr: -1,
            rare: None,
        };
        let Some(args) = &event.args else {
            return (picked, None, None);
        };
        let (mut stream, mut correlation, mut bytes, mut bw) = (None, None, None, None);
        let mut external_id: Option<Option<i64>> = None;
        let (mut wait_on_stream, mut wait_on_event_corr) = (None, None);
        let mut input_dims: Option<Option<&'a str>> = None;
        let mut shape_args: [Option<Option<&'a str>>; 3] = [None, None, None];
        for (key, lazy) in args.iter_lazy() {
            let value = || lazy.value();
            let text = || value().as_str().map(str::to_owned);
            match &*key {
                "stream" => set(&mut stream, || Some(int_coerce(&value()))),
                "correlation" => set(&mut correlation, || Some(int_coerce(&value()))),
                "bytes" => set(&mut bytes, || value().as_i64()),
                "memory bandwidth (GB/s)" => set(&mut bw, || value().as_f64()),
                "Collective name" => set(&mut picked.rare().collective, text),
                "Process Group Name" => set(&mut picked.rare().process_group, text),
                "Seq" => set(&mut picked.rare().seq, || Some(int_coerce(&value()))),
                "In msg nelems" => set(&mut picked.rare().in_nelems, || Some(int_coerce(&value()))),
                "Out msg nelems" => {
                    set(&mut picked.rare().out_nelems, || Some(int_coerce(&value())))
                }
                "dtype" => set(&mut picked.rare().dtype, text),
                "In split size" => set(&mut picked.rare().lists[0], || list_text(&lazy)),
                "Out split size" => set(&mut picked.rare().lists[1], || list_text(&lazy)),
                "Process Group Ranks" => set(&mut picked.rare().lists[2], || list_text(&lazy)),
                "passes" => set(&mut picked.rare().passes, text),
                "pass_spans_ns" => set(&mut picked.rare().pass_spans, text),
                "pass_costs" => set(&mut picked.rare().pass_costs, text),
                "Group size" => set(&mut picked.rare().group_size, || Some(int_coerce(&value()))),
                "flops" => set(&mut picked.flops, || {
                    let value = value();
                    value.as_i64().or_else(|| value.as_f64().map(|f| f as i64))
                }),
                "core" => set(&mut picked.core, || value().as_i64()),
                "engine" => set(&mut picked.engine, text),
                "dma queue" => set(&mut picked.dma_queue, || value().as_i64()),
                // As `Event::arg`: the first key, whatever its value.
                "External id" => set(&mut external_id, || Some(value().as_i64())),
                "Input Dims" => set(&mut input_dims, || Some(lazy.array_text())),
                "Input type" => set(&mut shape_args[0], || Some(lazy.array_text())),
                "Input Strides" => set(&mut shape_args[1], || Some(lazy.array_text())),
                "Concrete Inputs" => set(&mut shape_args[2], || Some(lazy.array_text())),
                "wait_on_stream" => set(&mut wait_on_stream, || Some(int_coerce(&value()))),
                "wait_on_cuda_event_record_corr_id" => {
                    set(&mut wait_on_event_corr, || Some(int_coerce(&value())))
                }
                other => {
                    if let Some(engine) = other.strip_suffix(" busy (ns)") {
                        if let Some(ns) = value().as_i64() {
                            picked.rare().engine_busy.push((engine.to_owned(), ns));
                        }
                    }
                }
            }
        }
        picked.stream = stream.unwrap_or(-1);
        picked.correlation = correlation.unwrap_or(-1);
        picked.bytes = bytes.unwrap_or(-1);
        picked.memory_bw_gbps = bw.unwrap_or(0.0);
        picked.external_id = external_id.flatten().unwrap_or(-1);
        picked.wait_on_stream = wait_on_stream.unwrap_or(-1);
        picked.wait_on_event_corr = wait_on_event_corr.unwrap_or(-1);
        let shape_args = shape_args.map(Option::flatten);
        let shape_args = shape_args.iter().any(Option::is_some).then_some(shape_args);
        (picked, input_dims.flatten(), shape_args)
    }

    fn rare(&mut self) -> &mut RareArgs {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The collective's args, or the text of a list arg that is not a list of integers
    /// (`In split size`, `Out split size`, `Process Group Ranks`), named.
    pub(super) fn collective(&self) -> Option<Result<Box<CollectiveArgs>, String>> {
        let rare = self.rare.as_ref()?;
        let collective = rare.collective.clone()?;
        let mut lists: [Vec<i64>; 3] = Default::default();
        let names = ["In split size", "Out split size", "Process Group Ranks"];
        for ((list, text), name) in lists.iter_mut().zip(&rare.lists).zip(names) {
            if let Some(text) = text {
                match serde_json::from_str::<Vec<i64>>(text) {
                    Ok(values) => *list = values,
                    Err(_) => {
                        return Some(Err(format!("`{name}` is not a list of integers: {text}")))
                    }
                }
            }
        }
        let [in_splits, out_splits, group_ranks] = lists;
        Some(Ok(Box::new(CollectiveArgs {
            collective,
            process_group: rare.process_group.clone().unwrap_or_default(),
            seq: rare.seq.filter(|&s| s >= 0),
            in_nelems: rare.in_nelems.unwrap_or(-1),
            out_nelems: rare.out_nelems.unwrap_or(-1),
            dtype: rare.dtype.clone().unwrap_or_default(),
            group_size: rare.group_size.unwrap_or(-1),
            occurrence: 0,
            in_splits,
            out_splits,
            group_ranks,
        })))
    }

    /// A compiled graph kernel's `passes` and `pass_spans_ns`, when it has both, and its
    /// `pass_costs` when it has them.
    pub(super) fn graph_passes(&self) -> Option<(&str, &str, Option<&str>)> {
        let rare = self.rare.as_ref()?;
        Some((
            rare.passes.as_deref()?,
            rare.pass_spans.as_deref()?,
            rare.pass_costs.as_deref(),
        ))
    }

    pub(super) fn engine_busy(&self) -> &[(String, i64)] {
        self.rare.as_ref().map_or(&[], |rare| &rare.engine_busy)
    }
}

/// A list arg's JSON text: the string's content (`"[0, 1]"` as PyTorch writes it), the
/// array itself, or any other value's text (which then fails to read as a list).
fn list_text(lazy: &trace_format::LazyArg<'_>) -> Option<String> {
    if let Some(array) = lazy.array_text() {
        return Some(array.to_owned());
    }
    let value = lazy.value();
    Some(match value.as_str() {
        Some(s) => s.to_owned(),
        None => format!("{value:?}"),
    })
}

/// Sets `slot` from `value` unless an earlier duplicate key already did.
pub(super) fn set<T>(slot: &mut Option<T>, value: impl FnOnce() -> Option<T>) {
    if slot.is_none() {
        *slot = value();
    }
}

/// An arg as an integer the way pandas' `to_numeric(errors="coerce")` then `astype(int)`
/// sees it: numbers truncate, numeric strings parse, anything else is -1.
pub(super) fn int_coerce(value: &ArgValue<'_>) -> i64 {
    match value {
        ArgValue::Str(text) => text.trim().parse::<f64>().map_or(-1, |f| f as i64),
        other => other
            .as_i64()
            .or_else(|| other.as_f64().map(|f| f as i64))
            .unwrap_or(-1),
    }
}
