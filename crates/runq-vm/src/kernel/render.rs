//! The text of `runq vm kernel build`: the image and each scheduler on a
//! line of its own, ready to paste after `--kernel` and `--scheduler`,
//! then whether it was cached and what building cost.

use super::KernelBuild;

/// Minutes and seconds, or seconds under a minute.
fn took(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1} s")
    } else {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    }
}

/// The build's report.
pub fn render(b: &KernelBuild) -> String {
    let mut out = format!("image      {}\n", b.image);
    for s in &b.schedulers {
        out += &format!("scheduler  {}\n", s.path);
    }
    let what = if b.sched_ext { "sched_ext" } else { "base" };
    out += &format!("source     {} ({what} config, key {})\n", b.source, b.key);
    if b.cached {
        out += &format!("cached     built before; found in {}\n", took(b.wall_s));
    } else {
        let wall: f64 = b.steps.iter().map(|s| s.wall_s).sum();
        let cpu: f64 = b.steps.iter().map(|s| s.cpu_s).sum();
        let steps: Vec<String> = b
            .steps
            .iter()
            .map(|s| format!("{} {}", s.name, took(s.wall_s)))
            .collect();
        out += &format!(
            "built      in {} wall, {} CPU ({}); cached in {}\n",
            took(wall),
            took(cpu),
            steps.join(", "),
            b.cache_dir
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Scheduler, Step};
    use super::*;

    pub(crate) fn doc(cached: bool) -> KernelBuild {
        let dir = "/c/linux-6.12.117-1_deb12u1-d2d856db1b69775e";
        KernelBuild {
            source: "debian linux-source-6.12 6.12.117-1~deb12u1".into(),
            version: "6.12.117".into(),
            sched_ext: true,
            cache_dir: dir.into(),
            key: "d2d856db1b69775e".into(),
            image: format!("{dir}/bzImage"),
            schedulers: vec![Scheduler {
                name: "scx_simple".into(),
                path: format!("{dir}/scx/scx_simple"),
            }],
            cached,
            wall_s: if cached { 0.0 } else { 1083.0 },
            steps: if cached {
                Vec::new()
            } else {
                vec![
                    Step {
                        name: "bzImage".into(),
                        wall_s: 1020.0,
                        cpu_s: 1900.0,
                    },
                    Step {
                        name: "schedulers".into(),
                        wall_s: 63.0,
                        cpu_s: 90.5,
                    },
                ]
            },
        }
    }

    #[test]
    fn cached_and_built_reports() {
        let c = render(&doc(true));
        assert!(
            c.starts_with("image      /c/linux-6.12.117-1_deb12u1-d2d856db1b69775e/bzImage\n"),
            "{c}"
        );
        assert!(
            c.contains("scheduler  /c/linux-6.12.117-1_deb12u1-d2d856db1b69775e/scx/scx_simple\n")
        );
        assert!(c.contains("cached     built before; found in 0.0 s"), "{c}");
        let b = render(&doc(false));
        assert!(
            b.contains("built      in 18m03s wall, 33m10s CPU (bzImage 17m00s, schedulers 1m03s)"),
            "{b}"
        );
    }

    #[test]
    fn the_document_matches_its_schema() {
        for cached in [true, false] {
            let text = runq_common::json::to_pretty(&doc(cached)).unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["tool"], "runq vm kernel build");
            runq_testkit::assert_matches_schema("vm-kernel-build", &v);
        }
    }
}
