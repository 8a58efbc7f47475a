//! Fuzzes the specialised event decoder (`reader/fast_event.rs`) against serde_json:
//! on arbitrary bytes, whenever the decoder splits an event object, serde_json must
//! accept the same text and split it into the same members and length. (When the
//! decoder declines, the reader hands the text to serde_json, so declining is always
//! safe.) Also run on every event-sized slice the seeds hold.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    trace_format::fuzzing::fast_event_agrees_with_serde_json(data);
    // From every `{` on, as the reader meets events inside a buffer.
    for (at, _) in data.iter().enumerate().filter(|(_, &b)| b == b'{').take(8) {
        trace_format::fuzzing::fast_event_agrees_with_serde_json(&data[at..]);
    }
});
