//! The routing journal: `.baton/state/sessions/<session id>.journal`, one [`Record`] per JSON
//! line, fsynced, beside the session's transcript (`<session id>.jsonl`; the other name keeps
//! the journal out of the session list). The state is the fold of its records; a
//! restarted session reopens it, folds it, and ends any execution the killed process left
//! running (`recover`).

use std::path::{Path, PathBuf};

use baton_state::{Durability, JsonlLog, LogError, StateDir};

use super::rules;
use super::state::{Event, ExecutionEnd, FoldError, Record, RoutingState};

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Fold(#[from] FoldError),
}

/// An open journal and the state it folds into.
#[derive(Debug)]
pub struct Journal {
    log: JsonlLog<Record>,
    state: RoutingState,
    /// How many records the journal holds (names the operations of a restart uniquely).
    len: usize,
}

/// Where the journal of session `id` lives.
pub fn path(state_dir: &StateDir, id: &str) -> PathBuf {
    state_dir.sessions().join(format!("{id}.journal"))
}

impl Journal {
    /// Opens the journal at `path`, creating it when there is none, and folds it.
    pub fn open(path: &Path) -> Result<Journal, JournalError> {
        let (log, records) = match JsonlLog::open(path, Durability::Fsync) {
            Ok(x) => x,
            Err(LogError::NotFound { .. }) => {
                (JsonlLog::create(path, Durability::Fsync)?, Vec::new())
            }
            Err(e) => return Err(e.into()),
        };
        let state = RoutingState::fold(&records)?;
        Ok(Journal {
            log,
            state,
            len: records.len(),
        })
    }

    /// The records of the journal at `path`, read without opening it for writing.
    pub fn read(path: &Path) -> Result<Vec<Record>, JournalError> {
        Ok(JsonlLog::read(path)?)
    }

    /// How many records the journal holds.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn state(&self) -> &RoutingState {
        &self.state
    }

    pub fn path(&self) -> &Path {
        self.log.path()
    }

    /// Writes `events` of operation `op` at `step` in one write, durable before they are applied.
    /// Events whose key is already in the journal are skipped, so committing an operation again
    /// after a crash changes nothing twice.
    pub fn commit(&mut self, op: &str, step: &str, events: Vec<Event>) -> Result<(), JournalError> {
        let mut next = self.state.clone();
        let mut records = Vec::new();
        for event in events {
            let record = Record {
                op: op.to_string(),
                step: step.to_string(),
                event,
            };
            if next.apply(&record)? {
                records.push(record);
            }
        }
        self.log.append_all(&records)?;
        self.len += records.len();
        self.state = next;
        Ok(())
    }

    /// After a restart: an execution the journal shows running was lost with the process that
    /// ran it. The host saves a partial report for it (what the transcript shows it said last is
    /// `last_words`) and hands it to the Coordinator; `/resume` can then continue the assignment.
    /// An `act_bounded` scope open at the restart ends there: its context is lost.
    pub fn recover(&mut self, last_words: &str) -> Result<bool, JournalError> {
        if let Some(end) = rules::end_act_bounded(&self.state, "the session restarted") {
            let op = format!("restart-{}", self.len);
            self.commit(&op, "recovery", vec![end])?;
        }
        // A contract delivered whose execution never started (the process died between the
        // two records): recorded as started here, so that it ends `lost` below like any other
        // and the Coordinator is responsible again, with the assignment resumable.
        let never_started = self.state.running().is_none()
            && self
                .state
                .outstanding()
                .is_some_and(|a| a.executions.is_empty());
        if never_started {
            if let Some(events) = rules::start_execution(&self.state) {
                let op = format!("restart-{}", self.len);
                self.commit(&op, "recovery-start", events)?;
            }
        }
        let Some((_, running)) = self.state.running() else {
            return Ok(false);
        };
        let op = format!("recover-{}", running.id);
        let Some(events) = rules::host_return(
            &self.state,
            ExecutionEnd::Lost,
            last_words,
            vec!["the execution's partial effects in the workspace were not reviewed".into()],
        ) else {
            return Ok(false);
        };
        self.commit(&op, "recovery", events)?;
        Ok(true)
    }
}
