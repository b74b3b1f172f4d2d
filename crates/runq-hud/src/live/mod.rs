//! The live view: a ratatui screen on the main thread, fed by the session
//! thread through a bounded channel. The session never waits for the
//! screen: when the channel is full the finding is dropped and counted.
//! Redraws at about 10 Hz; `q` or Ctrl-C quits and restores the terminal
//! (ratatui's init also restores it on panic).

pub mod app;
pub mod model;
pub mod replay;
pub mod view;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::detect::Finding;
use crate::session::Update;
use app::{Action, App, Key};
use model::Status;

/// Capacity of the channel between the session and the screen.
pub const CHANNEL_CAPACITY: usize = 4096;

/// What the session says besides findings, read by the screen each frame.
#[derive(Debug, Default)]
pub struct Shared {
    /// Findings dropped because the screen was behind.
    pub dropped: AtomicU64,
    /// Events the kernel could not queue.
    pub lost: AtomicU64,
    /// The target process is gone.
    pub target_exited: AtomicBool,
    /// The stack status line.
    pub stacks: Mutex<String>,
    /// How the workers were found.
    pub discovery: Mutex<String>,
    /// The watched workers.
    pub workers: Mutex<Vec<u32>>,
}

impl Shared {
    /// Copies the session's news into the status panel.
    pub fn apply_to(&self, status: &mut Status) {
        status.dropped = self.dropped.load(Ordering::Relaxed);
        status.lost = status.lost.max(self.lost.load(Ordering::Relaxed));
        if self.target_exited.load(Ordering::Relaxed) {
            status.health = "target exited".into();
        }
        if let Ok(w) = self.workers.lock() {
            if status.workers != *w {
                status.workers.clone_from(&w);
            }
        }
        for (from, to) in [
            (&self.stacks, &mut status.stacks),
            (&self.discovery, &mut status.discovery),
        ] {
            if let Ok(s) = from.lock() {
                if !s.is_empty() {
                    to.clone_from(&s);
                }
            }
        }
    }
}

fn set_text(slot: &Mutex<String>, text: &str) {
    if let Ok(mut cur) = slot.lock() {
        if *cur != text {
            *cur = text.to_string();
        }
    }
}

/// The session's end of the channel: never blocks.
pub struct Feed {
    tx: SyncSender<Finding>,
    shared: Arc<Shared>,
}

impl Feed {
    /// Takes one session update: findings go through the channel, the rest
    /// into the shared status.
    pub fn update(&self, u: Update<'_>) {
        match u {
            Update::Finding(f) => self.offer(f.clone()),
            Update::Lost(n) => self.shared.lost.store(n, Ordering::Relaxed),
            Update::TargetExited => self.shared.target_exited.store(true, Ordering::Relaxed),
            Update::Stacks(s) => set_text(&self.shared.stacks, s),
            Update::Discovery(s) => set_text(&self.shared.discovery, s),
            Update::Workers(tids) => {
                if let Ok(mut w) = self.shared.workers.lock() {
                    if *w != tids {
                        *w = tids.to_vec();
                    }
                }
            }
            // The live view runs one window, its whole session.
            Update::Window(_) => {}
        }
    }

