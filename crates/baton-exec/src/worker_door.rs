//! A running worker's door: a Unix socket its supervisor listens on, through which a prompt is
//! sent and its answer handed back as soon as it is in the log. Without it, a sender (`baton
//! worker send`, `baton mcp`'s `worker_send`, a session's `worker` tool) reads the log, appends
//! the prompt itself and looks at the log every millisecond until the answer lands; through it,
//! the sender writes one line and reads two.
//!
//! The log stays the record: the supervisor appends the prompt (`prompt.queued`) exactly as a
//! sender would, before it answers that the prompt is queued, and the answer it hands back is
//! the `prompt.answered` (or `prompt.lost`) line it wrote. A sender whose door closes before the
//! answer follows the log for that prompt as before; a worker without a door (stopped, or
//! started by an older baton) is sent to through the log.
//!
//! The socket is in Linux's abstract namespace (no file to leave behind, no path length limit),
//! named after the log's canonical path. Any local user may connect to an abstract socket, so
//! both ends check the other's user (`SO_PEERCRED`): the supervisor serves only its own user,
//! and a sender talks only to a socket its own user holds (another user could bind the name
//! first and read the prompts).
//!
//! The protocol, one JSON line each way:
//! - the sender: `{"id": "…", "text": "…"}`, the prompt's id its own (so a door that closes
//!   before it answers leaves the sender able to look for that prompt in the log, and never send
//!   it twice);
//! - the supervisor: `{"queued": "ID"}` once the prompt is in the log, then the prompt's
//!   `prompt.answered` or `prompt.lost` line as the log has it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::fd::AsFd;
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::time::Duration;

use baton_state::StateDir;
use serde::{Deserialize, Serialize};

use crate::worker::{log_path, WorkerEvent};

/// How long the supervisor waits for a sender's line.
const READ_LINE: Duration = Duration::from_secs(5);

/// A sender's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ask {
    /// The prompt's id: 32 lower-case hex digits (a UUID's simple form).
    pub id: String,
    pub text: String,
}

/// Whether `id` is a prompt id a sender may give (what `send` makes: a UUID, simple form).
pub fn valid_id(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The supervisor's first line: the prompt is in the log, with this id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Queued {
    pub queued: String,
}

/// What a sender got through the door.
#[derive(Debug)]
pub enum Reply {
    /// The prompt's answer (or its loss), as the log has it.
    Done { id: String, event: Box<WorkerEvent> },
    /// The prompt is in the log, and the door closed before its end: the log says the rest.
    Queued { id: String },
    /// The prompt was handed in and the door closed before saying it was queued: whether it is
    /// in the log, only the log can say (look for `id` there before sending it again).
    Unsure { id: String },
}

/// The door's name (in the abstract namespace): the log's canonical path, hashed (FNV-1a, 64
/// bits: stable across builds); `None` when the worker has no log.
pub fn name(state: &StateDir, worker: &str) -> Option<String> {
    let path = std::fs::canonicalize(log_path(state, worker).ok()?).ok()?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    Some(format!("baton-worker-{h:016x}"))
}

/// Whether the process at the other end of `s` runs as this process's user.
fn same_user(s: &impl AsFd) -> bool {
    nix::sys::socket::getsockopt(s, nix::sys::socket::sockopt::PeerCredentials)
        .is_ok_and(|c| c.uid() == nix::unistd::getuid().as_raw())
}

/// The supervisor's listener, bound for `worker` (an error when the name is taken: another
/// supervisor of the same worker serves it).
pub fn listen(state: &StateDir, worker: &str) -> std::io::Result<UnixListener> {
    let name = name(state, worker)
        .ok_or_else(|| std::io::Error::other("the worker's log cannot be found"))?;
    UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes())?)
}

/// One sender at the door, for the supervisor: its prompt, once it is read from a sender of the
/// supervisor's own user; `None` for anyone else or anything else (the connection is dropped).
pub fn accept(conn: &UnixStream) -> Option<Ask> {
    if !same_user(conn) {
        return None;
    }
    conn.set_read_timeout(Some(READ_LINE)).ok()?;
    let mut line = String::new();
    BufReader::new(conn).read_line(&mut line).ok()?;
    let ask: Ask = serde_json::from_str(&line).ok()?;
    (!ask.text.trim().is_empty() && valid_id(&ask.id)).then_some(ask)
}

/// Whether the sender at the other end of `conn` has hung up (a call that stopped waiting):
/// for the supervisor, which then stops waiting for that prompt's end on its behalf.
pub fn gone(conn: &UnixStream) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(conn.as_fd(), PollFlags::POLLIN)];
    if !poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0) {
        return false;
    }
    let hung_up = fds[0]
        .revents()
        .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR));
    // Readable: a sender writes nothing after its line, so what there is to read is its end.
    hung_up || {
        use nix::sys::socket::{recv, MsgFlags};
        use std::os::fd::AsRawFd as _;
        let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
        match recv(conn.as_raw_fd(), &mut [0u8; 1], flags) {
            Ok(n) => n == 0,
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => false,
            Err(_) => true,
        }
    }
}

