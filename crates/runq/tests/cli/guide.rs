//! The documentation as the tests read it: README.md, then the guide's
//! chapters (an mdBook under `docs/guide`) in the order its `SUMMARY.md`
//! lists them. `readme_console` runs their console blocks and
//! `documented` their `runq run` command lines; the tests here hold the
//! book together: every chapter is in the summary, every file the
//! summary names exists, and every relative link of every page points at
//! a file, and a heading, that exist.

use std::path::{Path, PathBuf};

/// One page of the documentation: its path from the repository's root
/// (what an error message names) and its text.
#[derive(Debug)]
pub struct Page {
    pub name: String,
    pub text: String,
}

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The guide's source directory.
fn guide_src() -> PathBuf {
    repo_root().join("docs/guide/src")
}

/// README.md, then every chapter of the guide in the summary's order.
pub fn pages() -> Vec<Page> {
    let mut names = vec!["README.md".to_string()];
    names.extend(
        summary_chapters()
            .iter()
            .map(|c| format!("docs/guide/src/{c}")),
    );
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(repo_root().join(&name))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            Page { name, text }
        })
        .collect()
}

/// The chapters `SUMMARY.md` links to, relative to the guide's source.
fn summary_chapters() -> Vec<String> {
    let text = std::fs::read_to_string(guide_src().join("SUMMARY.md")).unwrap();
    links(&text).into_iter().map(|(_, target)| target).collect()
}

/// The Markdown links of a text outside code blocks and code spans, with
/// the line each is on: `[text](target)`, the target as written.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// The lines of a Markdown text outside fenced code blocks, numbered
/// from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// A line with its code spans (between backticks) blanked out.
fn without_code_spans(line: &str) -> String {
    let mut inside = false;
    line.chars()
        .map(|c| {
            if c == '`' {
                inside = !inside;
                ' '
            } else if inside {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// The id mdBook (and GitHub) gives a heading: lower case, blanks as
/// `-`, punctuation other than `-` and `_` dropped.
fn heading_id(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// The ids of a Markdown text's headings.
fn heading_ids(text: &str) -> Vec<String> {
    prose_lines(text)
        .into_iter()
        .filter_map(|(_, l)| {
            let title = l.trim_start_matches('#');
            (title.len() < l.len() && title.starts_with(' ')).then(|| heading_id(title.trim()))
        })
        .collect()
}

/// What is wrong with one link of the page `from` (a path from the
/// repository's root), if anything.
fn broken(from: &str, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let dir = Path::new(from).parent().unwrap_or(Path::new(""));
    let file = if path.is_empty() {
        repo_root().join(from)
    } else {
        repo_root().join(dir).join(path)
    };
    if !file.exists() {
        return Some(format!("{target}: no such file"));
    }
    if anchor.is_empty() {
        return None;
    }
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    (!heading_ids(&text).iter().any(|id| id == anchor))
        .then(|| format!("{target}: no heading with the id {anchor:?}"))
}

#[test]
fn heading_ids_are_mdbooks() {
    assert_eq!(
        heading_id("A gauntlet split over CI jobs (`--shard`, `runq report merge`)"),
        "a-gauntlet-split-over-ci-jobs---shard-runq-report-merge"
    );
    assert_eq!(heading_id("`runq run`"), "runq-run");
    let text = "# Title\n```sh\n# a comment\n```\n## Sub title\n";
    assert_eq!(heading_ids(text), ["title", "sub-title"]);
    let text = "[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n[d](w.md#e)";
    assert_eq!(links(text), [(1, "x.md".into()), (5, "w.md#e".into())]);
}

#[test]
fn every_chapter_is_in_the_summary_and_every_file_it_names_exists() {
    let listed = summary_chapters();
    assert!(listed.len() >= 10, "{listed:?}");
    for chapter in &listed {
        assert!(
            guide_src().join(chapter).is_file(),
            "docs/guide/src/SUMMARY.md names {chapter}, which does not exist"
        );
    }
    let mut unlisted = Vec::new();
    let mut dirs = vec![guide_src()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(guide_src()).unwrap().to_string_lossy();
            if path.is_dir() {
                dirs.push(path.clone());
            } else if rel.ends_with(".md")
                && rel != "SUMMARY.md"
                && !listed.iter().any(|c| *c == rel)
            {
                unlisted.push(rel.into_owned());
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "chapters not in docs/guide/src/SUMMARY.md (mdBook would leave them out): {unlisted:?}"
    );
}

#[test]
fn every_link_of_the_readme_and_the_guide_resolves() {
    let mut pages = pages();
    pages.push(Page {
        name: "docs/guide/src/SUMMARY.md".into(),
        text: std::fs::read_to_string(guide_src().join("SUMMARY.md")).unwrap(),
    });
    let mut problems = Vec::new();
    let mut count = 0;
    for page in &pages {
        let fences = page
            .text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"));
        if fences.count() % 2 == 1 {
            problems.push(format!("{}: a code block is never closed", page.name));
        }
        for (line, target) in links(&page.text) {
            count += 1;
            if let Some(why) = broken(&page.name, &target) {
                problems.push(format!("{}:{line}: {why}", page.name));
            }
        }
    }
    assert!(count >= 50, "only {count} links");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
