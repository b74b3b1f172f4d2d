//! The line that says what runq's own instruments took from the run:
//! its threads' CPU and its recorder's programs, as shares of one CPU,
//! with the recorder's fidelity and why.

use runq_common::text::{hanging, wrap, LIST_WIDTH};
use runq_workload::{HostLoad, RecorderSummary};

/// `runq itself: 0.31% of a CPU (its threads), the recorder's programs
/// 0.12% (sampled at 1 kHz: ...)`, wrapped; empty when nothing was
/// measured.
pub fn instrument_line(load: Option<&HostLoad>, recorder: &RecorderSummary) -> String {
    let Some(load) = load else {
        return String::new();
    };
    let recorder = match (&recorder.fidelity, &recorder.off) {
        (Some(f), _) => {
            let cost = f.bpf_cpus.map_or("not measured".to_string(), pct);
            format!("the recorder's programs {cost} ({})", f.reason)
        }
        (None, Some(why)) => format!("no recorder ({why})"),
        (None, None) => "the recorder did not say its fidelity".to_string(),
    };
    let text = format!(
        "runq itself: {} (its threads), {recorder}",
        pct(load.runq_cpus)
    );
    let lines = wrap(&text, LIST_WIDTH - 6);
    hanging(&lines[0], &lines[1..], 6)
}

/// A share of one CPU as a percentage.
fn pct(cpus: f64) -> String {
    format!("{:.2}% of a CPU", cpus * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use runq_kernel::task_record::{Fidelity, FidelityMode};

    fn line(recorder: RecorderSummary) -> String {
        let load = HostLoad {
            runq_cpus: 0.0031,
            ..HostLoad::default()
        };
        instrument_line(Some(&load), &recorder)
    }

    #[test]
    fn the_line_gives_runqs_share_and_the_recorders_fidelity() {
        let sampled = RecorderSummary {
            fidelity: Some(Fidelity {
                mode: FidelityMode::Sampled,
                reason: "sampled at 1 kHz: exact recording would have cost 9.8% of a CPU".into(),
                bpf_cpus: Some(0.0012),
                ..Fidelity::default()
            }),
            off: None,
        };
        let text = line(sampled).replace("\n      ", " ");
        assert_eq!(
            text.trim_end(),
            "runq itself: 0.31% of a CPU (its threads), the recorder's programs 0.12% of a CPU \
             (sampled at 1 kHz: exact recording would have cost 9.8% of a CPU)"
        );
        let off = RecorderSummary {
            fidelity: None,
            off: Some("off (--evidence off)".into()),
        };
        assert!(line(off).contains("no recorder (off (--evidence off))"));
    }
}
