//! Text rendering of the engine's documents: a run's report, the repeats'
//! summary and a comparison. Each tool's library renders its own documents
//! (as ctprof, hud and collatz do); the binary parses the arguments,
//! chooses the format (text, `--json`, `--junit`) and writes.

mod compare;
mod detail;
mod host;
mod instrument;
mod load;
mod mechanism;
mod next_step;
mod outcome;
mod recorder;
mod repeats;

pub use compare::{ci_text, comparison, pct_text, value_text};
pub use detail::{detail_sentence, details_sentence};
pub use load::outside_load_sentence;
pub use mechanism::{mechanism_sentence, mechanisms_sentence};
pub use next_step::next_step_sentence;
pub use outcome::{detail_of, outcome};
pub use recorder::recorder_sentence;
pub use repeats::repeat_summary;
