//! The durable record of Flows under `.baton/state/flows/`:
//!
//! ```text
//! <id>.events.jsonl   the event log: source of truth, append-only, one fsynced line per event
//! <id>.json           snapshot of the folded state (temp file, fsync, rename); never read back as truth
//! <id>/roles/         the frozen roles as Markdown files
//! <id>/patches/       review packets' patches, `<unit>-<attempt>.patch`
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::event::{FlowEvent, Record};
use crate::state::FlowState;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no Flow `{id}` in {dir}; `baton flow status` lists the Flows of this repository")]
    NotFound { id: String, dir: String },
    #[error("`{0}` is not a Flow id (ids use letters, digits and `-`)")]
    BadId(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{path}: line {line} is not a Flow event: {message}")]
    Corrupt {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: the log does not start with `flow.created`")]
    NoStart { path: String },
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |e| StoreError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Makes the process stop right after a given event is durable, to test recovery.
///
/// Test hook, read by the CLI from `BATON_FLOW_CRASH_AT=<event type>[@<unit id>]`: after writing
/// and fsyncing the first matching event the process sends itself SIGKILL, as if killed at that
/// instant (no destructor, no cleanup, no core file).
/// Library tests use [`CrashMode::Error`], which returns [`crate::FlowError::SimulatedCrash`]
/// instead, so that nothing else happens in that run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashHook {
    pub kind: String,
    pub unit: Option<String>,
    pub mode: CrashMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// SIGKILL to the own process.
    Kill,
    /// Return an error from the step that wrote the event.
    Error,
}

impl CrashHook {
    /// Parses `<event type>[@<unit id>]`.
    pub fn parse(spec: &str, mode: CrashMode) -> Option<CrashHook> {
        let spec = spec.trim();
        if spec.is_empty() {
            return None;
        }
        let (kind, unit) = match spec.split_once('@') {
            Some((k, u)) => (k.to_string(), Some(u.to_string())),
            None => (spec.to_string(), None),
        };
        Some(CrashHook { kind, unit, mode })
    }

    pub fn matches(&self, ev: &FlowEvent) -> bool {
        ev.kind() == self.kind
            && match &self.unit {
                None => true,
                Some(u) => ev.unit() == Some(u.as_str()),
            }
    }
}

/// The flows folder of one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowStore {
    dir: PathBuf,
}

