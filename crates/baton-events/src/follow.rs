//! Following the logs as they grow, with inotify(7): no polling.
//!
//! The [`Watcher`] watches the folders of the logs (`sessions/`, `tasks/`, `flows/`,
//! `workflows/`) for lines appended and files created; a folder that does not exist yet is
//! awaited by watching its nearest existing ancestor up to the project root, and watched as soon
//! as it appears. Watches are set up *before* the logs are read, so nothing appended in between
//! is missed: a change is either in what the first read found or reported after it (or both,
//! and the reader, which reads from where it left each log, shows it once).

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use crate::feed::{Feed, FeedError};
use crate::Event;

/// What woke the watcher up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// Files written or created in the watched log folders: `(folder, file name)`.
    Files(Vec<(PathBuf, OsString)>),
    /// A log folder appeared or went, or the kernel's queue overflowed: read everything.
    Rescan,
    /// The other file given to [`Watcher::wait_or`] is readable.
    Other,
}

#[derive(Debug)]
pub struct Watcher {
    inotify: Inotify,
    /// The log folders to watch.
    targets: Vec<PathBuf>,
    /// The highest folder an ancestor watch may be set on.
    root: PathBuf,
    /// What is watched now: the folder, and whether it is a log folder (else an ancestor).
    watches: HashMap<WatchDescriptor, (PathBuf, bool)>,
}

const LOG_EVENTS: AddWatchFlags = AddWatchFlags::IN_MODIFY
    .union(AddWatchFlags::IN_CREATE)
    .union(AddWatchFlags::IN_MOVED_TO)
    .union(AddWatchFlags::IN_DELETE_SELF)
    .union(AddWatchFlags::IN_MOVE_SELF);

const ANCESTOR_EVENTS: AddWatchFlags = AddWatchFlags::IN_CREATE
    .union(AddWatchFlags::IN_MOVED_TO)
    .union(AddWatchFlags::IN_ONLYDIR);

impl Watcher {
    /// A watcher of `targets`, folders under `root`; call [`Watcher::arm`] before reading.
    pub fn new(targets: Vec<PathBuf>, root: PathBuf) -> std::io::Result<Watcher> {
        let inotify = Inotify::init(InitFlags::IN_CLOEXEC).map_err(std::io::Error::from)?;
        Ok(Watcher {
            inotify,
            targets,
            root,
            watches: HashMap::new(),
        })
    }

    /// Watches every log folder that exists, and for each that does not the nearest existing
    /// ancestor (up to the root); removes watches no longer needed.
    ///
    /// A folder created below an ancestor before its watch was in place sends no event, so the
    /// watches are set again until a pass adds none: what was created before a watch is found by
    /// the next pass, what is created after it is reported by it.
    pub fn arm(&mut self) -> std::io::Result<()> {
        while self.arm_once()? {}
        Ok(())
    }

    /// One pass of [`Watcher::arm`]; true when it added a watch.
    fn arm_once(&mut self) -> std::io::Result<bool> {
        let mut added = false;
        let mut wanted: Vec<(PathBuf, bool)> = Vec::new();
        for t in &self.targets {
            if t.is_dir() {
                wanted.push((t.clone(), true));
                continue;
            }
            let ancestor = t
                .ancestors()
                .skip(1)
                .take_while(|a| a.starts_with(&self.root))
                .find(|a| a.is_dir());
            if let Some(a) = ancestor {
                if !wanted.iter().any(|(w, _)| w == a) {
                    wanted.push((a.to_path_buf(), false));
                }
            }
        }
        let stale: Vec<WatchDescriptor> = self
            .watches
            .iter()
            .filter(|(_, w)| !wanted.contains(w))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in stale {
            self.watches.remove(&wd);
            // The kernel may have dropped it already (the folder went).
            let _ = self.inotify.rm_watch(wd);
        }
        for (dir, is_target) in wanted {
            if self
                .watches
                .values()
                .any(|(d, t)| *d == dir && *t == is_target)
            {
                continue;
            }
            let flags = if is_target {
                LOG_EVENTS
            } else {
                ANCESTOR_EVENTS
            };
            match self.inotify.add_watch(&dir, flags) {
                Ok(wd) => {
                    self.watches.insert(wd, (dir, is_target));
                    added = true;
                }
                // Gone between the check and the watch: the next rescan sees it.
                Err(nix::errno::Errno::ENOENT) => {}
                Err(e) => {
                    return Err(std::io::Error::other(format!(
                        "{}: cannot watch for new events (inotify): {e}",
                        dir.display()
                    )))
                }
            }
        }
        Ok(added)
    }

    /// Blocks until a watched folder changes, then says what changed (re-arming the watches when
    /// folders appeared or went).
    pub fn wait(&mut self) -> std::io::Result<Wake> {
        self.wait_or(None)
    }

