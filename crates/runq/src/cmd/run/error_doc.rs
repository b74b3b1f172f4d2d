//! The document `runq run --json` prints when the run could not be
//! carried out or was refused (a scheduler that died before it was ready,
//! a privilege or a host feature missing, a host too small): a program
//! reading stdout always gets a document, and learns why there is no
//! result from it, not only from stderr.

use serde::Serialize;

use runq_common::json::JsonDocument;

/// Why a `runq run --json` ended without a result.
#[derive(Debug, Serialize)]
pub struct RunErrorDocument {
    /// Always `"error"`: the run has no verdict.
    pub verdict: &'static str,
    /// The one line runq printed on stderr, without its `runq: ` prefix.
    pub error: String,
    /// The exit code runq ended with (2 usage, 3 run error, 77 skipped,
    /// 128+N interrupted).
    pub exit_code: u8,
}

impl JsonDocument for RunErrorDocument {
    const TOOL: &'static str = "runq run";
    const SCHEMA_VERSION: u32 = 1;
}

impl RunErrorDocument {
    /// The document of a run that ended in `err`.
    pub fn of(err: &anyhow::Error) -> RunErrorDocument {
        RunErrorDocument {
            verdict: "error",
            error: crate::exit::error_line(err),
            exit_code: crate::exit::code_of(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_error_keeps_its_line_and_code() {
        let doc = RunErrorDocument::of(&crate::exit::usage("--workers 0: give at least 1"));
        let json = serde_json::to_value(runq_common::json::Stamped(&doc)).unwrap();
        assert_eq!(json["tool"], "runq run");
        assert_eq!(json["verdict"], "error");
        assert_eq!(json["error"], "--workers 0: give at least 1");
        assert_eq!(json["exit_code"], 2);
    }
}
