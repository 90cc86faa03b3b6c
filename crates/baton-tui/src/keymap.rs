//! The keymap: one table from keys to actions, which both the input handling and the `?` help
//! overlay read. `~/.config/baton/keys.toml` overrides it:
//!
//! ```toml
//! [keys]
//! submit = ["enter"]
//! newline = ["shift+enter", "ctrl+j"]
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key does in the composer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Submit,
    Newline,
    Interrupt,
    Cancel,
    Quit,
    HistoryPrev,
    HistoryNext,
    HistorySearch,
    ScrollUp,
    ScrollDown,
    ScrollTop,
    ScrollBottom,
    FocusPrev,
    FocusNext,
    Expand,
    Copy,
    Help,
    Panel,
    Complete,
    Editor,
    Redraw,
    DeleteWord,
    CycleApproval,
}

/// Each action: its name in `keys.toml`, its default keys and what it does.
pub const ACTIONS: &[(Action, &str, &[&str], &str)] = &[
    (
        Action::Submit,
        "submit",
        &["enter"],
        "send (queued while a task runs; steers its next turn)",
    ),
    (
        Action::Newline,
        "newline",
        &["shift+enter", "ctrl+j", "alt+enter"],
        "new line in the composer",
    ),
    (
        Action::Interrupt,
        "interrupt",
        &["esc"],
        "interrupt the running turn; close an overlay; idle, Esc Esc opens the undo list",
    ),
    (
        Action::Cancel,
        "cancel",
        &["ctrl+c"],
        "interrupt, else clear the composer, else quit",
    ),
    (
        Action::Quit,
        "quit",
        &["ctrl+d"],
        "quit (on an empty composer)",
    ),
    (
        Action::HistoryPrev,
        "history_prev",
        &["up"],
        "previous input (on the first line); a queued message back to edit",
    ),
    (
        Action::HistoryNext,
        "history_next",
        &["down"],
        "next input (on the last line)",
    ),
    (
        Action::HistorySearch,
        "history_search",
        &["ctrl+r"],
        "search the input history",
    ),
    (
        Action::ScrollUp,
        "scroll_up",
        &["pageup"],
        "scroll the transcript up",
    ),
    (
        Action::ScrollDown,
        "scroll_down",
        &["pagedown"],
        "scroll the transcript down",
    ),
    (
        Action::ScrollTop,
        "scroll_top",
        &["ctrl+home"],
        "the transcript's start",
    ),
    (
        Action::ScrollBottom,
        "scroll_bottom",
        &["ctrl+end"],
        "the transcript's end (follow)",
    ),
    (
        Action::FocusPrev,
        "focus_prev",
        &["alt+up"],
        "focus the previous entry (then j/k, Enter, y, Esc)",
    ),
    (
        Action::FocusNext,
        "focus_next",
        &["alt+down"],
        "focus the next entry",
    ),
    (
        Action::Expand,
        "expand",
        &["ctrl+o"],
        "expand or fold the focused entry (else the last call)",
    ),
    (
        Action::Copy,
        "copy",
        &["ctrl+y"],
        "copy the focused entry (OSC 52)",
    ),
    (
        Action::Help,
        "help",
        &["f1"],
        "this help (also ? on an empty composer)",
    ),
    (
        Action::Panel,
        "panel",
        &["ctrl+t", "f2"],
        "the side panel: delegations, tasks, Flows, workflows",
    ),
    (
        Action::Complete,
        "complete",
        &["tab"],
        "complete a / command",
    ),
    (
        Action::Editor,
        "editor",
        &["ctrl+g"],
        "edit the input in $EDITOR",
    ),
    (Action::Redraw, "redraw", &["ctrl+l"], "redraw the screen"),
    (
        Action::DeleteWord,
        "delete_word",
        &["ctrl+w"],
        "delete the word before the cursor",
    ),
    (
        Action::CycleApproval,
        "cycle_approval",
        &["shift+tab"],
        "approval policy: never → on-write → always (from the next tool call)",
    ),
];

/// The keys in force: the defaults, overridden per action by `keys.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Keymap {
    keys: BTreeMap<Action, Vec<String>>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap {
            keys: ACTIONS
                .iter()
                .map(|(a, _, k, _)| (*a, k.iter().map(|s| s.to_string()).collect()))
                .collect(),
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysFile {
    #[serde(default)]
    keys: BTreeMap<String, Vec<String>>,
}

impl Keymap {
    /// The defaults, with `file` (when it exists) overriding them. A bad file is an error
    /// naming the action or key and the fix.
    pub fn load(file: &Path) -> anyhow::Result<Keymap> {
        let mut map = Keymap::default();
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(map),
            Err(e) => anyhow::bail!("{}: {e}", file.display()),
        };
        let parsed: KeysFile =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        for (name, keys) in parsed.keys {
            let Some((action, ..)) = ACTIONS.iter().find(|(_, n, _, _)| *n == name) else {
                let names: Vec<&str> = ACTIONS.iter().map(|a| a.1).collect();
                anyhow::bail!(
                    "{}: [keys] {name}: no such action; the actions are {}",
                    file.display(),
                    names.join(", ")
                );
            };
            for k in &keys {
                parse_key(k)
                    .map_err(|e| anyhow::anyhow!("{}: [keys] {name}: {e}", file.display()))?;
            }
            map.keys
                .insert(*action, keys.iter().map(|k| k.to_lowercase()).collect());
        }
        Ok(map)
    }

    /// The action a key press means, if any.
    pub fn action(&self, key: &KeyEvent) -> Option<Action> {
        let name = key_name(key)?;
        self.keys
            .iter()
            .find(|(_, ks)| ks.contains(&name))
            .map(|(a, _)| *a)
    }

    /// The help: each action's keys and what it does.
    pub fn help(&self) -> Vec<(String, &'static str)> {
        ACTIONS
            .iter()
            .map(|(a, _, _, what)| {
                (
                    self.keys.get(a).map(|k| k.join(" / ")).unwrap_or_default(),
                    *what,
                )
            })
            .collect()
    }
}

