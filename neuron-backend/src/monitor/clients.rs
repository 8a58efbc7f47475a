//! The endpoint's connections: many clients at once on the endpoint's one thread, each
//! with a deadline on its whole request (reading it and writing the answer), so a
//! silent or trickling client delays nobody else and holds its place for at most
//! [`REQUEST_DEADLINE`].
//!
//! One `poll(2)` waits on the listener and every client; reads and writes are
//! non-blocking. At most [`MAX_CLIENTS`] connections are open: a new one beyond that
//! closes the oldest client still sending its request (a client that is being answered
//! keeps its place), so a flood of idle connections cannot lock a scraper out. An
//! `accept` error other than "nothing pending" (EMFILE: out of file descriptors) stops
//! accepting for a while that doubles on each error in a row (from
//! [`ACCEPT_BACKOFF_MIN`] to [`ACCEPT_BACKOFF_MAX`]) instead of polling a listener that
//! stays readable in a loop at full CPU.

use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

/// The most connections open at once.
pub(super) const MAX_CLIENTS: usize = 64;
/// The longest request line accepted, bytes.
pub(super) const MAX_REQUEST_BYTES: usize = 4096;
/// How long one connection may take, from its accept to the end of the answer.
pub(super) const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// The first pause after an `accept` error.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// The longest pause after `accept` errors in a row.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What a client sent, handed to whoever answers it.
#[derive(Debug)]
pub(super) enum Incoming<'a> {
    /// A line (with its newline, or everything before the client closed its side).
    Line(&'a str),
    /// [`MAX_REQUEST_BYTES`] without a newline.
    TooLong,
    /// The bytes are not UTF-8, reading failed, or the deadline passed mid-request.
    Unreadable(String),
}

#[derive(Debug)]
enum Phase {
    Reading(Vec<u8>),
    Writing { out: Vec<u8>, written: usize },
    Done,
}

#[derive(Debug)]
struct Client {
    stream: UnixStream,
    deadline: Instant,
    phase: Phase,
}

impl Client {
    fn reading(&self) -> bool {
        matches!(self.phase, Phase::Reading(_))
    }

    /// Reads what is there; answers once the request is whole.
    fn read(&mut self, answer: &mut impl FnMut(Incoming<'_>) -> String) {
        let Phase::Reading(buffer) = &mut self.phase else {
            return;
        };
        let mut chunk = [0u8; MAX_REQUEST_BYTES];
        let incoming = loop {
            let room = MAX_REQUEST_BYTES - buffer.len();
            match self.stream.read(&mut chunk[..room]) {
                // A connection closed without a byte is a liveness probe: no answer.
                Ok(0) if buffer.is_empty() => {
                    self.phase = Phase::Done;
                    return;
                }
                Ok(0) => break decode(buffer),
                Ok(n) => {
                    buffer.extend_from_slice(&chunk[..n]);
                    if let Some(end) = buffer.iter().position(|&b| b == b'\n') {
                        buffer.truncate(end + 1);
                        break decode(buffer);
                    }
                    if buffer.len() >= MAX_REQUEST_BYTES {
                        break Err(Incoming::TooLong);
                    }
                }
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => break Err(Incoming::Unreadable(format!("could not read it: {err}"))),
            }
        };
        let body = match incoming {
            Ok(line) => answer(Incoming::Line(line)),
            Err(other) => answer(other),
        };
        self.start_writing(body);
        self.write();
    }

    fn start_writing(&mut self, body: String) {
        let mut out = body.into_bytes();
        out.push(b'\n');
        self.phase = Phase::Writing { out, written: 0 };
    }

    /// Writes what the socket takes; done once the answer is out (or cannot go).
    fn write(&mut self) {
        let Phase::Writing { out, written } = &mut self.phase else {
            return;
        };
        while *written < out.len() {
            match self.stream.write(&out[*written..]) {
                Ok(n) => *written += n,
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        self.phase = Phase::Done;
    }

    /// Past the deadline: a client that sent part of a request is told why it is
    /// dropped (as far as its socket takes it at once); any other is closed.
    fn expire(&mut self, answer: &mut impl FnMut(Incoming<'_>) -> String) {
        if let Phase::Reading(buffer) = &self.phase {
            if !buffer.is_empty() {
                let why = format!(
                    "no complete request within {} s (one line ending in a newline)",
                    REQUEST_DEADLINE.as_secs()
                );
                let body = answer(Incoming::Unreadable(why));
                self.start_writing(body);
                self.write();
            }
        }
        self.phase = Phase::Done;
    }
}

fn decode(buffer: &[u8]) -> Result<&str, Incoming<'static>> {
    std::str::from_utf8(buffer)
        .map_err(|e| Incoming::Unreadable(format!("not UTF-8 at byte {}", e.valid_up_to())))
}

/// The listener and its open connections.
#[derive(Debug)]
pub(super) struct Clients {
    listener: UnixListener,
    clients: Vec<Client>,
    /// While `Some`, the listener is not polled (after an `accept` error).
    accept_paused_until: Option<Instant>,
    accept_backoff: Duration,
}

impl Clients {
    /// Serves connections of `listener`, which must be non-blocking.
    pub(super) fn new(listener: UnixListener) -> Self {
        Clients {
            listener,
            clients: Vec::new(),
            accept_paused_until: None,
            accept_backoff: ACCEPT_BACKOFF_MIN,
        }
    }

    /// Connections open now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.clients.len()
    }

    /// Waits until a connection can make progress, a deadline passes or `wake_at`
    /// (`None`: no limit of the caller's), then does what can be done without
    /// blocking: accepts, reads, answers (`answer` runs once per request; a probe never
    /// reaches it) and writes.
    pub(super) fn turn(
        &mut self,
        wake_at: Option<Instant>,
        answer: &mut impl FnMut(Incoming<'_>) -> String,
    ) {
        let now = Instant::now();
        if self.accept_paused_until.is_some_and(|until| now >= until) {
            self.accept_paused_until = None;
        }
        let listening = self.accept_paused_until.is_none();
        let mut fds = Vec::with_capacity(self.clients.len() + 1);
        if listening {
            fds.push(pollfd(self.listener.as_raw_fd(), libc::POLLIN));
        }
        for client in &self.clients {
            let events = if client.reading() {
                libc::POLLIN
            } else {
                libc::POLLOUT
            };
            fds.push(pollfd(client.stream.as_raw_fd(), events));
        }
        let wake = self
            .clients
            .iter()
            .map(|c| c.deadline)
            .chain(wake_at)
            .chain(self.accept_paused_until)
            .min();
        let timeout_ms = wake.map_or(-1, |at| {
            // Rounded up, so a wake-up does not come a little early and spin.
            let ms = at.saturating_duration_since(now).as_micros().div_ceil(1000);
            i32::try_from(ms).unwrap_or(i32::MAX)
        });
        let count = libc::nfds_t::try_from(fds.len()).unwrap_or(libc::nfds_t::MAX);
        // SAFETY: `fds` holds `count` initialized pollfds for descriptors this struct
        // owns, alive for the call; an error (EINTR) leaves every `revents` at 0.
        unsafe { libc::poll(fds.as_mut_ptr(), count, timeout_ms) };
        let ready = |i: usize| fds[i + usize::from(listening)].revents != 0;
        for (i, client) in self.clients.iter_mut().enumerate() {
            if ready(i) {
                if client.reading() {
                    client.read(answer);
                } else {
                    client.write();
                }
            }
        }
        let now = Instant::now();
        for client in &mut self.clients {
            if now >= client.deadline && !matches!(client.phase, Phase::Done) {
                client.expire(answer);
            }
        }
        self.clients.retain(|c| !matches!(c.phase, Phase::Done));
        if listening && fds[0].revents != 0 {
            self.accept();
        }
    }

    /// Accepts every pending connection (pausing after an error).
    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    self.accept_backoff = ACCEPT_BACKOFF_MIN;
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if self.clients.len() >= MAX_CLIENTS && !self.make_room() {
                        // Everyone is being answered: this one is closed unanswered.
                        continue;
                    }
                    self.clients.push(Client {
                        stream,
                        deadline: Instant::now() + REQUEST_DEADLINE,
                        phase: Phase::Reading(Vec::new()),
                    });
                }
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(err)
                    if matches!(
                        err.kind(),
                        std::io::ErrorKind::Interrupted | std::io::ErrorKind::ConnectionAborted
                    ) => {}
                Err(_) => {
                    self.accept_paused_until = Some(Instant::now() + self.accept_backoff);
                    self.accept_backoff = (self.accept_backoff * 2).min(ACCEPT_BACKOFF_MAX);
                    return;
                }
            }
        }
    }

    /// Closes the oldest client still sending its request; false if every client is
    /// being answered.
    fn make_room(&mut self) -> bool {
        match self.clients.iter().position(Client::reading) {
            Some(oldest) => {
                self.clients.remove(oldest);
                true
            }
            None => false,
        }
    }
}

