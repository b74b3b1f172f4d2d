//! Every `console` block of README.md and of the guide's chapters
//! (`docs/guide/src`, in its summary's order: see `guide`) is run against
//! the binary and its output compared with the block, so the examples
//! cannot drift from what runq prints.
//!
//! A block runs as one shell script in a scratch directory shared by all
//! blocks of every page (so a snapshot captured in one block is there for
//! the next),
//! with `runq` on `PATH`, `sudo` dropped (the test runs as root) and
//! stderr merged into stdout, as a terminal shows them. Lines are compared
//! by shape: every number (with its unit) matches any number, PASS, FAIL
//! and INDETERMINATE match each other (a verdict is the host's), and a FAIL's
//! explanation line is optional, as are `min_fair_share` and
//! `min_fair_share_worker` lines (they are judged only for a group or
//! worker owed 100 ms of CPU), and a `...` line stands for any lines.
//! Each line of a block's output must
//! appear in the real output, in order, except rows that name something
//! the host does not have (another host's threads in a ctprof table).
//! Blocks that need what the suite does not provide (perf, a demo
//! service, background load, a file made by hand) are skipped, each with
//! its reason printed.

use std::path::Path;

use crate::guide::{pages, repo_root};

/// One `$ command` of a block, continuation lines joined, with the lines
/// the page shows after it.
#[derive(Debug)]
struct Step {
    command: String,
    shown: Vec<String>,
}

/// A console block: where it starts (`file:line`) and its steps.
#[derive(Debug)]
struct Block {
    at: String,
    steps: Vec<Step>,
}

/// The console blocks of the Markdown page `file`.
fn console_blocks(file: &str, text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim_end() != "```console" {
            continue;
        }
        let mut block = Block {
            at: format!("{file}:{}", n + 1),
            steps: Vec::new(),
        };
        let mut continued = false;
        for (_, line) in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            if let Some(cmd) = line.strip_prefix("$ ") {
                block.steps.push(Step {
                    command: cmd.to_string(),
                    shown: Vec::new(),
                });
                continued = cmd.ends_with('\\');
            } else if let Some(step) = block.steps.last_mut() {
                if continued {
                    step.command.push('\n');
                    step.command.push_str(line);
                    continued = line.ends_with('\\');
                } else {
                    step.shown.push(line.to_string());
                }
            }
        }
        blocks.push(block);
    }
    blocks
}

/// Programs a block may run besides runq and the shell's own.
const TOOLS: &[&str] = &[
    "runq", "sudo", "echo", "head", "tail", "grep", "sed", "setpriv", "time", "taskset",
];

/// Why a block cannot run in the suite, or `None`.
fn skip_reason(block: &Block, scratch: &Path) -> Option<String> {
    let mut made: Vec<String> = Vec::new();
    for step in &block.steps {
        let cmd = &step.command;
        if cmd.starts_with('#') {
            continue;
        }
        if cmd.contains(" &") {
            return Some("it starts background work".into());
        }
        if cmd.contains("perf ") {
            return Some("it runs perf".into());
        }
        let Some(words) = shlex::split(&cmd.replace("\\\n", " ")) else {
            return Some(format!("its command `{cmd}` does not parse"));
        };
        let program = words.iter().find(|w| !w.contains('=') && *w != "sudo");
        if let Some(program) = program.filter(|p| !TOOLS.contains(&p.as_str())) {
            return Some(format!("it runs {program}"));
        }
        if let Some(file) = missing_input(&words, scratch, &made) {
            return Some(format!("it reads {file}, which no earlier example writes"));
        }
        made.extend(outputs(&words));
    }
    None
}

/// The files a command writes (after `-o`/`--output`).
fn outputs(words: &[String]) -> Vec<String> {
    words
        .windows(2)
        .filter(|w| matches!(w[0].as_str(), "-o" | "--output"))
        .map(|w| w[1].clone())
        .collect()
}

