//! Formatting one event the way libkineto's `output_json.cpp` does: its key order per
//! phase (Kineto's JSON as libkineto's `output_json.cpp` writes it) and `ts`/`dur` as
//! microseconds with three decimals.

use crate::event::EventKey as Key;
use crate::event::{Event, Ident, Phase};
use crate::time::write_ns_as_us;
use Key::*;

/// Kineto's key order for each event shape. Keys a shape does not list but an event has
/// anyway are written after these, in the order of [`OTHER`].
const COMPLETE: &[Key] = &[Ph, Cat, Name, Pid, Tid, Ts, Dur, Args];
const INSTANT: &[Key] = &[Ph, Cat, Scope, Name, Pid, Tid, Ts, Args];
const FLOW: &[Key] = &[Ph, Id, Pid, Tid, Ts, Cat, Name, Bp, Args];
const METADATA: &[Key] = &[Ph, Name, Ts, Pid, Tid, Args];
const COUNTER: &[Key] = &[Ph, Cat, Name, Pid, Tid, Ts, Args];
const OTHER: &[Key] = &[Ph, Cat, Name, Pid, Tid, Ts, Dur, Id, Bp, Scope, Args];

/// Appends `event` as one JSON object; `ts` relative to `base_time_ns` when given.
pub(crate) fn write_event(out: &mut Vec<u8>, event: &Event<'_>, base_time_ns: Option<i64>) {
    let order = match event.phase {
        Phase::Complete => COMPLETE,
        Phase::Instant => INSTANT,
        Phase::FlowStart | Phase::FlowStep | Phase::FlowFinish => FLOW,
        Phase::Metadata => METADATA,
        Phase::Counter => COUNTER,
        _ => OTHER,
    };
    out.push(b'{');
    let mut first = true;
    for &key in order {
        write_member(out, event, key, base_time_ns, &mut first);
    }
    // Members the shape's list lacks (a `dur` on an instant, `args` on a flow …).
    for &key in OTHER {
        if !order.contains(&key) {
            write_member(out, event, key, base_time_ns, &mut first);
        }
    }
    for (key, value) in &event.extra {
        sep(out, &mut first);
        write_str(out, key);
        out.extend_from_slice(b": ");
        crate::json::write_spaced(out, value.as_str());
    }
    out.push(b'}');
}

fn sep(out: &mut Vec<u8>, first: &mut bool) {
    if !*first {
        out.extend_from_slice(b", ");
    }
    *first = false;
}

fn write_member(
    out: &mut Vec<u8>,
    event: &Event<'_>,
    key: Key,
    base: Option<i64>,
    first: &mut bool,
) {
    macro_rules! member {
        ($name:literal, $write:expr) => {{
            sep(out, first);
            out.extend_from_slice(concat!("\"", $name, "\": ").as_bytes());
            $write;
        }};
    }
    match key {
        Ph => member!("ph", write_str(out, event.phase.as_str())),
        Cat => {
            if let Some(cat) = &event.category {
                member!("cat", write_str(out, cat.as_str()))
            }
        }
        Name => {
            if let Some(name) = &event.name {
                member!("name", write_str(out, name))
            }
        }
        Pid => {
            if let Some(pid) = &event.pid {
                member!("pid", write_ident(out, pid))
            }
        }
        Tid => {
            if let Some(tid) = &event.tid {
                member!("tid", write_ident(out, tid))
            }
        }
        Ts => {
            if let Some(ts) = event.ts_ns {
                let rel = i128::from(ts) - i128::from(base.unwrap_or(0));
                member!("ts", write_ns_as_us(out, rel))
            }
        }
        Dur => {
            if let Some(dur) = event.dur_ns {
                member!("dur", write_ns_as_us(out, dur.into()))
            }
        }
        Id => {
            if let Some(id) = &event.flow_id {
                member!("id", write_ident(out, id))
            }
        }
        Bp => {
            if let Some(bp) = &event.binding_point {
                member!("bp", write_str(out, bp))
            }
        }
        Scope => {
            if let Some(scope) = &event.scope {
                member!("s", write_str(out, scope))
            }
        }
        Args => {
            if let Some(args) = &event.args {
                member!("args", args.write_json(out))
            }
        }
    }
}

/// Appends a JSON string literal.
pub(crate) fn write_str(out: &mut Vec<u8>, text: &str) {
    let needs_escape = text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
    if needs_escape {
        let _ = serde_json::to_writer(&mut *out, text);
    } else {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    }
}

fn write_ident(out: &mut Vec<u8>, ident: &Ident<'_>) {
    match ident {
        Ident::Num(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Ident::Str(s) => write_str(out, s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::category::Category;
    use crate::event::FlowEnd;

    fn text(event: &Event<'_>, base: Option<i64>) -> String {
        let mut out = Vec::new();
        write_event(&mut out, event, base);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn complete_events_use_kineto_key_order() {
        let e = Event::complete(Category::CpuOp, "aten::mm", 7, 8, 1_000_001_500, 2_250)
            .with_arg("External id", 3i64);
        assert_eq!(
            text(&e, Some(1_000_000_000)),
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 8, "ts": 1.500, "dur": 2.250, "args": {"External id": 3}}"#
        );
    }

    #[test]
    fn flows_and_instants_use_their_orders() {
        let f = Event::flow(FlowEnd::Finish, Category::Ac2g, 5, 0, 7, 2_000);
        assert_eq!(
            text(&f, None),
            r#"{"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 2.000, "cat": "ac2g", "name": "ac2g", "bp": "e"}"#
        );
        let i = Event::instant(None, "Record Window End", "g", "", "", -3);
        assert_eq!(
            text(&i, Some(0)),
            r#"{"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": -0.003}"#
        );
    }
}