/// `v` as one JSON line.
fn line_of(v: &impl Serialize) -> std::io::Result<String> {
    let mut text = serde_json::to_string(v).map_err(std::io::Error::other)?;
    text.push('\n');
    Ok(text)
}

/// Writes one JSON line to the sender (it may have gone: the prompt is in the log anyway).
pub fn tell(mut conn: &UnixStream, line: &impl Serialize) -> std::io::Result<()> {
    conn.write_all(line_of(line)?.as_bytes())
}

/// A connection to `worker`'s door, from a sender of this process's user; `None` when it has no
/// door this sender may use.
fn connect(state: &StateDir, worker: &str) -> Option<UnixStream> {
    let name = name(state, worker)?;
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).ok()?;
    let conn = UnixStream::connect_addr(&addr).ok()?;
    same_user(&conn).then_some(conn)
}

/// The sender's line for prompt `id`.
fn ask_line(id: &str, text: &str) -> Option<String> {
    line_of(&Ask {
        id: id.to_string(),
        text: text.into(),
    })
    .ok()
}

/// The id the supervisor's first line says is queued, when it is `id`.
fn queued_in(line: Option<String>, id: &str) -> Option<String> {
    serde_json::from_str::<Queued>(&line?)
        .ok()
        .map(|q| q.queued)
        .filter(|q| q == id)
}

/// What the sender got, from the supervisor's second line (`None`: the door closed first).
fn reply(id: String, line: Option<String>) -> Reply {
    match line.and_then(|l| serde_json::from_str::<WorkerEvent>(&l).ok()) {
        Some(event) => Reply::Done {
            id,
            event: Box::new(event),
        },
        None => Reply::Queued { id },
    }
}

/// Sends `text` to `worker` through its door as prompt `id` and waits for the answer; `None`
/// when the worker has no door this sender may use and nothing was handed in (then send through
/// the log).
pub fn ask(state: &StateDir, worker: &str, id: &str, text: &str) -> Option<Reply> {
    let mut conn = connect(state, worker)?;
    conn.write_all(ask_line(id, text)?.as_bytes()).ok()?;
    let mut lines = BufReader::new(&conn).lines();
    let Some(id) = queued_in(lines.next().and_then(Result::ok), id) else {
        return Some(Reply::Unsure { id: id.to_string() });
    };
    Some(reply(id, lines.next().and_then(Result::ok)))
}