impl FlowStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FlowStore { dir: dir.into() }
    }

    /// `<repo>/.baton/state/flows`.
    pub fn for_repo(repo_root: &Path) -> Self {
        FlowStore::new(repo_root.join(".baton").join("state").join("flows"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn check_id(id: &str) -> Result<(), StoreError> {
        if id.is_empty()
            || id.len() > 64
            || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(StoreError::BadId(id.to_string()));
        }
        Ok(())
    }

    pub fn events_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        Self::check_id(id)?;
        Ok(self.dir.join(format!("{id}.events.jsonl")))
    }

    pub fn snapshot_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        Self::check_id(id)?;
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// `<id>/`, for frozen roles and patches.
    pub fn flow_dir(&self, id: &str) -> Result<PathBuf, StoreError> {
        Self::check_id(id)?;
        Ok(self.dir.join(id))
    }

    /// Ids of every Flow in the folder, oldest first (ids start with their creation time).
    pub fn list(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".events.jsonl"))
                    .map(str::to_string)
            })
            .filter(|id| Self::check_id(id).is_ok())
            .collect();
        ids.sort();
        ids
    }

    /// Reads a Flow's log. A torn last line (the process died mid-write) is ignored.
    pub fn read_records(&self, id: &str) -> Result<Vec<Record>, StoreError> {
        let path = self.events_path(id)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    id: id.to_string(),
                    dir: self.dir.display().to_string(),
                })
            }
            Err(e) => return Err(io_err(&path)(e)),
        };
        let complete = match text.rfind('\n') {
            Some(i) => &text[..i],
            None => "",
        };
        let mut records = Vec::new();
        for (n, line) in complete.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let r: Record = serde_json::from_str(line).map_err(|e| StoreError::Corrupt {
                path: path.display().to_string(),
                line: n + 1,
                message: e.to_string(),
            })?;
            records.push(r);
        }
        Ok(records)
    }

    /// The state the log adds up to.
    pub fn load(&self, id: &str) -> Result<FlowState, StoreError> {
        let records = self.read_records(id)?;
        FlowState::from_records(&records).ok_or_else(|| StoreError::NoStart {
            path: self
                .dir
                .join(format!("{id}.events.jsonl"))
                .display()
                .to_string(),
        })
    }

    /// Creates a new, empty log (failing if one exists); its first event must be `flow.created`.
    pub fn create(&self, id: &str, crash: Option<CrashHook>) -> Result<FlowLog, StoreError> {
        std::fs::create_dir_all(&self.dir).map_err(io_err(&self.dir))?;
        let path = self.events_path(id)?;
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        // Make the new file's directory entry durable too.
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(FlowLog {
            file,
            path,
            next_seq: 1,
            crash,
        })
    }

    /// Opens an existing log for appending.
    pub fn open(&self, id: &str, crash: Option<CrashHook>) -> Result<FlowLog, StoreError> {
        let records = self.read_records(id)?;
        let path = self.events_path(id)?;
        // Cut a torn last line so the next event starts on a line of its own.
        let len = std::fs::metadata(&path).map_err(io_err(&path))?.len();
        let text = std::fs::read(&path).map_err(io_err(&path))?;
        let keep = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1) as u64;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        if keep < len {
            file.set_len(keep).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
        }
        Ok(FlowLog {
            file,
            path,
            next_seq: records.last().map_or(1, |r| r.seq + 1),
            crash,
        })
    }

    /// Writes the snapshot: temp file, fsync, rename, fsync of the folder.
    pub fn write_snapshot(&self, state: &FlowState) -> Result<(), StoreError> {
        let path = self.snapshot_path(&state.id)?;
        let tmp = self.dir.join(format!(".{}.json.tmp", state.id));
        let bytes = serde_json::to_vec_pretty(state).map_err(|e| StoreError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
        f.write_all(&bytes).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// An open event log.
#[derive(Debug)]
pub struct FlowLog {
    file: File,
    path: PathBuf,
    next_seq: u64,
    crash: Option<CrashHook>,
}

/// What [`FlowLog::write`] reports besides the record.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub record: Record,
    /// The crash hook matched this event ([`CrashMode::Error`]); the caller must stop now.
    pub crash: bool,
}

impl FlowLog {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event as a line and fsyncs it. With a matching [`CrashMode::Kill`] hook the
    /// process kills itself once the line is durable.
    pub fn write(&mut self, event: &FlowEvent) -> Result<Written, StoreError> {
        let record = Record {
            seq: self.next_seq,
            at: now_rfc3339(),
            event: event.clone(),
        };
        let mut line = serde_json::to_string(&record).map_err(|e| StoreError::Io {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(io_err(&self.path))?;
        self.file.sync_data().map_err(io_err(&self.path))?;
        self.next_seq += 1;
        let crash = match &self.crash {
            Some(hook) if hook.matches(event) => match hook.mode {
                CrashMode::Kill => {
                    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                    std::process::abort()
                }
                CrashMode::Error => {
                    // Fire once: a resumed run in the same process must be able to pass this point.
                    self.crash = None;
                    true
                }
            },
            Some(_) | None => false,
        };
        Ok(Written { record, crash })
    }
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn torn_last_line_is_ignored_and_cut_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let store = FlowStore::new(dir.path());
        let mut log = store.create("f1", None).unwrap();
        log.write(&FlowEvent::Halted {
            reason: "first".into(),
        })
        .unwrap();
        log.write(&FlowEvent::ImplementersSettled).unwrap();
        drop(log);
        let path = store.events_path("f1").unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"seq\":3,\"at\":\"x\",\"type\":\"flow.hal")
            .unwrap();
        assert_eq!(store.read_records("f1").unwrap().len(), 2);
        let mut log = store.open("f1", None).unwrap();
        let w = log.write(&FlowEvent::ImplementersSettled).unwrap();
        assert_eq!(w.record.seq, 3);
        let records = store.read_records("f1").unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(store.list(), vec!["f1".to_string()]);
        assert!(matches!(
            store.read_records("nope"),
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            store.events_path("../x"),
            Err(StoreError::BadId(_))
        ));
    }

    #[test]
    fn crash_hook_matches_type_and_unit() {
        let hook = CrashHook::parse("unit.merging@b", CrashMode::Error).unwrap();
        assert!(hook.matches(&FlowEvent::Merging {
            unit: "b".into(),
            tip: "x".into()
        }));
        assert!(!hook.matches(&FlowEvent::Merging {
            unit: "a".into(),
            tip: "x".into()
        }));
        assert!(CrashHook::parse(" ", CrashMode::Kill).is_none());
    }
}