/// An input file the command names that neither the block's earlier
/// steps, the scratch directory nor the repository hold (outputs, after
/// `-o`/`--output`, do not count).
fn missing_input(words: &[String], scratch: &Path, made: &[String]) -> Option<String> {
    let inputs = words.iter().enumerate().filter(|(i, w)| {
        let after_output = *i > 0 && matches!(words[i - 1].as_str(), "-o" | "--output");
        let looks_like_file = [".ctprof.zst", ".json", ".toml", ".data"]
            .iter()
            .any(|ext| w.ends_with(ext))
            || w.starts_with("/tmp/");
        !after_output && looks_like_file && !w.contains(char::is_whitespace)
    });
    for (_, w) in inputs {
        let path = w.split('@').next().unwrap_or(w);
        let exists = made.iter().any(|m| m == path)
            || scratch.join(path).exists()
            || repo_root().join(path).exists();
        if !exists {
            return Some(w.clone());
        }
    }
    None
}

/// Runs a block's steps in one shell and splits the merged output by step.
fn run_block(block: &Block, scratch: &Path) -> Vec<Vec<String>> {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_runq")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let mut script = String::new();
    for (i, step) in block.steps.iter().enumerate() {
        let cmd = step.command.strip_prefix("sudo ").unwrap_or(&step.command);
        let cmd = cmd.replace("| sudo ", "| ");
        script.push_str(&format!("echo '@@step {i}@@'\n{cmd}\n"));
    }
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("exec 2>&1\n{script}")])
        .current_dir(scratch)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .current_dir(scratch)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut steps: Vec<Vec<String>> = vec![Vec::new(); block.steps.len()];
    let mut current = None;
    for line in text.lines() {
        if let Some(i) = line
            .strip_prefix("@@step ")
            .and_then(|r| r.strip_suffix("@@"))
        {
            current = i.parse::<usize>().ok();
        } else if let Some(i) = current {
            steps[i].push(line.to_string());
        }
    }
    steps
}

/// A line's shape: numbers (with units) as `#`, PASS, FAIL, SKIP and
/// INDETERMINATE as `V`,
/// runs of blanks as one space.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut last_number = false;
    while let Some(c) = chars.next() {
        let signed = matches!(c, '+' | '-') && chars.peek().is_some_and(char::is_ascii_digit);
        if signed {
            continue;
        }
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == 'µ' || *c == '%')
            {
                chars.next();
            }
            if !last_number {
                out.push('#');
            }
            last_number = true;
            continue;
        }
        last_number = false;
        out.push(c);
    }
    let words: Vec<&str> = out
        .split_whitespace()
        .filter(|w| *w != "~")
        .map(|w| match w {
            "PASS" | "FAIL" | "SKIP" | "INDETERMINATE" => "V",
            w => w,
        })
        .collect();
    words.join(" ")
}

/// A row of a host context table (`key  value`) whose key the real
/// output has too, with any value or as a prefix of its keys (`sched_debugfs`
/// unavailable on one host, `sched_debugfs.*` rows on another): the value
/// is the host's, as its CPU model and its kernel are.
fn is_host_fact(line: &str, real: &[String]) -> bool {
    let Some(key) = line.split_whitespace().next() else {
        return false;
    };
    real.iter().any(|r| {
        let k = r.split_whitespace().next().unwrap_or("");
        k == key || k.starts_with(&format!("{key}.")) || key.starts_with(&format!("{k}."))
    })
}

/// A FAIL's explanation: indented under its check line.
fn is_explanation(line: &str) -> bool {
    line.starts_with("     ") && !line.trim().is_empty()
}

/// The lines a page shows for one step that the real output lacks, in
/// order.
fn missing_lines(shown: &[String], real: &[String]) -> Vec<String> {
    let real_shapes: Vec<String> = real.iter().map(|l| shape(l)).collect();
    let real_text = real.join("\n");
    let mut at = 0;
    let mut missing = Vec::new();
    // Fair shares are judged only for a group or worker owed 100 ms of
    // CPU, which a short or cut-short run on a busy host may not reach.
    let conditional = |l: &str| shape(l).starts_with("V min_fair_share");
    let elided = |l: &&String| l.trim() == "..." || l.trim().is_empty() || conditional(l);
    let mut host_context = false;
    for line in shown.iter().filter(|l| !is_explanation(l) && !elided(l)) {
        if line.starts_with("## ") {
            host_context = line.starts_with("## Host context");
        } else if host_context && is_host_fact(line, real) {
            continue;
        }
        let want = shape(line);
        if let Some(i) = real_shapes[at..].iter().position(|r| *r == want) {
            at += i + 1;
            continue;
        }
        // A row of figures led by a name the host does not have (another
        // host's thread, a series of it) is another host's.
        let lead = line.split_whitespace().next().unwrap_or("");
        let foreign_row = line.chars().any(|c| c.is_ascii_digit())
            && lead.chars().any(|c| c.is_ascii_alphabetic())
            && !real_text.contains(lead);
        if !foreign_row {
            missing.push(line.clone());
        }
    }
    missing
}

