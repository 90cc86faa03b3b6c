//! Cognitive routing from the command line: the `--routing` control of `baton agent` and `baton
//! chat` (the participants' `[routing]` routes are resolved with the session's config,
//! `baton_app::settings`), and the line reader of `baton chat`,
//! which turns what the user types into submissions (`/profile …`, `/resume`, `/interrupt`,
//! `/quit`, or input). See docs/routing.md.

use std::io::BufRead;

use anyhow::Result;
use baton_agent::agent::Submission;
use baton_agent::routing::state::Control;
use baton_agent::routing::view::parse_profile;
use tokio::sync::mpsc::UnboundedSender;

/// A `--routing` value: `auto`, `coordinator` or `executor` (a manual hold), or `off`.
pub fn parse_control(text: &str) -> Result<Control> {
    parse_profile(text).map_err(|e| anyhow::anyhow!("--routing: {e}"))
}

/// What a line typed to `baton chat` asks for; `None` ends the input (`/quit`, `/exit`).
pub fn parse_line(line: &str) -> Result<Option<Submission>, String> {
    let t = line.trim();
    let Some(command) = t.strip_prefix('/') else {
        return Ok(Some(Submission::Input(line.trim_end().to_string())));
    };
    if let Some(rest) = command.strip_prefix("compact") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            let focus = rest.trim();
            return Ok(Some(Submission::Compact(
                (!focus.is_empty()).then(|| focus.to_string()),
            )));
        }
    }
    let mut words = command.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("profile"), Some(p), None) => parse_profile(p)
            .map(|c| Some(Submission::Control(c)))
            .map_err(|e| format!("/profile: {e}")),
        (Some("profile"), _, _) => Err("/profile takes one word: coordinator, executor or auto".into()),
        (Some("resume"), None, None) => Ok(Some(Submission::Resume)),
        (Some("undo"), Some(n), None) => n
            .trim_start_matches('#')
            .parse::<u32>()
            .map(|n| Some(Submission::Undo(n)))
            .map_err(|_| format!("/undo takes a checkpoint number (`baton: checkpoint N` lines name them), not `{n}`")),
        (Some("undo"), _, _) => Err("/undo takes one checkpoint number: /undo 2".into()),
        (Some("interrupt"), None, None) => Ok(Some(Submission::Interrupt)),
        (Some("quit" | "exit"), None, None) => Ok(None),
        _ => Err(format!(
            "unknown command `{t}`: the commands are /profile coordinator|executor|auto, /resume, /interrupt, /compact [focus], /undo N and /quit"
        )),
    }
}

/// Reads lines from stdin on a thread of its own and sends them to the session. With
/// `wait_idle`, each line waits until the session is idle (a script's lines run one after the
/// other); otherwise a line is sent as soon as it is read, so input typed while the Executor
/// works interrupts it. The session ends when stdin does, or at `/quit`.
pub fn read_lines(
    tx: UnboundedSender<Submission>,
    idle: Option<std::sync::mpsc::Receiver<()>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            match parse_line(&line) {
                Ok(Some(sub)) => {
                    if let Some(idle) = &idle {
                        // The session says when it waits for the next submission.
                        if idle.recv().is_err() {
                            break;
                        }
                    }
                    if tx.send(sub).is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => errln!("baton: {e}"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_agent::routing::state::Profile;

    #[test]
    fn chat_lines_become_submissions() {
        assert_eq!(
            parse_line("fix the test").unwrap(),
            Some(Submission::Input("fix the test".into()))
        );
        assert_eq!(
            parse_line("/profile executor").unwrap(),
            Some(Submission::Control(Control::Manual {
                profile: Profile::Executor
            }))
        );
        assert_eq!(
            parse_line(" /profile auto").unwrap(),
            Some(Submission::Control(Control::Automatic))
        );
        assert_eq!(parse_line("/resume").unwrap(), Some(Submission::Resume));
        assert_eq!(parse_line("/quit").unwrap(), None);
        assert!(parse_line("/profile boss")
            .unwrap_err()
            .contains("coordinator"));
        assert!(parse_line("/dance").unwrap_err().contains("/resume"));
    }
}
