//! `neuron-top`: see the `tui` library.

fn main() {
    let args = match tui::Args::parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => return,
        Err(message) => {
            eprintln!("neuron-top: {message}");
            std::process::exit(2);
        }
    };
    if let Err(e) = tui::run(args) {
        eprintln!("neuron-top: {e:#}");
        std::process::exit(1);
    }
}
