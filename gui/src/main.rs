//! `neuron-viewer PATH…`: opens Kineto traces (`.json`, `.json.gz`, directories of rank
//! traces) in the desktop viewer. The viewer lives in the `gui` library.

fn main() -> anyhow::Result<()> {
    let mut paths = Vec::new();
    for arg in std::env::args_os().skip(1) {
        if arg == "-h" || arg == "--help" {
            println!("usage: neuron-viewer [PATH…]\n\nOpens Kineto traces (.json, .json.gz) or directories of rank traces.\nPress ? in the window for the keys.");
            return Ok(());
        }
        paths.push(std::path::PathBuf::from(arg));
    }
    gui::run_viewer(paths)
}