fn pollfd(fd: std::os::fd::RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Clients, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "neuronprof-clients-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        (Clients::new(listener), path)
    }

    fn echo(incoming: Incoming<'_>) -> String {
        format!("{incoming:?}")
    }

    #[test]
    fn a_flood_of_idle_connections_keeps_at_most_the_cap_open_and_the_newest_answered() {
        let (mut clients, path) = pair();
        let idle: Vec<UnixStream> = (0..MAX_CLIENTS * 3)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        let mut asker = UnixStream::connect(&path).unwrap();
        asker.write_all(b"{}\n").unwrap();
        let mut answered = Vec::new();
        for _ in 0..20 {
            clients.turn(
                Some(Instant::now() + Duration::from_millis(5)),
                &mut |i: Incoming<'_>| {
                    answered.push(format!("{i:?}"));
                    echo(i)
                },
            );
            assert!(clients.open() <= MAX_CLIENTS, "{} open", clients.open());
        }
        assert_eq!(answered, ["Line(\"{}\\n\")"]);
        let mut reply = String::new();
        asker.read_to_string(&mut reply).unwrap();
        assert_eq!(reply, "Line(\"{}\\n\")\n");
        drop(idle);
    }

    #[test]
    fn an_accept_error_pauses_accepting_with_a_growing_backoff() {
        // A "listener" whose accept always fails (EINVAL: a connected socket) while
        // poll keeps reporting it readable (its peer hung up), as a listener does
        // when accept fails with EMFILE: the loop must not spin on it.
        let (socket, peer) = UnixStream::pair().unwrap();
        drop(peer);
        let listener = UnixListener::from(std::os::fd::OwnedFd::from(socket));
        listener.set_nonblocking(true).unwrap();
        let mut clients = Clients::new(listener);
        let started = Instant::now();
        let mut turns = 0;
        while started.elapsed() < Duration::from_millis(300) {
            clients.turn(Some(started + Duration::from_millis(300)), &mut echo);
            turns += 1;
        }
        // 10 + 20 + 40 + 80 + 160 ms of pauses fill 300 ms in about six turns; a loop
        // without the backoff turns thousands of times.
        assert!(turns < 20, "{turns} turns in 300 ms");
        assert_eq!(clients.open(), 0);
    }
}
