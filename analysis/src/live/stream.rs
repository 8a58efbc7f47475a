//! Parsing one document, and reading a stream of them (neuron-monitor writes one JSON
//! document per line; we also accept documents concatenated or pretty-printed).
//!
//! Framing: the reader finds each top-level object by counting braces outside strings,
//! then parses it with serde. A malformed document is reported
//! ([`LiveError::Parse`] with its index in the stream and the byte offset of the fault)
//! and the reader goes on with the next one, so a monitor survives a bad line.
//! Resynchronization: text that does not start with `{` is skipped up to the end of its
//! line; a line that starts with `{` in column 0 while an object is still open ends the
//! open (truncated) object — compact output (one document per line) never has a nested
//! brace in column 0, and indented output only as an array element (after `[` or `,`),
//! which is left alone; a raw newline inside a string (never valid JSON) ends the
//! document too.

use std::io::Read;

use super::error::LiveError;
use super::model::MonitorDocument;

/// Largest document the stream reader buffers before giving up on it (64 MiB).
pub const MAX_DOCUMENT_BYTES: usize = 64 << 20;

/// Parses one neuron-monitor document.
pub fn parse_document(text: &str) -> Result<MonitorDocument, LiveError> {
    parse_bytes(text.as_bytes(), 0, 0)
}

/// Parses one document found at `base_offset` of a stream, as document `document`.
fn parse_bytes(
    bytes: &[u8],
    document: u64,
    base_offset: u64,
) -> Result<MonitorDocument, LiveError> {
    serde_json::from_slice(bytes).map_err(|e| LiveError::Parse {
        document,
        byte_offset: base_offset + offset_of(bytes, e.line(), e.column()) as u64,
        message: e.to_string(),
    })
}