/// A key as `keys.toml` writes it: modifiers (`ctrl+`, `alt+`, `shift+`) then a key name.
fn key_name(key: &KeyEvent) -> Option<String> {
    let base = match key.code {
        KeyCode::Enter => "enter".to_string(),
        KeyCode::Esc => "esc".into(),
        KeyCode::Tab => "tab".into(),
        // Shift+Tab, as terminals send it.
        KeyCode::BackTab => "tab".into(),
        KeyCode::Backspace => "backspace".into(),
        KeyCode::Delete => "delete".into(),
        KeyCode::Up => "up".into(),
        KeyCode::Down => "down".into(),
        KeyCode::Left => "left".into(),
        KeyCode::Right => "right".into(),
        KeyCode::Home => "home".into(),
        KeyCode::End => "end".into(),
        KeyCode::PageUp => "pageup".into(),
        KeyCode::PageDown => "pagedown".into(),
        KeyCode::F(n) => format!("f{n}"),
        KeyCode::Char(c) => c.to_lowercase().to_string(),
        _ => return None,
    };
    let m = key.modifiers;
    let mut name = String::new();
    if m.contains(KeyModifiers::CONTROL) {
        name.push_str("ctrl+");
    }
    if m.contains(KeyModifiers::ALT) {
        name.push_str("alt+");
    }
    // Shift is part of a printed character already.
    if (m.contains(KeyModifiers::SHIFT) && !matches!(key.code, KeyCode::Char(_)))
        || key.code == KeyCode::BackTab
    {
        name.push_str("shift+");
    }
    name.push_str(&base);
    Some(name)
}

/// Checks a key written in `keys.toml`.
fn parse_key(text: &str) -> Result<(), String> {
    let lower = text.to_lowercase();
    let mut parts: Vec<&str> = lower.split('+').collect();
    let Some(base) = parts.pop() else {
        return Err(format!("`{text}` is empty"));
    };
    for m in parts {
        if !matches!(m, "ctrl" | "alt" | "shift") {
            return Err(format!(
                "`{text}`: unknown modifier `{m}`; use ctrl, alt or shift"
            ));
        }
    }
    let named = [
        "enter",
        "esc",
        "tab",
        "backspace",
        "delete",
        "up",
        "down",
        "left",
        "right",
        "home",
        "end",
        "pageup",
        "pagedown",
    ];
    let function = base
        .strip_prefix('f')
        .and_then(|n| n.parse::<u8>().ok())
        .is_some_and(|n| (1..=12).contains(&n));
    if named.contains(&base) || function || base.chars().count() == 1 {
        Ok(())
    } else {
        Err(format!(
            "`{text}`: unknown key `{base}`; use a character, f1–f12 or one of {}",
            named.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn the_defaults_and_an_override_from_keys_toml() {
        let map = Keymap::default();
        assert_eq!(
            map.action(&key(KeyCode::Enter, KeyModifiers::NONE)),
            Some(Action::Submit)
        );
        assert_eq!(
            map.action(&key(KeyCode::Enter, KeyModifiers::SHIFT)),
            Some(Action::Newline)
        );
        assert_eq!(
            map.action(&key(KeyCode::Char('j'), KeyModifiers::CONTROL)),
            Some(Action::Newline)
        );
        assert_eq!(
            map.action(&key(KeyCode::Char('r'), KeyModifiers::CONTROL)),
            Some(Action::HistorySearch)
        );
        assert_eq!(
            map.action(&key(KeyCode::Char('x'), KeyModifiers::NONE)),
            None
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keys.toml");
        std::fs::write(&file, "[keys]\nsubmit = [\"ctrl+s\"]\n").unwrap();
        let map = Keymap::load(&file).unwrap();
        assert_eq!(
            map.action(&key(KeyCode::Char('s'), KeyModifiers::CONTROL)),
            Some(Action::Submit)
        );
        assert_eq!(map.action(&key(KeyCode::Enter, KeyModifiers::NONE)), None);
        assert!(map
            .help()
            .iter()
            .any(|(k, w)| k == "ctrl+s" && w.starts_with("send")));
        std::fs::write(&file, "[keys]\nsend = [\"enter\"]\n").unwrap();
        let e = Keymap::load(&file).unwrap_err().to_string();
        assert!(
            e.contains("[keys] send: no such action") && e.contains("submit"),
            "{e}"
        );
        std::fs::write(&file, "[keys]\nsubmit = [\"hyper+x\"]\n").unwrap();
        let e = Keymap::load(&file).unwrap_err().to_string();
        assert!(e.contains("unknown modifier `hyper`"), "{e}");
    }
}
