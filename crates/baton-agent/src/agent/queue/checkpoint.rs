//! Checkpoints of the project's files, one per prompt that changed them, and `/undo` back to one.
//!
//! The loop itself takes them: right before a prompt's first tool call that may write, the tree
//! is saved (`baton_git::snapshot::commit`, untracked files included), and once the prompt is
//! answered it is saved again. Taken from a front end's event stream instead, the first would
//! race the call's write. Outside a git repository no checkpoint is taken. `/undo N` puts back
//! what checkpoint N and every later one changed, keeping every file changed by hand in between
//! or since (`baton_git::rewind`), and tells the model with the next input.

use baton_git::rewind::{self, Span};
use baton_protocol::AgentEvent;

use baton_protocol::Message;

use super::{Drive, Running, Seat};
use crate::session::{checkpoints_of, Checkpoint};

/// The session's checkpoints and the one the current prompt may leave.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    /// Those that can be undone, oldest first.
    saved: Vec<Checkpoint>,
    next: u32,
    /// The prompt being answered: its first line, and the tree before its first writing call
    /// once taken.
    prompt: Option<(String, Option<String>)>,
    /// The folder is in no git repository: nothing to save.
    off: bool,
    /// What the model is told with the next input: files were put back.
    note: Option<String>,
}

impl Checkpoints {
    /// The checkpoints a resumed transcript left at `path` (none for a new session); `on`
    /// false takes none (a delegated child).
    pub(crate) fn resumed(path: Option<&std::path::Path>, on: bool) -> Checkpoints {
        let (saved, next) = path.map_or((Vec::new(), 1), checkpoints_of);
        Checkpoints {
            saved,
            next,
            off: !on,
            ..Checkpoints::default()
        }
    }

    /// A prompt begins: the text it sends, with the note of an undo before it.
    pub(crate) fn begin(&mut self, text: String) -> String {
        let first = text.lines().next().unwrap_or_default();
        let first: String = first.chars().take(80).collect();
        self.prompt = Some((first, None));
        match self.note.take() {
            Some(note) => format!("{note}\n\n{text}"),
            None => text,
        }
    }
}

