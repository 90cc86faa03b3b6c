//! The durable record of Flows under `.baton/state/flows/`:
//!
//! ```text
//! <id>.events.jsonl   the event log: source of truth, append-only, one fsynced line per event
//! <id>.json           snapshot of the folded state (temp file, fsync, rename); never read back as truth
//! <id>/roles/         the frozen roles as Markdown files
//! <id>/patches/       review packets' patches, `<unit>-<attempt>.patch`
//! ```

use std::path::{Path, PathBuf};

use baton_state::{Durability, IdError, JsonlLog, LogError, StateDir};

use crate::event::{FlowEvent, Record};
use crate::state::FlowState;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no Flow `{id}` in {dir}; `baton flow status` lists the Flows of this repository")]
    NotFound { id: String, dir: String },
    #[error("Flow id {0}")]
    BadId(#[from] IdError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("{path}: the log does not start with `flow.created`")]
    NoStart { path: String },
}

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
    state: StateDir,
}

impl FlowStore {
    /// The Flows of the state folder `state` (its `flows/`).
    pub fn new(state: StateDir) -> Self {
        FlowStore { state }
    }

    /// `<repo>/.baton/state/flows`.
    pub fn for_repo(repo_root: &Path) -> Self {
        FlowStore::new(StateDir::for_project(repo_root))
    }

    /// The folder of the logs and snapshots.
    pub fn dir(&self) -> PathBuf {
        self.state.flows()
    }

    pub fn events_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        Ok(self.state.flow_events(id)?)
    }

    pub fn snapshot_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        Ok(self.state.flow_snapshot(id)?)
    }

    pub fn flow_dir(&self, id: &str) -> Result<PathBuf, StoreError> {
        Ok(self.state.flow_dir(id)?)
    }

    /// The ids of the Flows with a log, oldest first.
    pub fn list(&self) -> Vec<String> {
        StateDir::list_ids(&self.dir(), ".events.jsonl")
    }

    fn not_found(&self, id: &str) -> impl FnOnce(LogError) -> StoreError + '_ {
        let id = id.to_string();
        move |e| match e {
            LogError::NotFound { .. } => StoreError::NotFound {
                id,
                dir: self.dir().display().to_string(),
            },
            other => StoreError::Log(other),
        }
    }

    /// The complete records of the log (a torn last line is left out).
    pub fn read_records(&self, id: &str) -> Result<Vec<Record>, StoreError> {
        let path = self.events_path(id)?;
        JsonlLog::<Record>::read(&path).map_err(self.not_found(id))
    }

    pub fn load(&self, id: &str) -> Result<FlowState, StoreError> {
        let records = self.read_records(id)?;
        FlowState::from_records(&records).ok_or_else(|| StoreError::NoStart {
            path: self
                .dir()
                .join(format!("{id}.events.jsonl"))
                .display()
                .to_string(),
        })
    }

    pub fn create(&self, id: &str, crash: Option<CrashHook>) -> Result<FlowLog, StoreError> {
        let path = self.events_path(id)?;
        let log = JsonlLog::create(&path, Durability::Fsync)?;
        Ok(FlowLog {
            log,
            next_seq: 1,
            crash,
        })
    }

    /// Opens the log for appending; a torn last line is cut off first.
    pub fn open(&self, id: &str, crash: Option<CrashHook>) -> Result<FlowLog, StoreError> {
        let path = self.events_path(id)?;
        let (log, records) =
            JsonlLog::<Record>::open(&path, Durability::Fsync).map_err(self.not_found(id))?;
        Ok(FlowLog {
            log,
            next_seq: records.last().map_or(1, |r| r.seq + 1),
            crash,
        })
    }

    pub fn write_snapshot(&self, state: &FlowState) -> Result<(), StoreError> {
        let path = self.snapshot_path(&state.id)?;
        Ok(baton_state::write_snapshot(&path, state)?)
    }
}

#[derive(Debug)]
pub struct FlowLog {
    log: JsonlLog<Record>,
    next_seq: u64,
    crash: Option<CrashHook>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub record: Record,
    /// The crash hook matched this event ([`CrashMode::Error`]); the caller must stop now.
    pub crash: bool,
}

impl FlowLog {
    pub fn path(&self) -> &Path {
        self.log.path()
    }

    pub fn write(&mut self, event: &FlowEvent) -> Result<Written, StoreError> {
        let record = Record {
            seq: self.next_seq,
            at: now_rfc3339(),
            event: event.clone(),
        };
        self.log.append(&record)?;
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

pub use baton_state::now_rfc3339;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn torn_last_line_is_ignored_and_cut_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let store = FlowStore::new(StateDir::at(dir.path()));
        let mut log = store.create("f1", None).unwrap();
        log.write(&FlowEvent::Halted {
            reason: "first".into(),
        })
        .unwrap();
        log.write(&FlowEvent::ImplementersSettled).unwrap();
        drop(log);
        let path = store.events_path("f1").unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"{\"seq\":3,\"at\":\"x\",\"type\":\"flow.hal").unwrap();
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
