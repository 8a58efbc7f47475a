//! Makes a large trace for benchmarks by repeating a real trace's events with shifted
//! times (and flow ids) until the output reaches a size.
//!
//! ```text
//! cargo run --release -p trace-format --example make_large_trace -- \
//!     tests/data/traces/hta/nccl_data.json.gz /tmp/big.json --size-mb 1024
//! ```
//! Add `--gzip` for a `.json.gz`. 1 MB = 10^6 bytes of JSON text (before compression).

#[path = "../benches/support/replicate.rs"]
mod replicate;

use std::io::BufWriter;
use std::time::Instant;

use trace_format::Output;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: make_large_trace INPUT OUTPUT [--size-mb N] [--gzip]";
    if args.len() < 2 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let mut size_mb = 1024u64;
    let mut gzip = false;
    let mut rest = args[2..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--size-mb" => size_mb = rest.next().and_then(|n| n.parse().ok()).unwrap_or(size_mb),
            "--gzip" => gzip = true,
            other => {
                eprintln!("unknown argument {other}\n{usage}");
                std::process::exit(2);
            }
        }
    }
    let file = match std::fs::File::create(&args[1]) {
        Ok(file) => BufWriter::with_capacity(1 << 20, file),
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
    let start = Instant::now();
    let result = replicate::replicate(args[0].as_ref(), out, size_mb * 1_000_000)
        .and_then(|(events, out)| out.inner.close().map(|_| (events, out.bytes)));
    match result {
        Ok((events, bytes)) => println!(
            "wrote {} ({events} events, {:.1} MB of JSON) in {:.1} s",
            args[1],
            bytes as f64 / 1e6,
            start.elapsed().as_secs_f64()
        ),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
