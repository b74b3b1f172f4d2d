//! The figures a compare looks at: each one's name, unit, better
//! direction, and how it is read from a repeat's [`GroupFigures`].

use serde::{Serialize, Serializer};

use crate::results::GroupFigures;

/// The unit of a figure (and of its medians and difference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Milliseconds.
    Ms,
    /// Per second.
    PerSec,
    /// Percent.
    Percent,
    /// A count (of migrations).
    Count,
    /// A dimensionless ratio (Jain's index).
    Ratio,
}

impl Unit {
    /// The unit as written after a value and in the JSON: `ns`, `ms`,
    /// `/s`, `%`, or empty for a count or a ratio.
    pub fn text(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Ms => "ms",
            Unit::PerSec => "/s",
            Unit::Percent => "%",
            Unit::Count | Unit::Ratio => "",
        }
    }
}

impl Serialize for Unit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.text())
    }
}

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
            .map(|u| serde_json::to_string(u).unwrap())
            .collect();
        assert_eq!(
            json,
            ["\"ns\"", "\"ms\"", "\"/s\"", "\"%\"", "\"\"", "\"\""]
        );
        assert!(all
            .iter()
            .all(|u| json.contains(&format!("{:?}", u.text()))));
    }
}