impl Running<'_> {
    /// One prompt: the user's words (after an undo, with its note), the work, and the
    /// checkpoint it leaves.
    pub(crate) async fn prompt(&mut self, seat: Option<&mut Seat>, text: String) -> Drive {
        let text = self.checkpoints.begin(text);
        let last = match seat {
            Some(seat) => {
                self.push(seat, Message::user(text));
                self.drive(seat).await
            }
            None => super::routed::task(self, text).await,
        };
        self.checkpoint_after().await;
        last
    }

    /// Before `calls` of `seat`, when one may write (a tool that is not read-only, or one the
    /// seat does not offer): the tree as it is, once per prompt.
    pub(crate) async fn checkpoint_before_writes(
        &mut self,
        seat: &Seat,
        calls: &[(String, String, String)],
    ) {
        let c = &mut self.checkpoints;
        if c.off || !matches!(c.prompt, Some((_, None))) {
            return;
        }
        let writes = calls.iter().any(|(_, name, _)| {
            seat.offered
                .iter()
                .find(|t| t.name() == name)
                .is_none_or(|t| !t.read_only())
        });
        if !writes {
            return;
        }
        match snapshot(self.spec.cwd.clone()).await {
            Some(tree) => {
                if let Some((_, before)) = &mut self.checkpoints.prompt {
                    *before = Some(tree);
                }
            }
            None => self.checkpoints.off = true,
        }
    }

    /// The prompt is answered: when it may have written, the tree again, and a checkpoint when
    /// files changed.
    pub(crate) async fn checkpoint_after(&mut self) {
        let Some((input, Some(before))) = self.checkpoints.prompt.take() else {
            return;
        };
        let cwd = self.spec.cwd.clone();
        let Some(after) = snapshot(cwd.clone()).await else {
            return;
        };
        let (b, a) = (before.clone(), after.clone());
        let files = tokio::task::spawn_blocking(move || changed_files(&cwd, &b, &a))
            .await
            .unwrap_or(0);
        if files == 0 {
            return;
        }
        let c = Checkpoint {
            checkpoint: self.checkpoints.next,
            input,
            before,
            after,
            files,
        };
        self.checkpoints.next += 1;
        if let Some(store) = self.store.as_mut() {
            if let Err(e) = store.checkpoint(&c) {
                tracing::warn!("cannot record checkpoint {}: {e}", c.checkpoint);
            }
        }
        (self.emit)(AgentEvent::CheckpointSaved {
            checkpoint: c.checkpoint,
            input: c.input.clone(),
            files: c.files,
        });
        self.checkpoints.saved.push(c);
    }

    /// `/undo N`: the files of checkpoint `n` and every later one back as they were before it.
    pub(crate) async fn undo(&mut self, n: u32) {
        let spans: Vec<Span> = self
            .checkpoints
            .saved
            .iter()
            .filter(|c| c.checkpoint >= n)
            .map(|c| Span {
                before: c.before.clone(),
                after: c.after.clone(),
            })
            .collect();
        let refuse = |s: &mut Running<'_>, reason: String| {
            (s.emit)(AgentEvent::InputRefused {
                input: format!("/undo {n}"),
                reason,
            });
        };
        if !self.checkpoints.saved.iter().any(|c| c.checkpoint == n) {
            let have: Vec<String> = self
                .checkpoints
                .saved
                .iter()
                .map(|c| c.checkpoint.to_string())
                .collect();
            let reason = if have.is_empty() {
                "no checkpoint to undo: none of this session's prompts changed files in a git repository (or they were undone already)".to_string()
            } else {
                format!(
                    "no checkpoint {n}: the checkpoints that can be undone are {}",
                    have.join(", ")
                )
            };
            return refuse(self, reason);
        }
        let cwd = self.spec.cwd.clone();
        let done = match tokio::task::spawn_blocking(move || rewind::undo(&cwd, &spans)).await {
            Ok(Ok(done)) => done,
            Ok(Err(e)) => return refuse(self, format!("nothing was put back: {e}")),
            Err(e) => return refuse(self, format!("nothing was put back: {e}")),
        };
        let input = self
            .checkpoints
            .saved
            .iter()
            .find(|c| c.checkpoint == n)
            .map(|c| c.input.clone())
            .unwrap_or_default();
        self.checkpoints.saved.retain(|c| c.checkpoint < n);
        if let Some(store) = self.store.as_mut() {
            if let Err(e) = store.undone(n) {
                tracing::warn!("cannot record the undo of checkpoint {n}: {e}");
            }
        }
        let mut note = format!(
            "[baton] The user undid the file changes made since the prompt \"{input}\": the files are back as they were before it."
        );
        let mut list = |what: &str, files: &[String]| {
            if !files.is_empty() {
                note.push_str(&format!(" {what}: {}.", files.join(", ")));
            }
        };
        list("Put back", &done.restored);
        list("Removed again", &done.removed);
        list("Kept as the user changed them by hand", &done.kept);
        let failed: Vec<String> = done
            .failed
            .iter()
            .map(|(p, why)| format!("{p}: {why}"))
            .collect();
        list("Could not be put back", &failed);
        self.checkpoints.note = Some(note);
        (self.emit)(AgentEvent::SessionUndone {
            checkpoint: n,
            restored: done.restored,
            removed: done.removed,
            kept: done.kept,
            failed,
        });
    }
}

/// The tree of `cwd` now, off the async threads; `None` outside git.
async fn snapshot(cwd: std::path::PathBuf) -> Option<String> {
    tokio::task::spawn_blocking(move || baton_git::snapshot::commit(&cwd))
        .await
        .ok()
        .flatten()
}

fn changed_files(cwd: &std::path::Path, before: &str, after: &str) -> usize {
    baton_git::Git::new(cwd)
        .run_output(["diff", "--no-renames", "--name-only", "-z", before, after])
        .ok()
        .filter(|o| o.status.success())
        .map_or(0, |o| {
            o.stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .count()
        })
}