#[test]
fn shapes_match_numbers_and_verdicts_not_words() {
    assert_eq!(
        shape("PASS max_gap_ms   spinners   1914 <= 2000"),
        shape("FAIL max_gap_ms spinners 3.5 <= 2000")
    );
    assert_eq!(shape("wake p99 31.7µs 5.34ms"), "wake p# # #");
    assert_eq!(shape("runq 2/2 -32.457ms ~ -12.2%"), "runq #/# # #");
    assert_ne!(
        shape("exit Some(Signaled(9))"),
        shape("exit killed by SIGKILL")
    );
    let shown = vec!["group a".to_string(), "rustc 4/10 1.2s".to_string()];
    let real = vec!["x".to_string(), "group a".to_string()];
    assert!(missing_lines(&shown, &real).is_empty(), "a foreign row");
    let shown = vec!["verdict: PASS".to_string(), "header".to_string()];
    assert_eq!(missing_lines(&shown, &real), shown);
}

/// A scratch directory as the pages' examples expect it: they run from
/// the repository (`scenarios/...`), and one writes a snapshot as
/// `nobody`.
fn scratch_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let scratch = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        repo_root().join("scenarios"),
        scratch.path().join("scenarios"),
    )
    .unwrap();
    let sticky = std::fs::Permissions::from_mode(0o1777);
    std::fs::set_permissions(scratch.path(), sticky).unwrap();
    scratch
}

/// Runs the blocks: those that read nothing an earlier block writes side
/// by side (a run lasts its duration whatever else the host runs, and its
/// figures and verdicts are compared by shape), then the others in the
/// pages' order, on the files the first ones left; a block that cannot
/// run in the suite is skipped, with its reason printed.
fn run_blocks<'a>(blocks: &'a [Block], scratch: &Path) -> Vec<(&'a Block, Vec<Vec<String>>)> {
    let (alone, after): (Vec<&Block>, Vec<&Block>) = blocks
        .iter()
        .partition(|b| skip_reason(b, Path::new("/nonexistent")).is_none());
    let mut results: Vec<(&Block, Vec<Vec<String>>)> = std::thread::scope(|s| {
        let handles: Vec<_> = alone
            .iter()
            .map(|b| s.spawn(|| (*b, run_block(b, scratch))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for block in after {
        if let Some(why) = skip_reason(block, scratch) {
            eprintln!("skipped {}: {why}", block.at);
            continue;
        }
        results.push((block, run_block(block, scratch)));
    }
    results
}

#[test]
#[cfg_attr(not(runq_root), ignore = "needs root (the examples use sudo)")]
fn every_console_block_of_the_readme_and_the_guide_matches_the_binary() {
    let pages = pages();
    let blocks: Vec<Block> = pages
        .iter()
        .flat_map(|p| console_blocks(&p.name, &p.text))
        .collect();
    let in_readme = blocks.iter().filter(|b| b.at.starts_with("README.md:"));
    assert!(
        in_readme.count() >= 4,
        "the README shows one example per tool"
    );
    let scratch = scratch_dir();
    let results = run_blocks(&blocks, scratch.path());
    let ran = results.len();
    let mut failures = Vec::new();
    for (block, real) in results {
        for (step, real) in block.steps.iter().zip(&real) {
            // The first missing line, with what runq printed instead.
            if let Some(line) = missing_lines(&step.shown, real).first() {
                failures.push(format!(
                    "{} `{}`: shows {line:?}; runq printed:\n{}",
                    block.at,
                    step.command,
                    real.join("\n")
                ));
            }
        }
    }
    eprintln!("{ran} console blocks of {} pages run", pages.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 14, "only {ran} blocks ran");
}