/// Byte offset of serde_json's 1-based line and column: the last byte it read when it
/// found the fault.
fn offset_of(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match memchr_newline(&bytes[start..]) {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    (start + column.saturating_sub(1)).min(bytes.len())
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// Reads neuron-monitor documents from a byte stream, one at a time.
///
/// As an iterator it yields each document or the error that stood in its place; errors
/// for which [`LiveError::is_recoverable`] holds are followed by the next documents.
#[derive(Debug)]
pub struct DocumentReader<R> {
    input: R,
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base_offset: u64,
    /// Index the next document (or error) gets.
    next_index: u64,
    eof: bool,
    failed: bool,
    limit_bytes: usize,
    scan: Scan,
}

/// Where the framer stopped in the current object (so it never rescans bytes).
#[derive(Debug, Default, Clone, Copy)]
struct Scan {
    pos: usize,
    depth: u32,
    in_string: bool,
    escape: bool,
    /// The last byte outside strings that is not whitespace.
    last_token: u8,
}

enum Framed {
    /// Object `buf[..end]`.
    Complete(usize),
    /// Object cut short; the next document starts at `buf[next]`.
    Truncated {
        next: usize,
        at: usize,
        why: &'static str,
    },
    NeedMore,
}

impl<R: Read> DocumentReader<R> {
    /// A reader over `input`.
    pub fn new(input: R) -> Self {
        DocumentReader {
            input,
            buf: Vec::new(),
            base_offset: 0,
            next_index: 0,
            eof: false,
            failed: false,
            limit_bytes: MAX_DOCUMENT_BYTES,
            scan: Scan::default(),
        }
    }

    /// Sets the largest document accepted (default [`MAX_DOCUMENT_BYTES`]).
    pub fn with_limit(mut self, limit_bytes: usize) -> Self {
        self.limit_bytes = limit_bytes.max(2);
        self
    }

    /// Documents (and errors in their place) yielded so far.
    pub fn documents_read(&self) -> u64 {
        self.next_index
    }

    /// Bytes of the stream consumed so far.
    pub fn byte_offset(&self) -> u64 {
        self.base_offset
    }

    fn fill(&mut self) -> Result<(), LiveError> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.input.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(LiveError::Io {
                        byte_offset: self.base_offset + self.buf.len() as u64,
                        source,
                    })
                }
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.buf.drain(..n);
        self.base_offset += n as u64;
        self.scan = Scan::default();
    }

    /// Scans the object starting at `buf[0]` (a `{`).
    fn frame(&mut self) -> Framed {
        let s = &mut self.scan;
        let buf = &self.buf;
        while s.pos < buf.len() {
            let b = buf[s.pos];
            if s.in_string {
                if s.escape {
                    s.escape = false;
                } else if b == b'\\' {
                    s.escape = true;
                } else if b == b'"' {
                    s.in_string = false;
                } else if b == b'\n' {
                    let at = s.pos;
                    return Framed::Truncated {
                        next: at + 1,
                        at,
                        why: "line break inside a string (document cut short?)",
                    };
                }
            } else {
                let previous = s.last_token;
                if !b.is_ascii_whitespace() {
                    s.last_token = b;
                }
                match b {
                    b'"' => s.in_string = true,
                    b'{' | b'[' => {
                        // A `{` in column 0 while an object is open starts a new document,
                        // unless it can be an array element (after `[` or `,`, as
                        // `json.dumps(indent=0)` writes them).
                        if b == b'{'
                            && s.pos > 0
                            && buf[s.pos - 1] == b'\n'
                            && s.depth > 0
                            && !matches!(previous, b'[' | b',')
                        {
                            let at = s.pos;
                            return Framed::Truncated {
                                next: at,
                                at,
                                why: "a new document starts before this one closed",
                            };
                        }
                        s.depth += 1;
                    }
                    b'}' | b']' => {
                        s.depth = s.depth.saturating_sub(1);
                        if s.depth == 0 {
                            return Framed::Complete(s.pos + 1);
                        }
                    }
                    _ => {}
                }
            }
            s.pos += 1;
        }
        Framed::NeedMore
    }

    fn next_document(&mut self) -> Option<Result<MonitorDocument, LiveError>> {
        loop {
            // A UTF-8 byte-order mark at the start of the stream (some Windows tools
            // write one) is not part of the first document.
            if self.base_offset == 0 && self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.consume(3);
            }
            // Skip whitespace between documents.
            let ws = self
                .buf
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(self.buf.len());
            if ws > 0 {
                self.consume(ws);
            }
            if self.buf.is_empty() {
                if self.eof {
                    return None;
                }
                if let Err(e) = self.fill() {
                    self.failed = true;
                    return Some(Err(e));
                }
                continue;
            }
            let document = self.next_index;
            let start = self.base_offset;
            if self.buf[0] != b'{' {
                // Not a document: report and skip the rest of the line.
                let Some(nl) = memchr_newline(&self.buf) else {
                    if !self.eof && self.buf.len() < self.limit_bytes {
                        if let Err(e) = self.fill() {
                            self.failed = true;
                            return Some(Err(e));
                        }
                        continue;
                    }
                    let n = self.buf.len();
                    let snippet = snippet(&self.buf[..n]);
                    self.consume(n);
                    self.next_index += 1;
                    return Some(Err(not_an_object(document, start, &snippet)));
                };
                let snippet = snippet(&self.buf[..nl]);
                self.consume(nl + 1);
                self.next_index += 1;
                return Some(Err(not_an_object(document, start, &snippet)));
            }
            match self.frame() {
                Framed::Complete(end) if end > self.limit_bytes => {
                    self.consume(end);
                    self.next_index += 1;
                    return Some(Err(LiveError::TooLarge {
                        document,
                        byte_offset: start,
                        limit_bytes: self.limit_bytes,
                    }));
                }
                Framed::Complete(end) => {
                    let result = parse_bytes(&self.buf[..end], document, start);
                    self.consume(end);
                    self.next_index += 1;
                    return Some(result);
                }
                Framed::Truncated { next, at, why } => {
                    self.consume(next);
                    self.next_index += 1;
                    return Some(Err(LiveError::Parse {
                        document,
                        byte_offset: start + at as u64,
                        message: why.to_string(),
                    }));
                }
                Framed::NeedMore => {
                    if self.eof {
                        let n = self.buf.len();
                        self.consume(n);
                        self.next_index += 1;
                        return Some(Err(LiveError::Parse {
                            document,
                            byte_offset: start + n as u64,
                            message: "end of input inside the document".to_string(),
                        }));
                    }
                    if self.buf.len() > self.limit_bytes {
                        // Drop it, then resynchronize at the next line.
                        let n = memchr_newline(&self.buf[self.limit_bytes..])
                            .map(|i| self.limit_bytes + i + 1)
                            .unwrap_or(self.buf.len());
                        self.consume(n);
                        self.next_index += 1;
                        return Some(Err(LiveError::TooLarge {
                            document,
                            byte_offset: start,
                            limit_bytes: self.limit_bytes,
                        }));
                    }
                    if let Err(e) = self.fill() {
                        self.failed = true;
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}

fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(40)]);
    text.trim_end().to_string()
}

fn not_an_object(document: u64, byte_offset: u64, snippet: &str) -> LiveError {
    LiveError::Parse {
        document,
        byte_offset,
        message: format!("expected a JSON object, found `{snippet}`"),
    }
}

impl<R: Read> Iterator for DocumentReader<R> {
    type Item = Result<MonitorDocument, LiveError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        self.next_document()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"neuron_runtime_data":[{"pid":7,"neuron_runtime_tag":"7","report":{}}]}"#;

    fn read_all(input: &str) -> Vec<Result<MonitorDocument, LiveError>> {
        DocumentReader::new(input.as_bytes()).collect()
    }

    #[test]
    fn one_document_per_line() {
        let docs = read_all(&format!("{DOC}\n{DOC}\n"));
        assert_eq!(docs.len(), 2);
        assert!(docs
            .iter()
            .all(|d| d.as_ref().unwrap().neuron_runtime_data[0].pid == 7));
    }

    #[test]
    fn concatenated_and_pretty_printed_documents() {
        let pretty = serde_json::to_string_pretty(&parse_document(DOC).unwrap()).unwrap();
        let docs = read_all(&format!("{DOC}{DOC}  {pretty}\n{DOC}"));
        assert_eq!(docs.len(), 4);
        assert!(docs.iter().all(|d| d.is_ok()), "{docs:?}");
    }

    #[test]
    fn random_garbage_never_panics_and_good_lines_after_it_are_read() {
        // A deterministic generator over JSON-ish bytes; every stream ends with two good
        // documents on their own lines, and the last one is always read.
        let alphabet = b"{}[]\",:\\ \n\tab01-eE.truenull";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let iterations = if cfg!(miri) { 20 } else { 500 };
        for _ in 0..iterations {
            let len = (state % 300) as usize;
            let mut stream = Vec::with_capacity(len + 200);
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                stream.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            stream.extend_from_slice(format!("\n{DOC}\n{DOC}\n").as_bytes());
            let docs: Vec<_> = DocumentReader::new(stream.as_slice())
                .with_limit(4096)
                .collect();
            assert!(
                docs.last().unwrap().is_ok(),
                "{:?}",
                String::from_utf8_lossy(&stream)
            );
        }
    }

    #[test]
    fn byte_order_mark_at_the_start_is_skipped() {
        let docs = read_all(&format!("\u{feff}{DOC}\n{DOC}\n"));
        assert_eq!(docs.len(), 2);
        assert!(docs.iter().all(|d| d.is_ok()), "{docs:?}");
    }

    #[test]
    fn zero_indent_documents_keep_their_nested_objects() {
        // Python's json.dumps(indent=0): array elements start in column 0.
        let doc = "{\n\"neuron_runtime_data\": [\n{\n\"pid\": 1\n},\n{\n\"pid\": 2\n}\n]\n}\n";
        let docs = read_all(&format!("{doc}{DOC}\n"));
        assert_eq!(docs.len(), 2, "{docs:?}");
        assert_eq!(docs[0].as_ref().unwrap().neuron_runtime_data.len(), 2);
        assert!(docs[1].is_ok());
    }

    #[test]
    fn braces_inside_strings_do_not_end_a_document() {
        let doc = r#"{"neuron_runtime_data":[{"pid":1,"error":"bad } { \" ]","report":{}}]}"#;
        let docs = read_all(doc);
        assert_eq!(docs.len(), 1);
        assert_eq!(
            docs[0].as_ref().unwrap().neuron_runtime_data[0].error,
            "bad } { \" ]"
        );
    }

    #[test]
    fn malformed_line_is_reported_and_reading_goes_on() {
        let input = format!("{DOC}\nnot json at all\n{DOC}\n");
        let docs = read_all(&input);
        assert_eq!(docs.len(), 3);
        assert!(docs[0].is_ok() && docs[2].is_ok());
        let err = docs[1].as_ref().unwrap_err();
        match err {
            LiveError::Parse {
                document,
                byte_offset,
                ..
            } => {
                assert_eq!(*document, 1);
                assert_eq!(*byte_offset, DOC.len() as u64 + 1);
            }
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("not json"), "{err}");
    }

    #[test]
    fn truncated_line_is_reported_and_next_line_read() {
        let input = format!("{DOC}\n{{\"neuron_runtime_data\":[{{\"pid\":\n{DOC}\n");
        let docs = read_all(&input);
        assert_eq!(docs.len(), 3, "{docs:?}");
        assert!(docs[0].is_ok() && docs[2].is_ok());
        assert!(matches!(docs[1], Err(LiveError::Parse { document: 1, .. })));
    }

    #[test]
    fn wrong_type_names_the_byte_offset() {
        let bad = r#"{"neuron_runtime_data":[{"pid":"seven"}]}"#;
        let input = format!("{DOC}\n{bad}\n");
        let docs = read_all(&input);
        let LiveError::Parse {
            document,
            byte_offset,
            message,
        } = docs[1].as_ref().unwrap_err()
        else {
            panic!()
        };
        assert_eq!(*document, 1);
        // serde_json points at the last byte it read: the closing quote of "seven".
        let inner = bad.find("\"seven\"").unwrap() + "\"seven\"".len() - 1;
        assert_eq!(*byte_offset, (DOC.len() + 1 + inner) as u64, "{message}");
        assert!(message.contains("invalid type"), "{message}");
    }

    #[test]
    fn end_of_input_inside_a_document() {
        let docs = read_all(&format!("{DOC}\n{{\"neuron_runtime_data\": ["));
        assert_eq!(docs.len(), 2);
        assert!(docs[1]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("end of input"));
    }

    #[test]
    fn oversized_document_is_dropped() {
        let big = format!("{{\"x\": \"{}\"}}", "a".repeat(200));
        let input = format!("{big}\n{DOC}\n");
        let docs: Vec<_> = DocumentReader::new(input.as_bytes())
            .with_limit(100)
            .collect();
        assert!(
            matches!(docs[0], Err(LiveError::TooLarge { .. })),
            "{docs:?}"
        );
        assert!(docs.last().unwrap().is_ok());
    }

    #[test]
    fn unknown_keys_and_absent_groups_are_accepted() {
        let doc = parse_document(
            r#"{"future_group": {"x": 1}, "neuron_runtime_data": [{"pid": 3, "new_key": true,
                "report": {"neuroncore_counters": {"neuroncores_in_use": {"0": {"neuroncore_utilization": 5.0, "new": 1}}}}}]}"#,
        )
        .unwrap();
        let report = &doc.neuron_runtime_data[0].report;
        assert!(report.memory_used.is_none() && report.neuronprof.is_none());
        assert_eq!(
            report
                .neuroncore_counters
                .as_ref()
                .unwrap()
                .neuroncores_in_use[&0]
                .neuroncore_utilization,
            5.0
        );
    }
}
