//! `neuronprof monitor` ends with status 0 on Ctrl-C (SIGINT) and when its reader goes
//! away (a closed pipe), instead of dying of the signal or printing an error.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn monitor(runtime_dir: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_neuronprof"))
        .args(["monitor", "--period", "100ms"])
        .env("XDG_RUNTIME_DIR", runtime_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting neuronprof monitor")
}

fn wait(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("neuronprof monitor did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_and_a_closed_pipe_end_the_monitor_with_success() {
    let dir = std::env::temp_dir().join(format!("neuronprof-monitor-stop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();

    // Ctrl-C after the first document.
    let mut child = monitor(&dir);
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("{\"neuron_runtime_data\":"), "{line}");
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = wait(&mut child);
    assert!(status.success(), "SIGINT: {status:?}");

    // The reader closes the pipe after one document.
    let mut child = monitor(&dir);
    {
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty());
    }
    let status = wait(&mut child);
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "closed pipe: {status:?} {stderr}");
    assert!(stderr.is_empty(), "no error printed: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