    /// [`Watcher::wait`], or until `other` is readable ([`Wake::Other`], which comes first when
    /// both are ready).
    pub fn wait_or(&mut self, other: Option<BorrowedFd<'_>>) -> std::io::Result<Wake> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        loop {
            let mut fds = vec![PollFd::new(self.inotify.as_fd(), PollFlags::POLLIN)];
            fds.extend(other.map(|fd| PollFd::new(fd, PollFlags::POLLIN)));
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let ready = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
            if fds.get(1).is_some_and(ready) {
                return Ok(Wake::Other);
            }
            if !ready(&fds[0]) {
                continue;
            }
            let events = match self.inotify.read_events() {
                Ok(e) => e,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            let mut files = Vec::new();
            let mut rescan = false;
            for ev in events {
                if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    rescan = true;
                    continue;
                }
                match self.watches.get(&ev.wd) {
                    Some((dir, true)) => {
                        if ev.mask.intersects(
                            AddWatchFlags::IN_DELETE_SELF
                                | AddWatchFlags::IN_MOVE_SELF
                                | AddWatchFlags::IN_IGNORED,
                        ) {
                            rescan = true;
                        } else if let Some(name) = ev.name {
                            files.push((dir.clone(), name));
                        }
                    }
                    Some((_, false)) => rescan = true,
                    None => {}
                }
            }
            if rescan {
                self.arm()?;
                return Ok(Wake::Rescan);
            }
            if !files.is_empty() {
                return Ok(Wake::Files(files));
            }
        }
    }
}

/// Reads `feed` to its end, hands each event to `emit` in order and each error to `report`;
/// with `follow`, then waits for new events and hands them over as they are appended, until
/// `emit` fails (the reader of the output went away).
pub fn stream(
    feed: &mut Feed,
    root: &Path,
    follow: bool,
    emit: &mut dyn FnMut(&Event) -> std::io::Result<()>,
    report: &mut dyn FnMut(&FeedError),
) -> std::io::Result<()> {
    stream_batches(
        feed,
        root,
        follow,
        &mut |events: Vec<Event>| events.iter().try_for_each(&mut *emit),
        report,
    )
}

/// [`stream`], handing over each read's events at once (in order, owned): everything the logs held at
/// the start, then whatever each wake found appended. A reader that sends events on in batches
/// (the web dashboard) knows where a read ends.
pub fn stream_batches(
    feed: &mut Feed,
    root: &Path,
    follow: bool,
    emit: &mut dyn FnMut(Vec<Event>) -> std::io::Result<()>,
    report: &mut dyn FnMut(&FeedError),
) -> std::io::Result<()> {
    let mut watcher = if follow {
        let mut w = Watcher::new(feed.dirs(), root.to_path_buf())?;
        w.arm()?;
        Some((w, InProcess::subscribe()?))
    } else {
        None
    };
    let mut deliver = |(events, errors): crate::feed::Batch| -> std::io::Result<()> {
        for e in &errors {
            report(e);
        }
        if events.is_empty() {
            return Ok(());
        }
        emit(events)
    };
    deliver(feed.poll())?;
    let Some((watcher, own)) = watcher.as_mut() else {
        return Ok(());
    };
    loop {
        let batch = match watcher.wait_or(Some(own.wake.as_fd()))? {
            Wake::Rescan => feed.poll(),
            Wake::Files(files) => {
                let mut sources = Vec::new();
                for (dir, name) in files {
                    let Some(name) = name.to_str() else { continue };
                    if let Some(s) = feed.source_of(&dir, name) {
                        if !sources.contains(&s) {
                            sources.push(s);
                        }
                    }
                }
                feed.poll_sources(sources)
            }
            Wake::Other => {
                let mut batch = crate::feed::Batch::default();
                for line in own.take() {
                    let (events, errors) = feed.take_appended(&line);
                    batch.0.extend(events);
                    batch.1.extend(errors);
                }
                batch
            }
        };
        deliver(batch)?;
    }
}

/// The lines this process appends to its logs ([`baton_state::appended`]), with a socket that
/// is readable while some wait: a follower in the process that writes gets them as they are
/// written, from memory, and its file watch then finds them already read.
struct InProcess {
    lines: baton_protocol::Subscription<baton_state::Appended>,
    wake: std::os::unix::net::UnixStream,
}

impl InProcess {
    fn subscribe() -> std::io::Result<InProcess> {
        let (wake, ring) = std::os::unix::net::UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        ring.set_nonblocking(true)?;
        let lines = baton_state::appended().subscribe_waking(move || {
            // Full means it is readable already.
            let _ = std::io::Write::write(&mut &ring, &[1]);
        });
        Ok(InProcess { lines, wake })
    }

