//! Streams a trace through the reader into the writer: the output is the same trace in
//! Kineto's exact layout (plain or gzip), never held in memory as a whole.
//!
//! ```text
//! cargo run --release -p trace-format --example rewrite_trace -- IN.json.gz OUT.json [--gzip]
//! ```

use std::fs::File;
use std::io::{self, BufWriter};
use std::ops::ControlFlow;

use trace_format::{Event, Output, TraceMeta, TraceReader, TraceSink, TraceWriter, WriteOptions};

/// Writes each event as it is read; keeps the first I/O error and stops the read.
struct Rewrite {
    out: Option<Output<BufWriter<File>>>,
    writer: Option<TraceWriter<Output<BufWriter<File>>>>,
    error: Option<io::Error>,
}

impl Rewrite {
    fn keep<T>(&mut self, result: io::Result<T>) -> ControlFlow<(), T> {
        match result {
            Ok(value) => ControlFlow::Continue(value),
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
        }
    }
}

impl TraceSink for Rewrite {
    fn on_header(&mut self, meta: &TraceMeta) -> ControlFlow<()> {
        let out = self.out.take().expect("header comes once");
        // Copy the input as it is: do not add a `Record Window End` it does not have.
        let options = WriteOptions::default().with_record_window_end(false);
        let writer = self.keep(TraceWriter::with_options(out, meta, options))?;
        self.writer = Some(writer);
        ControlFlow::Continue(())
    }

    fn on_event(&mut self, _index: u64, event: &Event<'_>) -> ControlFlow<()> {
        let result = self
            .writer
            .as_mut()
            .map_or(Ok(()), |w| w.write_event(event));
        self.keep(result)
    }

    fn on_trailer(&mut self, meta: &TraceMeta) {
        if let Some(writer) = &mut self.writer {
            writer.set_trailer(meta);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: rewrite_trace IN OUT [--gzip]");
        std::process::exit(2);
    }
    let gzip = args.iter().any(|a| a == "--gzip");
    let file = match File::create(&args[1]) {
        Ok(file) => BufWriter::new(file),
        Err(e) => {
            eprintln!("cannot create {}: {e}", args[1]);
            std::process::exit(1);
        }
    };
    let out = if gzip {
        Output::gzip(file)
    } else {
        Output::plain(file)
    };
    let mut sink = Rewrite {
        out: Some(out),
        writer: None,
        error: None,
    };
    let report = TraceReader::open(&args[0]).read(&mut sink);
    let result = match (report, sink.error.take(), sink.writer.take()) {
        (Err(e), _, _) => Err(e.to_string()),
        (_, Some(e), _) => Err(format!("writing {}: {e}", args[1])),
        (Ok(_), None, Some(writer)) => writer
            .finish()
            .and_then(Output::close)
            .map(|_| ())
            .map_err(|e| format!("writing {}: {e}", args[1])),
        (Ok(_), None, None) => Err("no trace header was read".to_owned()),
    };
    match result {
        Ok(()) => println!("wrote {}", args[1]),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
