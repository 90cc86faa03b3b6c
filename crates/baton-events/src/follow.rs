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
        loop {
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
        Some(w)
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
    let Some(watcher) = watcher.as_mut() else {
        return Ok(());
    };
    loop {
        let batch = match watcher.wait()? {
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
        };
        deliver(batch)?;
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
}
