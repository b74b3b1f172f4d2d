//! Kernel configuration text: a fragment merged onto a `.config` as
//! `scripts/kconfig/merge_config.sh -m` does (each symbol the fragment
//! names takes the fragment's line, the others stay), the symbols that
//! must still be on after `make olddefconfig`, and a tree's version from
//! its top Makefile.

/// One setting of a config file: `CONFIG_X=value` or `# CONFIG_X is not
/// set` (value `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The symbol without `CONFIG_`.
    pub symbol: String,
    /// Its value (`y`, `m`, a number, a quoted string), `None` when unset.
    pub value: Option<String>,
}

impl Setting {
    /// The setting of one config line, if it is one.
    pub fn parse(line: &str) -> Option<Setting> {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# CONFIG_") {
            let symbol = rest.strip_suffix(" is not set")?;
            return Some(Setting {
                symbol: symbol.to_string(),
                value: None,
            });
        }
        let (symbol, value) = line.strip_prefix("CONFIG_")?.split_once('=')?;
        Some(Setting {
            symbol: symbol.to_string(),
            value: Some(value.to_string()),
        })
    }

    /// The setting as a config line.
    pub fn line(&self) -> String {
        match &self.value {
            Some(v) => format!("CONFIG_{}={v}", self.symbol),
            None => format!("# CONFIG_{} is not set", self.symbol),
        }
    }
}

/// Every setting of a config text, in order (comments and blank lines
/// other than `is not set` skipped).
pub fn settings(text: &str) -> Vec<Setting> {
    text.lines().filter_map(Setting::parse).collect()
}

/// What merging a fragment did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The merged config text.
    pub text: String,
    /// `CONFIG_X: old -> new` for each symbol whose value the fragment
    /// changed.
    pub changed: Vec<String>,
}

/// `base` with every setting of `fragment`: a symbol the base sets is
/// replaced where it stands, a new one appended; later fragment lines win.
pub fn merge(base: &str, fragment: &str) -> Merged {
    let frag = settings(fragment);
    let wanted = |symbol: &str| frag.iter().rev().find(|s| s.symbol == symbol);
    let mut out = String::new();
    let mut changed = Vec::new();
    let mut placed: Vec<&str> = Vec::new();
    for line in base.lines() {
        let Some(old) = Setting::parse(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        match wanted(&old.symbol) {
            Some(new) if !placed.contains(&new.symbol.as_str()) => {
                if new.value != old.value {
                    changed.push(change(&old, new));
                }
                out.push_str(&new.line());
                out.push('\n');
                placed.push(&new.symbol);
            }
            Some(_) => {}
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    for (i, s) in frag.iter().enumerate() {
        let last = !frag[i + 1..].iter().any(|t| t.symbol == s.symbol);
        if last && !placed.contains(&s.symbol.as_str()) {
            out.push_str(&s.line());
            out.push('\n');
            placed.push(&s.symbol);
        }
    }
    Merged { text: out, changed }
}

fn change(old: &Setting, new: &Setting) -> String {
    let v = |s: &Setting| s.value.clone().unwrap_or_else(|| "n".into());
    format!("CONFIG_{}: {} -> {}", old.symbol, v(old), v(new))
}

/// The symbols of `must` that `config` does not set to `y` (after `make
/// olddefconfig`, a symbol whose dependencies are missing is dropped).
pub fn missing<'a>(config: &str, must: &[&'a str]) -> Vec<&'a str> {
    let on = settings(config);
    must.iter()
        .filter(|m| {
            !on.iter()
                .any(|s| s.symbol == **m && s.value.as_deref() == Some("y"))
        })
        .copied()
        .collect()
}

/// A kernel tree's version from its top Makefile (`VERSION`,
/// `PATCHLEVEL`, `SUBLEVEL`, `EXTRAVERSION`): `6.12.117`, `6.15.0-rc2`.
pub fn makefile_version(makefile: &str) -> Option<String> {
    let var = |name: &str| {
        makefile.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let (major, minor) = (var("VERSION")?, var("PATCHLEVEL")?);
    if major.is_empty() || minor.is_empty() {
        return None;
    }
    let sub = var("SUBLEVEL")
        .filter(|s| !s.is_empty())
        .unwrap_or("0".into());
    Some(format!(
        "{major}.{minor}.{sub}{}",
        var("EXTRAVERSION").unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "\
#
# Automatically generated file; DO NOT EDIT.
#
CONFIG_BPF_SYSCALL=y
# CONFIG_SCHED_CLASS_EXT is not set
CONFIG_DRM=y
CONFIG_HZ=250
# CONFIG_IKCONFIG is not set
";

    #[test]
    fn the_fragment_replaces_in_place_and_appends_the_rest() {
        let frag = "CONFIG_SCHED_CLASS_EXT=y\n# CONFIG_DRM is not set\nCONFIG_BPF_SYSCALL=y\n\
                    CONFIG_IKCONFIG_PROC=y\n# a comment\nCONFIG_HZ=100\nCONFIG_HZ=1000\n";
        let m = merge(BASE, frag);
        let lines: Vec<&str> = m.text.lines().collect();
        assert_eq!(
            &lines[3..],
            [
                "CONFIG_BPF_SYSCALL=y",
                "CONFIG_SCHED_CLASS_EXT=y",
                "# CONFIG_DRM is not set",
                "CONFIG_HZ=1000",
                "# CONFIG_IKCONFIG is not set",
                "CONFIG_IKCONFIG_PROC=y",
            ]
        );
        assert_eq!(lines[1], "# Automatically generated file; DO NOT EDIT.");
        assert_eq!(
            m.changed,
            [
                "CONFIG_SCHED_CLASS_EXT: n -> y",
                "CONFIG_DRM: y -> n",
                "CONFIG_HZ: 250 -> 1000"
            ]
        );
    }

    #[test]
    fn merging_twice_changes_nothing_more() {
        let frag = include_str!("sched_ext.config");
        let once = merge(BASE, frag);
        let twice = merge(&once.text, frag);
        assert_eq!(twice.text, once.text);
        assert!(twice.changed.is_empty(), "{:?}", twice.changed);
        assert!(missing(&once.text, &["SCHED_CLASS_EXT", "IKCONFIG_PROC"]).is_empty());
    }

    #[test]
    fn a_symbol_olddefconfig_dropped_is_missing() {
        let after =
            "CONFIG_SCHED_CLASS_EXT=y\n# CONFIG_DEBUG_INFO_BTF is not set\nCONFIG_IKCONFIG=m\n";
        assert_eq!(
            missing(
                after,
                &["SCHED_CLASS_EXT", "DEBUG_INFO_BTF", "IKCONFIG", "X"]
            ),
            ["DEBUG_INFO_BTF", "IKCONFIG", "X"]
        );
    }

    #[test]
    fn versions_from_top_makefiles() {
        let mk =
            "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\n\
                  EXTRAVERSION =\nNAME = Baby Opossum Posse\n";
        assert_eq!(makefile_version(mk).as_deref(), Some("6.12.117"));
        let rc = "VERSION = 6\nPATCHLEVEL = 15\nSUBLEVEL = 0\nEXTRAVERSION = -rc2\n";
        assert_eq!(makefile_version(rc).as_deref(), Some("6.15.0-rc2"));
        assert_eq!(makefile_version("all:\n\ttrue\n"), None);
    }
}
