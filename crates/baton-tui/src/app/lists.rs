//! The lists the terminal UI draws over the session (`/undo`'s checkpoints, `/resume`'s
//! sessions): opening them, and their keys — move, pick, leave.

use crossterm::event::{KeyCode, KeyEvent};

use super::{App, Level, Overlay, Request};

impl App {
    /// A key while the undo list is shown: it moves, picks (the files go back), or closes.
    pub(super) fn undo_key(
        &mut self,
        key: KeyEvent,
        at: usize,
        send: &mut dyn FnMut(Request) -> Result<(), String>,
    ) {
        // Newest first on the screen: Up goes to a newer one, a higher index.
        match list_key(key, at, self.view.checkpoints.len(), true) {
            Step::Move(to) => self.ui.overlay = Some(Overlay::Undo(to)),
            Step::Close => self.ui.overlay = None,
            Step::Pick(at) => {
                self.ui.overlay = None;
                if let Some(c) = self.view.checkpoints.get(at) {
                    let checkpoint = c.checkpoint;
                    if let Err(e) = send(Request::Undo(checkpoint)) {
                        self.view.say(Level::Error, e);
                    }
                }
            }
        }
    }

    /// A key while `/resume`'s list is shown: it moves, picks (this session ends and the picked
    /// one goes on), or closes.
    pub(super) fn sessions_key(
        &mut self,
        key: KeyEvent,
        mut cursor: crate::picker::Cursor,
        send: &mut dyn FnMut(Request) -> Result<(), String>,
    ) {
        let n = self.ui.sessions.len();
        match list_key(key, cursor.at, n, false) {
            Step::Move(to) => {
                cursor.step(to as isize - cursor.at as isize, n, self.ui.page.max(3) - 2);
                self.ui.overlay = Some(Overlay::Sessions(cursor));
            }
            Step::Close => self.ui.overlay = None,
            Step::Pick(at) => {
                self.ui.overlay = None;
                let Some(id) = self.ui.sessions.get(at).map(|c| c.id.clone()) else {
                    return;
                };
                match send(Request::Switch(id)) {
                    Ok(()) => self.quit = true,
                    Err(e) => self.view.say(Level::Error, e),
                }
            }
        }
    }

    /// `/undo` and Esc Esc: the list of checkpoints, the newest under the cursor, or why there
    /// is none.
    pub(super) fn open_undo(&mut self) -> Result<(), String> {
        match self.view.checkpoints.len() {
            0 => Err("nothing to undo: no prompt of this session has changed files yet (checkpoints are taken in a git repository)".into()),
            n => {
                self.ui.overlay = Some(Overlay::Undo(n - 1));
                Ok(())
            }
        }
    }
}

/// What a key does to a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The cursor goes to this item.
    Move(usize),
    /// This item is picked.
    Pick(usize),
    /// The list closes.
    Close,
}

/// A key on a list of `n` items, the cursor at `at`: ↑↓ (or k j) move, Page Up / Page Down by
/// ten, Enter picks, Esc or q closes. With `up_is_later`, the list is drawn last item first, so
/// Up goes to a later item.
pub fn list_key(key: KeyEvent, at: usize, n: usize, up_is_later: bool) -> Step {
    let last = n.saturating_sub(1);
    let go = |by: usize, later: bool| {
        Step::Move(match later {
            true => at.saturating_add(by).min(last),
            false => at.saturating_sub(by),
        })
    };
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => go(1, up_is_later),
        KeyCode::Down | KeyCode::Char('j') => go(1, !up_is_later),
        KeyCode::PageUp => go(10, up_is_later),
        KeyCode::PageDown => go(10, !up_is_later),
        KeyCode::Enter if n > 0 => Step::Pick(at.min(last)),
        KeyCode::Esc | KeyCode::Char('q') => Step::Close,
        _ => Step::Move(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn a_list_moves_within_its_items_and_picks_or_closes() {
        assert_eq!(list_key(k(KeyCode::Down), 0, 3, false), Step::Move(1));
        assert_eq!(list_key(k(KeyCode::Down), 2, 3, false), Step::Move(2));
        assert_eq!(list_key(k(KeyCode::Up), 0, 3, false), Step::Move(0));
        // Drawn newest first: Up goes to a later (newer) item.
        assert_eq!(list_key(k(KeyCode::Up), 0, 3, true), Step::Move(1));
        assert_eq!(list_key(k(KeyCode::PageDown), 0, 30, false), Step::Move(10));
        assert_eq!(list_key(k(KeyCode::Enter), 1, 3, false), Step::Pick(1));
        assert_eq!(list_key(k(KeyCode::Enter), 0, 0, false), Step::Move(0));
        assert_eq!(list_key(k(KeyCode::Esc), 1, 3, false), Step::Close);
    }
}
