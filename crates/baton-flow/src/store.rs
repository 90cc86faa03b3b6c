//! The durable record of Flows under `.baton/state/flows/`:
//!
//! ```text
//! <id>.events.jsonl   the event log: source of truth, append-only, one fsynced line per event
//! <id>.json           snapshot of the folded state (temp file, fsync, rename); never read back as truth
//! <id>/roles/         the frozen roles as Markdown files
//! <id>/patches/       review packets' patches, `<unit>-<attempt>.patch`
//! ```

use std::path::{Path, PathBuf};

use baton_state::{Damage, Durability, IdError, JsonlLog, LogError, StateDir};

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

    /// The complete records of the log (a torn last line is left out), checked: an unreadable
    /// line, NUL bytes or records out of sequence are [`LogError::Damaged`].
    pub fn read_records(&self, id: &str) -> Result<Vec<Record>, StoreError> {
        let path = self.events_path(id)?;
        JsonlLog::<Record>::read_sequenced(&path, |r| r.seq).map_err(self.not_found(id))
    }

    /// The Flow's state, folded from its log and checked against its snapshot: a snapshot that
    /// records more events than the log holds means the log lost its end (a merged unit would
    /// run again): [`LogError::Damaged`], naming both files and the events lost.
    pub fn load(&self, id: &str) -> Result<FlowState, StoreError> {
        let path = self.events_path(id)?;
        let snapshot = self.snapshot_path(id)?;
        // Read before the log: it is written after its events, so it never records more than
        // the log holds, even while a driver appends. It is never read back as truth, only as a
        // witness of how far the log went.
        let claims = baton_state::read_snapshot::<serde_json::Value>(&snapshot)
            .ok()
            .flatten()
            .filter(|s| s.get("id").and_then(serde_json::Value::as_str) == Some(id))
            .and_then(|s| s.get("last_seq").and_then(serde_json::Value::as_u64));
        let bytes = std::fs::read(&path).map_err(|source| {
            self.not_found(id)(match source.kind() {
                std::io::ErrorKind::NotFound => LogError::NotFound { path: path.clone() },
                _ => LogError::Io {
                    path: path.clone(),
                    source,
                },
            })
        })?;
        let records = baton_state::parse_records(&path, &bytes, Some(|r: &Record| r.seq))?;
        let state = FlowState::from_records(&records).ok_or_else(|| StoreError::NoStart {
            path: path.display().to_string(),
        })?;
        if let Some(claims) = claims.filter(|c| *c > state.last_seq) {
            let lines = baton_state::damage::lines(&path, &bytes).map_err(LogError::Damaged)?;
            return Err(StoreError::Log(LogError::Damaged(lines.behind_snapshot(
                &snapshot,
                claims,
                state.last_seq,
            ))));
        }
        Ok(state)
    }

    /// Rebuilds a damaged Flow record from its intact part: the log cut to the lines before the
    /// damage and the snapshot written from them again, both damaged files kept beside them as
    /// `*.damaged` (with nothing intact, the whole record is set aside). The caller holds the
    /// repository's Flow lock. Returns the damage and the files set aside; `None` when the
    /// record is intact (nothing is changed).
    pub fn repair(&self, id: &str) -> Result<Option<(Damage, Vec<PathBuf>)>, StoreError> {
        let damage = match self.load(id) {
            Ok(_) => return Ok(None),
            Err(StoreError::Log(LogError::Damaged(d))) => *d,
            Err(e) => return Err(e),
        };
        let path = self.events_path(id)?;
        let snapshot = self.snapshot_path(id)?;
        let io = |p: &Path| {
            let path = p.to_path_buf();
            move |source| StoreError::Log(LogError::Io { path, source })
        };
        let mut aside = Vec::new();
        let len = std::fs::metadata(&path).map_err(io(&path))?.len();
        if damage.intact == 0 {
            aside.extend(baton_state::damage::set_aside(&path).map_err(io(&path))?);
        } else if damage.intact_len < len {
            aside.push(
                baton_state::damage::keep_intact(&path, damage.intact_len).map_err(io(&path))?,
            );
        }
        aside.extend(baton_state::damage::set_aside(&snapshot).map_err(io(&snapshot))?);
        if damage.intact > 0 {
            let state = self.load(id)?;
            self.write_snapshot(&state)?;
        }
        Ok(Some((damage, aside)))
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

    /// Opens the log for appending; a torn last line is cut off first (damage is refused and
    /// nothing is cut: callers [`FlowStore::load`] first, which also checks the snapshot).
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

    /// A snapshot ahead of the log (the log lost its end) and NUL bytes are damage: refused,
    /// nothing changed; `repair` keeps the intact part and sets the damaged files aside.
    #[test]
    fn a_log_behind_its_snapshot_or_with_zeros_is_damage_until_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let store = FlowStore::new(StateDir::at(dir.path()));
        let spec = baton_roles::builtin_roles()
            .unwrap()
            .into_iter()
            .find(|r| r.name() == "implementer")
            .unwrap();
        let mut log = store.create("f1", None).unwrap();
        log.write(&FlowEvent::Created {
            id: "f1".into(),
            created: "t".into(),
            repo_root: "/r".into(),
            main_branch: "main".into(),
            main_oid: "0".into(),
            worktree_root: "/w".into(),
            units: Vec::new(),
            workflow: None,
            implementer: Some(crate::event::FrozenRole {
                spec,
                backend: baton_protocol::role::BackendKind::Command,
                file: "/r/i.md".into(),
            }),
            reviewer: None,
            temporal: None,
        })
        .unwrap();
        drop(log);
        let path = store.events_path("f1").unwrap();
        let created = std::fs::read_to_string(&path).unwrap();
        let state = store.load("f1").unwrap();
        let mut ahead = state.clone();
        ahead.last_seq = 4;
        store.write_snapshot(&ahead).unwrap();
        let err = store.load("f1").unwrap_err().to_string();
        assert!(
            err.contains("f1.events.jsonl: line 2 is where the log ends, after event 1")
                && err.contains("events 2–4 are lost")
                && err.contains("baton repair f1"),
            "{err}"
        );
        let (damage, aside) = store.repair("f1").unwrap().unwrap();
        assert_eq!((damage.intact, aside.len()), (1, 1));
        assert_eq!(store.load("f1").unwrap().last_seq, 1);
        std::fs::write(&path, format!("{created}\0\0\0\0")).unwrap();
        let err = store.load("f1").unwrap_err().to_string();
        assert!(
            err.contains("line 2 is an unfinished last line that 4 NUL bytes"),
            "{err}"
        );
        assert!(store.open("f1", None).is_err());
        assert!(std::fs::read(&path).unwrap().ends_with(b"\0\0\0\0"));
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
