//! Prints the analysis report of trace files: `cargo run -p analysis --example report --
//! [--hta-compat] FILE…` (one file per rank).

use analysis::{analyze, load_paths, render, LoadOptions, Mode, ReportOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let compat = args.iter().any(|a| a == "--hta-compat");
    args.retain(|a| a != "--hta-compat");
    let traces = load_paths(&args, &LoadOptions::default())?;
    let mode = if compat {
        Mode::HtaCompat
    } else {
        Mode::Default
    };
    let report = analyze(&traces, &ReportOptions::hta_reference().with_mode(mode));
    print!("{}", render::render_report(&report));
    Ok(())
}