/// [`ask`] for a sender on a tokio runtime (`baton mcp`, a session's `worker` tool): the wait
/// for the answer ends when `cancel` fires, with the prompt queued (the log has the rest).
pub async fn ask_async(
    state: &StateDir,
    worker: &str,
    id: &str,
    text: &str,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<Reply> {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let conn = connect(state, worker)?;
    conn.set_nonblocking(true).ok()?;
    let mut conn = tokio::net::UnixStream::from_std(conn).ok()?;
    conn.write_all(ask_line(id, text)?.as_bytes()).await.ok()?;
    let mut lines = tokio::io::BufReader::new(conn).lines();
    let Some(id) = queued_in(lines.next_line().await.ok().flatten(), id) else {
        return Some(Reply::Unsure { id: id.to_string() });
    };
    let done = tokio::select! {
        line = lines.next_line() => line.ok().flatten(),
        () = cancel.cancelled() => None,
    };
    Some(reply(id, done))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    const P1: &str = "0191f6b2c3d4e5f60718293a4b5c6d7e";
    const P2: &str = "0191f6b2c3d4e5f60718293a4b5c6d7f";

    fn worker_log(dir: &std::path::Path) -> StateDir {
        let state = StateDir::at(dir.join("state"));
        std::fs::create_dir_all(state.root().join("workers")).unwrap();
        std::fs::write(log_path(&state, "w1").unwrap(), "").unwrap();
        state
    }

    /// One sender at `listener`, served as a supervisor serves it: `queued`, then a `lost` line
    /// as the prompt's end; the sender's text.
    fn answer_lost(listener: &UnixListener, id: &str) -> String {
        let (conn, _) = listener.accept().unwrap();
        let ask = accept(&conn).unwrap();
        tell(&conn, &Queued { queued: id.into() }).unwrap();
        let answer = WorkerEvent::Lost {
            id: id.into(),
            at: "2026-12-07T00:00:00Z".into(),
        };
        tell(&conn, &answer).unwrap();
        ask.text
    }

    #[test]
    fn a_prompt_goes_in_and_its_answer_comes_back_through_the_door() {
        let dir = tempfile::tempdir().unwrap();
        let state = worker_log(dir.path());
        let listener = listen(&state, "w1").unwrap();
        // A second supervisor of the same worker cannot take its door.
        assert!(listen(&state, "w1").is_err());
        let served = std::thread::spawn(move || answer_lost(&listener, P1));
        let reply = ask(&state, "w1", P1, "hello").unwrap();
        assert_eq!(served.join().unwrap(), "hello");
        let Reply::Done { id, event } = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(id, P1);
        assert!(matches!(*event, WorkerEvent::Lost { .. }));
    }

    /// Worker `w1`'s door, served once on a thread: the sender's ask is taken, then `then`
    /// answers (or not) before the door closes.
    fn door(state: &StateDir, then: impl FnOnce(&UnixStream) + Send + 'static) {
        let listener = listen(state, "w1").unwrap();
        std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            accept(&conn).unwrap();
            then(&conn);
        });
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_sender_on_a_runtime_gets_the_answer_or_stops_waiting_when_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let state = worker_log(dir.path());
        let listener = listen(&state, "w1").unwrap();
        // The supervisor: the first sender gets its answer; the second only `queued`, and the
        // door stays open until the test says (its answer never comes).
        let (close, closed) = std::sync::mpsc::channel::<()>();
        let served = std::thread::spawn(move || {
            let text = answer_lost(&listener, P1);
            let (conn, _) = listener.accept().unwrap();
            accept(&conn).unwrap();
            tell(&conn, &Queued { queued: P2.into() }).unwrap();
            let _ = closed.recv();
            text
        });
        let cancel = tokio_util::sync::CancellationToken::new();
        let reply = ask_async(&state, "w1", P1, "hello", &cancel).await.unwrap();
        let Reply::Done { id, event } = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(id, P1);
        assert!(matches!(*event, WorkerEvent::Lost { .. }));
        // Cancelled while it waits: the prompt is queued (the log has the rest), and the wait
        // ends although the door is still open.
        let cancelled = cancel.clone();
        let waiting = ask_async(&state, "w1", P2, "again", &cancel);
        let (reply, ()) = tokio::join!(waiting, async move { cancelled.cancel() });
        assert!(
            matches!(reply, Some(Reply::Queued { ref id }) if id == P2),
            "{reply:?}"
        );
        close.send(()).unwrap();
        assert_eq!(served.join().unwrap(), "hello");
        // No door: nothing was handed in.
        assert!(ask_async(&state, "w1", P1, "hello", &cancel)
            .await
            .is_none());
    }

    #[test]
    fn the_supervisor_sees_a_sender_that_hung_up() {
        let dir = tempfile::tempdir().unwrap();
        let state = worker_log(dir.path());
        let listener = listen(&state, "w1").unwrap();
        let sender = connect(&state, "w1").unwrap();
        let (conn, _) = listener.accept().unwrap();
        assert!(!gone(&conn), "a sender that waits is not gone");
        drop(sender);
        assert!(gone(&conn), "a sender that hung up is gone");
    }

    #[test]
    fn a_door_that_closes_after_queueing_leaves_the_rest_to_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let state = worker_log(dir.path());
        door(&state, |conn| {
            tell(conn, &Queued { queued: P2.into() }).unwrap();
        });
        let reply = ask(&state, "w1", P2, "hello").unwrap();
        assert!(matches!(reply, Reply::Queued { id } if id == P2));
    }

    #[test]
    fn a_door_that_closes_before_queueing_leaves_the_sender_unsure() {
        let dir = tempfile::tempdir().unwrap();
        let state = worker_log(dir.path());
        door(&state, |_| {});
        let reply = ask(&state, "w1", P1, "hello").unwrap();
        assert!(matches!(reply, Reply::Unsure { id } if id == P1));
    }

    #[test]
    fn no_door_no_log_and_a_bad_line_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let state = worker_log(dir.path());
        // Nobody listens: send through the log.
        assert!(ask(&state, "w1", P1, "hello").is_none());
        // No such worker: no door either.
        assert!(ask(&state, "nobody", P1, "hello").is_none());
        // A line that is not a prompt (empty, or with an id `send` would not make) is dropped.
        let listener = listen(&state, "w1").unwrap();
        let addr = listener.local_addr().unwrap();
        for line in [
            format!("{{\"id\": \"{P1}\", \"text\": \"\"}}\n"),
            "{\"id\": \"../x\", \"text\": \"hi\"}\n".to_string(),
        ] {
            let mut raw = UnixStream::connect_addr(&addr).unwrap();
            raw.write_all(line.as_bytes()).unwrap();
            let (conn, _) = listener.accept().unwrap();
            assert!(accept(&conn).is_none(), "{line}");
        }
    }
}
