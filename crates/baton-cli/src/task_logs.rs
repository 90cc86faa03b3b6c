//! `baton task logs ID [--follow] [--json]`: a background task's recorded events as lines, and
//! with `--follow` the new ones as they are recorded, until the task ends.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::project::{project_context, state_dir};
use baton_app::task_log::describe;
use baton_exec::background::{self, Phase};

/// How often `--follow` looks for new events.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

pub fn logs(cwd: Option<PathBuf>, id: &str, follow: bool, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let store = state_dir(&ctx);
    let mut shown = 0;
    let mut names: Vec<String> = Vec::new();
    loop {
        // The phase is read before the events: once it is final, the events read after it hold
        // every record up to the end (read after the events, the last records could be missed).
        let phase = if follow {
            Some(background::load(&store, id)?.phase())
        } else {
            None
        };
        let events = background::events(&store, id)?;
        for ev in events.iter().skip(shown) {
            if json_mode {
                if let Ok(line) = serde_json::to_string(ev) {
                    outln!("{line}");
                }
            } else if let Some(line) = describe(ev, &mut names) {
                outln!("{}", baton_text::sanitize_line(&line));
                // The children's answers, once the task is done: what `wait` would print.
                for line in baton_app::task_log::answers(ev) {
                    outln!("{line}");
                }
            }
        }
        shown = shown.max(events.len());
        let Some(phase) = phase else {
            return Ok(Exit::Ok);
        };
        match phase {
            Phase::Starting | Phase::Running => std::thread::sleep(FOLLOW_POLL),
            Phase::Done => return Ok(Exit::Ok),
            Phase::Failed | Phase::Cancelled => return Ok(Exit::Failed),
            Phase::Interrupted => {
                errln!("baton: background task {id} was interrupted: its supervisor ended without finishing");
                return Ok(Exit::Failed);
            }
        }
    }
}
