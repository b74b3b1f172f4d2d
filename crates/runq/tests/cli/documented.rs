//! Every `runq run` example of README.md, of the guide's chapters
//! (`docs/guide/src`) and of `runq run --help` runs and ends as
//! documented: a usage, privilege or run error is exactly the exit code
//! the page shows after it; a verdict (0 PASS, 1 FAIL) is the
//! host's, and every FAIL carries a line saying what was measured.
//! Every run lasts at most half a second (a scenario file's too) and
//! `--repeat` runs twice, so the suite stays short; outputs go to a
//! temporary directory.

use std::path::Path;

use crate::common::runq;
use crate::guide::{pages, repo_root};

/// One documented command: where it came from, its arguments after
/// `runq`, and the exit code shown after it, if any.
#[derive(Debug)]
struct Example {
    origin: String,
    args: Vec<String>,
    expected: Option<i32>,
}

/// `runq run …` command lines of the README's and the guide's pages,
/// continuation lines joined, with the `$ echo $?` figure that follows
/// them.
fn page_examples() -> Vec<Example> {
    pages()
        .iter()
        .flat_map(|p| examples_of(&p.name, &p.text))
        .collect()
}

/// The `runq run …` command lines of one page (see `page_examples`).
fn examples_of(file: &str, text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        let mut cmd = strip_prompt(lines[i]).to_string();
        while cmd.ends_with('\\') && i + 1 < lines.len() {
            cmd.pop();
            i += 1;
            cmd.push_str(lines[i].trim());
        }
        i += 1;
        if !cmd.starts_with("runq run") {
            continue;
        }
        let expected = lines[i..]
            .iter()
            .take_while(|l| !strip_prompt(l).starts_with("runq ") && !l.starts_with("```"))
            .position(|l| l.trim() == "$ echo $?")
            .and_then(|p| lines.get(i + p + 1)?.trim().parse().ok());
        if let Some(args) = split(&cmd) {
            out.push(Example {
                origin: format!("{file}:{}", start + 1),
                args,
                expected,
            });
        }
    }
    out
}

