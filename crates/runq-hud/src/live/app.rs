//! The live view's interaction state and key handling, separate from
//! drawing so it can be tested without a terminal.

use super::model::{LiveModel, SortBy};

/// What the screen is showing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The four panels.
    Overview,
    /// The selected hotspot's stacks and workers.
    Drill,
    /// Typing a search query.
    Search,
    /// The key help.
    Help,
}

/// What a key asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Keep going.
    Continue,
    /// Leave the live view.
    Quit,
}

/// A key, reduced to what the view uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A printable character.
    Char(char),
    /// Ctrl-C.
    Interrupt,
    /// Enter.
    Enter,
    /// Escape.
    Esc,
    /// Backspace.
    Backspace,
    /// Up arrow.
    Up,
    /// Down arrow.
    Down,
}

/// The live view's state.
pub struct App {
    /// The data.
    pub model: LiveModel,
    /// Current screen.
    pub mode: Mode,
    /// Hotspot order.
    pub sort: SortBy,
    /// Search query (substring of culprit or location).
    pub query: String,
    /// Selected hotspot row.
    pub selected: usize,
    /// Highlight in colour (else bold): the caller's `--color` decision.
    pub color: bool,
}

impl App {
    /// A view over `model`, highlighting in colour when `color`.
    pub fn new(model: LiveModel, color: bool) -> Self {
        App {
            model,
            mode: Mode::Overview,
            sort: SortBy::Total,
            query: String::new(),
            selected: 0,
            color,
        }
    }

    /// Handles one key.
    pub fn key(&mut self, key: Key) -> Action {
        if key == Key::Interrupt {
            return Action::Quit;
        }
        match self.mode {
            Mode::Search => self.search_key(key),
            // Any of these closes the overlay (q does not quit from it).
            Mode::Help | Mode::Drill => {
                if matches!(key, Key::Esc | Key::Enter | Key::Char('q') | Key::Char('?')) {
                    self.mode = Mode::Overview;
                }
            }
            Mode::Overview => return self.overview_key(key),
        }
        Action::Continue
    }

    fn overview_key(&mut self, key: Key) -> Action {
        let rows = self.model.hotspots(self.sort, &self.query).len();
        match key {
            Key::Char('q') => return Action::Quit,
            Key::Char('?') => self.mode = Mode::Help,
            Key::Char('/') => self.mode = Mode::Search,
            Key::Char('s') => self.sort = self.sort.next(),
            Key::Enter if rows > 0 => self.mode = Mode::Drill,
            Key::Down | Key::Char('j') => {
                self.selected = (self.selected + 1).min(rows.saturating_sub(1))
            }
            Key::Up | Key::Char('k') => self.selected = self.selected.saturating_sub(1),
            Key::Esc => self.query.clear(),
            _ => {}
        }
        Action::Continue
    }

    fn search_key(&mut self, key: Key) {
        match key {
            Key::Char(c) => self.query.push(c),
            Key::Backspace => {
                self.query.pop();
            }
            Key::Enter => self.mode = Mode::Overview,
            Key::Esc => {
                self.query.clear();
                self.mode = Mode::Overview;
            }
            _ => {}
        }
        self.selected = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::model::Status;

    #[test]
    fn keys_move_between_screens() {
        let mut app = App::new(LiveModel::new(1, Status::default()), true);
        assert_eq!(app.key(Key::Char('?')), Action::Continue);
        assert_eq!(app.mode, Mode::Help);
        app.key(Key::Esc);
        assert_eq!(app.mode, Mode::Overview);
        app.key(Key::Char('/'));
        for c in "load".chars() {
            app.key(Key::Char(c));
        }
        app.key(Key::Backspace);
        app.key(Key::Enter);
        assert_eq!((app.mode, app.query.as_str()), (Mode::Overview, "loa"));
        app.key(Key::Char('s'));
        assert_eq!(app.sort, SortBy::Count);
        app.key(Key::Enter);
        assert_eq!(app.mode, Mode::Overview, "nothing to drill into");
        assert_eq!(app.key(Key::Char('q')), Action::Quit);
        assert_eq!(app.key(Key::Interrupt), Action::Quit);
    }
}