    /// The lines queued so far; the wake bytes are read first, so a line queued after them
    /// rings again.
    fn take(&self) -> Vec<baton_state::Appended> {
        let mut buf = [0u8; 256];
        while std::io::Read::read(&mut &self.wake, &mut buf).is_ok_and(|n| n > 0) {}
        self.lines.drain()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::io::Write as _;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    use baton_protocol::Cursor;
    use baton_state::StateDir;

    use super::*;
    use crate::feed::Filter;

    /// A follower started in a project with no state folder at all sees the logs created later,
    /// in folders created later, each line once it is whole.
    #[test]
    fn logs_and_folders_created_after_the_start_are_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let state = StateDir::for_project(&root);
        let (tx, rx) = channel();
        let mut feed = Feed::new(state.clone(), Filter::default(), Cursor::default());
        let follow_root = root.clone();
        std::thread::spawn(move || {
            let mut emit = |e: &Event| {
                tx.send(e.pos.to_string())
                    .map_err(|_| std::io::Error::other("test over"))
            };
            let mut report = |e: &FeedError| panic!("{e}");
            stream(&mut feed, &follow_root, true, &mut emit, &mut report)
        });
        // The first line may be found by the first read or by inotify; once it is shown the
        // follower waits on inotify, so the later lines and the new folder come through it.
        let next = || rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let flows = state.flows();
        std::fs::create_dir_all(&flows).unwrap();
        let mut f = std::fs::File::create(flows.join("f1.events.jsonl")).unwrap();
        let line = "{\"seq\":1,\"at\":\"2026-12-04T21:00:00Z\",\"type\":\"flow.halted\",\"reason\":\"r\"}\n";
        f.write_all(&line.as_bytes()[..9]).unwrap();
        f.write_all(&line.as_bytes()[9..]).unwrap();
        assert_eq!(next(), "flow/f1:0");
        f.write_all(line.replace("\"seq\":1", "\"seq\":2").as_bytes())
            .unwrap();
        assert_eq!(next(), format!("flow/f1:{}", line.len()));
        std::fs::create_dir_all(state.tasks()).unwrap();
        std::fs::write(
            state.tasks().join("t1.events.jsonl"),
            "{\"type\":\"task.started\",\"pid\":7}\n",
        )
        .unwrap();
        assert_eq!(next(), "task/t1:0");
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "nothing more"
        );
    }

    /// What this process appends while a follower runs in it reaches the follower once each,
    /// as the same events at the same positions a reader of the files gets; another project's
    /// lines are not among them.
    #[test]
    fn what_this_process_appends_is_followed_once_each_as_the_files_hold_it() {
        use baton_state::{Durability, JsonlLog};
        use baton_workflow::route::WorkflowKind;
        use baton_workflow::store::{EventKind, NewEvent, WorkflowStore};
        use serde_json::{json, Value};

        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("a");
        let state = StateDir::for_project(&root);
        let other = StateDir::for_project(&tmp.path().join("b"));
        std::fs::create_dir_all(&root).unwrap();
        let (tx, rx) = channel();
        let mut feed = Feed::new(state.clone(), Filter::default(), Cursor::default());
        let follow_root = root.clone();
        std::thread::spawn(move || {
            let mut emit = |e: &Event| {
                tx.send(e.clone())
                    .map_err(|_| std::io::Error::other("over"))
            };
            stream(&mut feed, &follow_root, true, &mut emit, &mut |e| {
                panic!("{e}")
            })
        });

        let mut wf = WorkflowStore::new(state.clone())
            .create(WorkflowKind::Build, "add a flag")
            .unwrap();
        wf.append(NewEvent::new(EventKind::ArtifactUpdated).reason("one"))
            .unwrap();
        let mut log: JsonlLog<Value> =
            JsonlLog::create(&state.flows().join("fl-1.events.jsonl"), Durability::Fsync).unwrap();
        for n in 1..=3 {
            log.append_all(&[json!({"seq": n, "at": "2026-12-04T21:00:00Z", "type": "flow.halted", "reason": n.to_string()})])
                .unwrap();
        }
        WorkflowStore::new(other)
            .create(WorkflowKind::Build, "elsewhere")
            .unwrap();

        let (mut read, errors) = Feed::new(state, Filter::default(), Cursor::default()).poll();
        assert!(errors.is_empty(), "{errors:?}");
        let mut got: Vec<Event> = (0..read.len())
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert!(
            rx.recv_timeout(Duration::from_millis(100)).is_err(),
            "each line once"
        );
        let order = |e: &Event| (e.source.clone(), e.pos.offset);
        read.sort_by_key(order);
        got.sort_by_key(order);
        assert_eq!(got, read);
        assert_eq!(read.len(), 5, "{read:?}");

        // A line published with no file behind it reaches the follower only from memory.
        baton_state::appended().publish(&baton_state::Appended {
            path: StateDir::for_project(&root)
                .flows()
                .join("fl-mem.events.jsonl"),
            offset: 0,
            line: r#"{"seq":1,"at":"2026-12-04T21:00:01Z","type":"flow.halted","reason":"m"}"#
                .into(),
        });
        let e = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(e.pos.to_string(), "flow/fl-mem:0");
    }
}