    /// Offers a finding; drops (and counts) it when the screen is behind.
    pub fn offer(&self, f: Finding) {
        match self.tx.try_send(f) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A bounded channel: the feed for the session, the receiver and the
/// shared status for the screen.
pub fn channel() -> (Feed, Receiver<Finding>, Arc<Shared>) {
    let (tx, rx) = std::sync::mpsc::sync_channel(CHANNEL_CAPACITY);
    let shared = Arc::new(Shared::default());
    (
        Feed {
            tx,
            shared: shared.clone(),
        },
        rx,
        shared,
    )
}

fn to_key(ev: &Event) -> Option<Key> {
    let Event::Key(k) = ev else { return None };
    if k.kind != KeyEventKind::Press {
        return None;
    }
    Some(match k.code {
        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Key::Interrupt,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        _ => return None,
    })
}

/// Runs the screen until `q`/Ctrl-C (then sets `stop`) or until `stop` is
/// set by someone else. Findings arrive on `rx`; `now_ns` gives the
/// window's right edge (None in replay, where time stands still).
pub fn run_screen(
    mut app: App,
    rx: &Receiver<Finding>,
    shared: &Shared,
    stop: &AtomicBool,
    now_ns: Option<fn() -> u64>,
) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let result = (|| -> std::io::Result<()> {
        loop {
            while let Ok(f) = rx.try_recv() {
                app.model.push(f);
            }
            if let Some(now) = now_ns {
                app.model.advance(now());
            }
            shared.apply_to(&mut app.model.status);
            terminal.draw(|frame| view::draw(frame, &app))?;
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            if event::poll(Duration::from_millis(100))? {
                if let Some(k) = to_key(&event::read()?) {
                    if app.key(k) == Action::Quit {
                        stop.store(true, Ordering::Relaxed);
                        return Ok(());
                    }
                }
            }
        }
    })();
    ratatui::restore();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Category;
    use crate::live::model::{LiveModel, Status};
    use crate::symbols::fixtures::frame;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn finding(tid: u32, name: &str, cat: Category, start_ms: u64, dur_ms: u64) -> Finding {
        Finding {
            category: cat,
            tid,
            start_ns: start_ms * 1_000_000,
            duration_ns: dur_ms * 1_000_000,
            stack: vec![
                frame("std::thread::sleep"),
                frame(name),
                frame("tokio::runtime::task::harness::poll"),
            ]
            .into(),
            holder: None,
            task_id: Some(u64::from(tid) + 100),
            call: None,
        }
    }

    fn app() -> App {
        let status = Status {
            target: "pid 42 (svc)".into(),
            discovery: "Tokio default thread names".into(),
            threshold_ns: 5_000_000,
            health: "live".into(),
            ..Default::default()
        };
        let mut m = LiveModel::new(10_000_000_000, status);
        m.push(finding(
            7,
            "app::load_config",
            Category::BlockingCall,
            100,
            20,
        ));
        m.push(finding(
            7,
            "app::load_config",
            Category::BlockingCall,
            300,
            25,
        ));
        m.push(finding(
            8,
            "app::hash_all",
            Category::TaskCpuSampled,
            400,
            10,
        ));
        m.push(finding(8, "app::hash_all", Category::RunQueueDelay, 600, 7));
        App::new(m, true)
    }

    fn screen(app: &App, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| view::draw(f, app)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    + "\n"
            })
            .collect()
    }

    /// The caller's colour decision reaches the screen (no environment
    /// variable in between): yellow highlights, or bold without colour.
    #[test]
    fn colour_is_the_callers_choice() {
        let yellow = |color: bool| {
            let mut a = app();
            a.color = color;
            // The highlighted line: stacks cut short.
            a.model.status.stacks = "stacks: frame pointers; 3 short".into();
            let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
            t.draw(|f| view::draw(f, &a)).unwrap();
            let buf = t.backend().buffer().clone();
            buf.content()
                .iter()
                .any(|c| c.fg == ratatui::style::Color::Yellow)
        };
        assert!(yellow(true));
        assert!(!yellow(false));
    }

    #[test]
    fn overview_at_80x24_shows_every_panel() {
        let s = screen(&app(), 80, 24);
        for needle in [
            "Hotspots (by total)",
            "app::load_config",
            "Workers",
            "Timeline",
            "Status",
            "pid 42 (svc)",
            "events 4",
        ] {
            assert!(s.contains(needle), "{needle:?} missing:\n{s}");
        }
        assert!(
            s.find("app::load_config").unwrap() < s.find("app::hash_all").unwrap(),
            "largest total first:\n{s}"
        );
    }

    #[test]
    fn drill_search_help_and_tiny_terminals() {
        let mut a = app();
        a.key(Key::Enter);
        let s = screen(&a, 100, 30);
        assert!(
            s.contains("stack (innermost first)")
                && s.contains("workers: 7 (2)")
                && s.contains("tasks (1): #107"),
            "{s}"
        );
        a.key(Key::Esc);
        a.key(Key::Char('/'));
        for c in "hash".chars() {
            a.key(Key::Char(c));
        }
        let s = screen(&a, 80, 24);
        assert!(
            s.contains("search: hash_") && !s.contains("load_config"),
            "{s}"
        );
        a.key(Key::Enter);
        a.key(Key::Char('?'));
        assert!(screen(&a, 80, 24).contains("sort by total / count / max"));
        assert!(screen(&a, 20, 5).contains("too small"));
    }

    #[test]
    fn an_empty_session_draws_without_rows() {
        let a = App::new(LiveModel::new(1_000_000_000, Status::default()), true);
        let s = screen(&a, 80, 24);
        assert!(s.contains("Hotspots") && s.contains("events 0"), "{s}");
    }

    #[test]
    fn a_full_channel_drops_instead_of_blocking() {
        let (feed, rx, shared) = channel();
        for i in 0..(CHANNEL_CAPACITY as u64 + 10) {
            feed.offer(finding(1, "app::x", Category::BlockingCall, i, 6));
        }
        assert_eq!(shared.dropped.load(Ordering::Relaxed), 10);
        assert_eq!(rx.try_iter().count(), CHANNEL_CAPACITY);
    }

    #[test]
    fn lost_events_stack_status_and_target_exit_reach_the_screen() {
        let (feed, _rx, shared) = channel();
        feed.update(Update::Lost(12));
        feed.update(Update::Stacks(
            "stacks: DWARF CFI (copied stacks) (x), 90% short",
        ));
        feed.update(Update::TargetExited);
        feed.update(Update::Discovery("stacks in Tokio's worker loop (svc)"));
        feed.update(Update::Workers(&[7, 8, 4242]));
        let mut a = app();
        shared.apply_to(&mut a.model.status);
        let s = screen(&a, 140, 24);
        for needle in [
            "lost 12",
            "target exited",
            "90% short",
            "DWARF CFI",
            "loop (svc)",
        ] {
            assert!(s.contains(needle), "{needle:?} missing:\n{s}");
        }
    }
}
