//! The progress bar of `runq run` on a terminal.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on a TTY for runs longer than a second.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// Shows a bar when stderr is a TTY, output is not JSON, and the run is
    /// longer than a second.
    pub fn new(total: Duration, json: bool) -> Self {
        if json || total <= Duration::from_secs(1) || !crate::style::stderr_is_tty() {
            return Progress(None);
        }
        let bar = ProgressBar::new(total.as_millis() as u64);
        bar.set_style(
            ProgressStyle::with_template("{spinner} running {bar:30} {elapsed}/{msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(format!("{:.1}s", total.as_secs_f64()));
        Progress(Some(bar))
    }

    /// Updates the bar.
    pub fn tick(&mut self, elapsed: Duration, _total: Duration) {
        if let Some(bar) = &self.0 {
            bar.set_position(elapsed.as_millis() as u64);
        }
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}