/// The `runq run` examples of `runq run --help`.
fn help_examples() -> Vec<Example> {
    let help = runq().args(["run", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Examples:"))
        .filter_map(|l| {
            // An example, then its description after a run of spaces.
            let cmd = strip_prompt(l.trim())
                .split("   ")
                .next()?
                .trim()
                .to_string();
            if !cmd.starts_with("runq run") {
                return None;
            }
            let args = split(&cmd)?;
            Some(Example {
                origin: format!("runq run --help: {cmd}"),
                args,
                expected: None,
            })
        })
        .collect()
}

fn strip_prompt(line: &str) -> &str {
    let l = line.trim_start().trim_start_matches("$ ");
    l.strip_prefix("sudo ").unwrap_or(l)
}

/// The arguments after `runq`, without a trailing comment or pipe.
fn split(cmd: &str) -> Option<Vec<String>> {
    let words = shlex::split(cmd)?;
    let end = words
        .iter()
        .position(|w| w.starts_with('#') || w == "|" || w == ">")
        .unwrap_or(words.len());
    words.get(1..end).map(<[String]>::to_vec)
}

/// The longest an example runs.
const SHORT: &str = "500ms";

/// The example made short and self-contained (see the module doc), or
/// why it cannot run on this host.
fn adapt(ex: &Example, out: &Path) -> Result<Vec<String>, String> {
    let mut args = ex.args.clone();
    if let Some(f) = args
        .iter()
        .find(|a| a.ends_with(".toml") && !repo_root().join(a).exists())
    {
        return Err(format!("its scenario {f} is the user's own"));
    }
    if args.iter().any(|a| a == "--vm" || a == "--vm-matrix") {
        // A VM boots in 30-50 s under TCG: the VM tier runs these.
        return Err("it boots a VM (the vm tier runs --vm)".into());
    }
    let scheduler = args.iter().position(|a| a == "--scheduler");
    let program = scheduler.and_then(|i| shlex::split(args.get(i + 1)?)?.into_iter().next());
    if let Some(p) = program.filter(|p| !on_path(p)) {
        return Err(format!(
            "needs the scheduler {p}, which is not on this host"
        ));
    }
    for i in 0..args.len() {
        let next = args.get(i + 1).cloned().unwrap_or_default();
        let new = match args[i].as_str() {
            "--duration"
                if runq_common::duration::parse_duration(&next)
                    .is_ok_and(|d| d.as_secs_f64() > 0.5) =>
            {
                Some(SHORT.to_string())
            }
            "--repeat" => Some("2".to_string()),
            "--output" | "-o" | "--junit" => Some(out.join(&next).to_string_lossy().into_owned()),
            "--ctprof" => Some(out.join("snaps").to_string_lossy().into_owned()),
            _ => None,
        };
        if let Some(v) = new {
            args[i + 1] = v;
        }
    }
    let listings = [
        "--list",
        "--explain",
        "--list-scenarios",
        "--print-scenario",
    ];
    let runs = !args.iter().any(|a| listings.contains(&a.as_str()));
    if runs && !args.iter().any(|a| a == "--duration") {
        args.extend(["--duration".into(), SHORT.into()]);
    }
    Ok(args)
}

/// True when `program` is found in `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// Runs one example; returns what is wrong with its ending, if anything.
fn check(ex: &Example, dir: &Path) -> Option<String> {
    let args = match adapt(ex, dir) {
        Ok(a) => a,
        Err(why) => {
            eprintln!("skipped {}: {why}", ex.origin);
            return None;
        }
    };
    let out = runq()
        .args(&args)
        .current_dir(repo_root())
        .output()
        .unwrap();
    let code = out.status.code();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let verdict_level = |c: Option<i32>| matches!(c, Some(0 | 1 | 75));
    let privilege = code == Some(77) && !runq_testkit::is_root();
    match ex.expected {
        Some(e) if !verdict_level(Some(e)) && code != Some(e) && !privilege => {
            return Some(format!(
                "{}: exit {code:?}, the page shows {e}: {stderr}",
                ex.origin
            ));
        }
        None | Some(0 | 1 | 75) if !verdict_level(code) && !privilege => {
            return Some(format!("{}: exit {code:?}: {stderr}", ex.origin));
        }
        _ => {}
    }
    unexplained_fail(&stdout).map(|l| format!("{}: a FAIL without its explanation: {l}", ex.origin))
}

/// The first text-report FAIL line not followed by an explanation line.
fn unexplained_fail(report: &str) -> Option<String> {
    let lines: Vec<&str> = report.lines().collect();
    lines.iter().enumerate().find_map(|(i, l)| {
        let explained = lines.get(i + 1).is_some_and(|n| n.starts_with("     "));
        (l.starts_with("FAIL ") && !explained).then(|| l.to_string())
    })
}

#[test]
fn every_documented_run_example_ends_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let examples: Vec<Example> = page_examples().into_iter().chain(help_examples()).collect();
    assert!(examples.len() >= 15, "{examples:#?}");
    let in_readme = examples
        .iter()
        .filter(|e| e.origin.starts_with("README.md:"));
    assert!(in_readme.count() >= 2, "{examples:#?}");
    // The examples run four at a time, each with its own output directory:
    // a run lasts its duration whatever else the host runs, and a verdict
    // is the host's either way.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let problems = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(ex) = examples.get(i) else { break };
                let out = dir.path().join(i.to_string());
                std::fs::create_dir_all(&out).unwrap();
                if let Some(p) = check(ex, &out) {
                    problems.lock().unwrap().push(p);
                }
            });
        }
    });
    let problems = problems.into_inner().unwrap();
    eprintln!("{} documented examples run", examples.len());
    assert!(problems.is_empty(), "{problems:#?}");
}
