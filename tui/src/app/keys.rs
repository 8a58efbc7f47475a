//! Key handling: every binding of the help overlay.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{App, CoreSort, OpSort, Units, View};

/// The key bindings, for the help overlay: (keys, what they do).
pub const KEY_HELP: &[(&str, &str)] = &[
    ("q, Ctrl-C", "quit"),
    ("?", "this help (any key closes it)"),
    ("1-9", "select tab (1 = all)"),
    ("a / d", "previous / next tab"),
    ("Tab / S-Tab", "next / previous view (narrow terminals)"),
    ("F", "utilization in % / TFLOPS (a/b% = physical cores)"),
    ("f", "freeze / unfreeze the display"),
    ("/", "filter operators, collectives, memory tree"),
    ("s", "sort operators: device time, calls, name"),
    ("u", "sort cores: index / utilization"),
    ("Up / Down", "move in the memory tree"),
    ("Enter, Right", "expand tree node (Left collapses)"),
    ("x", "expand / collapse all"),
    ("Left / Right", "replay: step back / forward"),
    ("space", "replay: play / pause"),
    ("Home / End", "replay: first / last report"),
];

impl App {
    /// Handles a key; returns whether the screen changed.
    pub(super) fn key(&mut self, key: KeyEvent) -> bool {
        if key.kind == KeyEventKind::Release {
            return false;
        }
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return true;
        }
        if let Some(input) = &mut self.filter_input {
            match key.code {
                KeyCode::Enter => {
                    self.filter = self.filter_input.take().unwrap_or_default();
                    self.tree_cursor = 0;
                }
                KeyCode::Esc => {
                    self.filter_input = None;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) => input.push(c),
                _ => return false,
            }
            return true;
        }
        if self.help {
            self.help = false;
            return true;
        }
        let replaying = self.replay.is_some();
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') | KeyCode::Char('h') => self.help = true,
            KeyCode::Esc => {
                if self.filter.is_empty() {
                    return false;
                }
                self.filter.clear();
            }
            KeyCode::Char(c @ '1'..='9') => {
                let tab = (c as usize) - ('1' as usize);
                if tab > self.runtimes.len() {
                    return false;
                }
                self.selected = tab;
                self.tree_cursor = 0;
            }
            KeyCode::Char('a') => {
                let tabs = self.runtimes.len() + 1;
                self.selected = (self.selected + tabs - 1) % tabs;
                self.tree_cursor = 0;
            }
            KeyCode::Char('d') => {
                self.selected = (self.selected + 1) % (self.runtimes.len() + 1);
                self.tree_cursor = 0;
            }
            KeyCode::Tab => {
                self.view = match self.view {
                    View::Overview => View::Device,
                    View::Device => View::Activity,
                    View::Activity => View::Overview,
                }
            }
            KeyCode::BackTab => {
                self.view = match self.view {
                    View::Overview => View::Activity,
                    View::Device => View::Overview,
                    View::Activity => View::Device,
                }
            }
            KeyCode::Char('F') => {
                self.units = match self.units {
                    Units::Percent => Units::Tflops,
                    Units::Tflops => Units::Percent,
                }
            }
            KeyCode::Char('f') => {
                self.frozen = !self.frozen;
                if !self.frozen {
                    while let Some(doc) = self.queued.pop_front() {
                        self.apply(doc);
                    }
                }
            }
            KeyCode::Char('/') => self.filter_input = Some(String::new()),
            KeyCode::Char('s') => {
                self.op_sort = match self.op_sort {
                    OpSort::DeviceTime => OpSort::Calls,
                    OpSort::Calls => OpSort::Name,
                    OpSort::Name => OpSort::DeviceTime,
                }
            }
            KeyCode::Char('u') => {
                self.core_sort = match self.core_sort {
                    CoreSort::Index => CoreSort::Utilization,
                    CoreSort::Utilization => CoreSort::Index,
                }
            }
            KeyCode::Up => self.tree_cursor = self.tree_cursor.saturating_sub(1),
            KeyCode::Down => {
                let visible = self.tree_nodes().len();
                if self.tree_cursor + 1 < visible {
                    self.tree_cursor += 1;
                }
            }
            KeyCode::Char('x') => self.toggle_expand_all(),
            KeyCode::Enter => self.set_expanded_at_cursor(true),
            KeyCode::Right if !replaying => self.set_expanded_at_cursor(true),
            KeyCode::Left if !replaying => self.set_expanded_at_cursor(false),
            KeyCode::Right | KeyCode::Left | KeyCode::Home | KeyCode::End | KeyCode::Char(' ')
                if replaying =>
            {
                return self.replay_key(key.code)
            }
            _ => return false,
        }
        true
    }

    fn replay_key(&mut self, code: KeyCode) -> bool {
        let Some(replay) = &mut self.replay else {
            return false;
        };
        let last = replay.documents.len().saturating_sub(1);
        let target = match code {
            KeyCode::Char(' ') => {
                replay.playing = !replay.playing;
                if replay.playing && replay.index == last {
                    0 // play again from the start
                } else {
                    return true;
                }
            }
            KeyCode::Left => replay.index.saturating_sub(1),
            KeyCode::Right => (replay.index + 1).min(last),
            KeyCode::Home => 0,
            KeyCode::End => last,
            _ => return false,
        };
        if code != KeyCode::Char(' ') {
            replay.playing = false;
        }
        if target == replay.index && code != KeyCode::Char(' ') {
            return false;
        }
        self.seek(target);
        true
    }
}
