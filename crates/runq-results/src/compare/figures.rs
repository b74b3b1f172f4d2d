//! The figures a compare looks at: each one's name, unit, better
//! direction, and how it is read from a repeat's [`GroupFigures`].

use serde::Serialize;

use crate::results::GroupFigures;

/// The unit of a figure (and of its medians and difference), written
/// in the JSON as its suffix (`ns`, `ms`, `/s`, `%`, or empty).
pub use runq_common::units::Unit;

/// Which direction of a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// More is better (work rate, fairness).
    Higher,
    /// Less is better (latencies, gaps, off-CPU share, migrations).
    Lower,
}

/// A figure compare looks at.
pub(crate) struct Figure {
    /// Its name in the table and the JSON.
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
    /// Reads it from one repeat's group figures.
    pub get: fn(&GroupFigures) -> Option<f64>,
}

/// Every figure, in table order.
pub(crate) const FIGURES: [Figure; 9] = [
    Figure {
        name: "work_rate",
        unit: Unit::PerSec,
        better: Better::Higher,
        get: |g| Some(g.work_rate_per_s),
    },
    Figure {
        name: "wake_p50",
        unit: Unit::Ns,
        better: Better::Lower,
        get: |g| g.wake_latency_ns.p50.map(|v| v as f64),
    },
    Figure {
        name: "wake_p99",
        unit: Unit::Ns,
        better: Better::Lower,
        get: |g| g.wake_latency_ns.p99.map(|v| v as f64),
    },
    Figure {
        name: "wake_p99.9",
        unit: Unit::Ns,
        better: Better::Lower,
        get: |g| g.wake_latency_ns.p99_9.map(|v| v as f64),
    },
    Figure {
        name: "off_cpu",
        unit: Unit::Percent,
        better: Better::Lower,
        get: |g| Some(g.off_cpu_pct),
    },
    Figure {
        name: "max_gap",
        unit: Unit::Ms,
        better: Better::Lower,
        get: |g| Some(g.max_gap_ms as f64),
    },
    Figure {
        name: "migrations",
        unit: Unit::Count,
        better: Better::Lower,
        get: |g| Some(g.migrations as f64),
    },
    Figure {
        name: "run_delay",
        unit: Unit::Percent,
        better: Better::Lower,
        get: |g| g.run_delay_pct,
    },
    Figure {
        name: "fairness",
        unit: Unit::Ratio,
        better: Better::Higher,
        get: |g| g.fairness,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_serialize_as_their_text() {
        #[derive(Serialize)]
        struct Cell {
            #[serde(serialize_with = "Unit::serialize_suffix")]
            unit: Unit,
        }
        let all = [
            Unit::Ns,
            Unit::Ms,
            Unit::PerSec,
            Unit::Percent,
            Unit::Count,
            Unit::Ratio,
        ];
        let json: Vec<String> = all
            .iter()
            .map(|&unit| serde_json::to_string(&Cell { unit }).unwrap())
            .collect();
        let want = ["ns", "ms", "/s", "%", "", ""].map(|u| format!(r#"{{"unit":"{u}"}}"#));
        assert_eq!(json, want);
        let figures = FIGURES.iter().map(|f| f.unit);
        assert!(
            figures.clone().all(|u| all.contains(&u)),
            "a figure's unit is untested"
        );
    }
}
