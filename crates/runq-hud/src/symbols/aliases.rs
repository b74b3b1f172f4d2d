//! Names that share one body. The linker folds functions whose code is
//! the same into one, every name kept at one address: the standard
//! library's `<&File as Write>::write_vectored`,
//! `<&TcpStream as Write>::write_vectored` and
//! `<&UnixStream as Write>::write_vectored` are one function, and a
//! symbolizer names it by whichever comes first. This table, read once
//! from an executable's symbol table, gives each such name its siblings,
//! so a caller that knows more (the descriptor a call slept on) can pick
//! the right one.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use object::{Object, ObjectSymbol, SymbolKind};

use super::Frame;
use crate::sleep_call::self_type;

/// Each demangled name of a function that shares its address with
/// other names, and all the names at that address.
#[derive(Debug, Default)]
pub struct Aliases {
    siblings: HashMap<Arc<str>, Arc<[Arc<str>]>>,
    /// Each name's [`signature`], sorted: most frames have no sibling,
    /// and are told so without hashing their (long, generic) names.
    signatures: Vec<u64>,
}

/// A name's length and last 8 bytes, as one word.
fn signature(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let tail = &bytes[bytes.len().saturating_sub(8)..];
    let mut word = [0u8; 8];
    word[..tail.len()].copy_from_slice(tail);
    u64::from_ne_bytes(word) ^ (bytes.len() as u64).rotate_left(48)
}

impl Aliases {
    /// The table of the ELF file at `path` (empty when it cannot be
    /// read or has no symbol table).
    pub fn of_file(path: &Path) -> Aliases {
        let Ok(data) = crate::mapped::MappedFile::open(path) else {
            return Aliases::default();
        };
        let Ok(file) = object::File::parse(&*data) else {
            return Aliases::default();
        };
        let mut by_addr: HashMap<u64, Vec<&str>> = HashMap::new();
        for s in file.symbols() {
            if s.kind() != SymbolKind::Text || s.address() == 0 {
                continue;
            }
            if let Ok(name) = s.name() {
                by_addr.entry(s.address()).or_default().push(name);
            }
        }
        Aliases::from_groups(by_addr.into_values().filter(|names| names.len() > 1))
    }

    /// The table of groups of mangled (or plain) names, one group per
    /// address.
    fn from_groups<'a>(groups: impl Iterator<Item = Vec<&'a str>>) -> Aliases {
        let mut siblings = HashMap::new();
        for group in groups {
            let mut names: Vec<Arc<str>> = group.iter().map(|n| demangled(n).into()).collect();
            names.sort();
            names.dedup();
            if names.len() < 2 {
                continue;
            }
            let shared: Arc<[Arc<str>]> = names.into();
            for n in shared.iter() {
                siblings.insert(Arc::clone(n), Arc::clone(&shared));
            }
        }
        let mut signatures: Vec<u64> = siblings.keys().map(|n| signature(n)).collect();
        signatures.sort_unstable();
        signatures.dedup();
        Aliases {
            siblings,
            signatures,
        }
    }

    /// Every name of the function named `function` (itself included),
    /// when it has others.
    pub fn of(&self, function: &str) -> Option<&[Arc<str>]> {
        self.signatures.binary_search(&signature(function)).ok()?;
        self.siblings.get(function).map(|s| &s[..])
    }

    /// How many names have siblings.
    pub fn len(&self) -> usize {
        self.siblings.len()
    }

    /// True when no name has a sibling.
    pub fn is_empty(&self) -> bool {
        self.siblings.is_empty()
    }
}

/// How far out [`name_by_callers`] looks for a caller that names a type.
const CALLERS: usize = 4;

/// Names each frame of `frames` (innermost first) whose function has
/// siblings by the one its callers name: the nearest caller (within
/// [`CALLERS`] frames) that is a method of one of the siblings' types
/// says which type's function ran (mio's
/// `<&mio::net::tcp::stream::TcpStream as Write>::write_vectored` calls
/// std's socket write, which the symbol table also names as a file's).
pub fn name_by_callers(frames: &mut [Frame], aliases: &Aliases) {
    if aliases.is_empty() {
        return;
    }
    for i in 0..frames.len() {
        let Some(names) = aliases.of(&frames[i].function) else {
            continue;
        };
        let types: Vec<Option<&str>> = names.iter().map(|n| self_type(n)).collect();
        let called_as = frames[i + 1..]
            .iter()
            .take(CALLERS)
            .filter_map(|f| self_type(&f.function))
            .find(|t| types.contains(&Some(*t)));
        let Some(ty) = called_as else {
            continue;
        };
        if self_type(&frames[i].function) != Some(ty) {
            let at = types.iter().position(|t| *t == Some(ty));
            if let Some(name) = at.map(|k| Arc::clone(&names[k])) {
                frames[i].function = name;
            }
        }
    }
}

/// A symbol's name as the symbolizer shows it: demangled, without the
/// legacy hash.
fn demangled(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_at_one_address_are_siblings_and_hashes_are_dropped() {
        // The standard library's own names (v0 mangling), as its build
        // of this toolchain exports them.
        let file = "_RNvXs8_NtCsjrHSEGnQ3l9_3std2fsRNtB5_4FileNtNtB7_2io5Write14write_vectored";
        let tcp = "_RNvXs2_NtNtCsjrHSEGnQ3l9_3std3net3tcpRNtB5_9TcpStreamNtNtB9_2io5Write14write_vectored";
        let groups = vec![vec![file, tcp], vec!["alone"], vec!["same", "same"]];
        let aliases = Aliases::from_groups(groups.into_iter());
        let names = aliases
            .of("<&std::fs::File as std::io::Write>::write_vectored")
            .expect("siblings");
        let names: Vec<&str> = names.iter().map(|n| &**n).collect();
        assert_eq!(
            names,
            [
                "<&std::fs::File as std::io::Write>::write_vectored",
                "<&std::net::tcp::TcpStream as std::io::Write>::write_vectored",
            ]
        );
        assert_eq!(aliases.len(), 2);
        assert!(aliases.of("alone").is_none() && aliases.of("same").is_none());
    }

    #[test]
    fn a_shared_body_is_named_by_the_type_its_caller_is_a_method_of() {
        let file = "_RNvXs8_NtCsjrHSEGnQ3l9_3std2fsRNtB5_4FileNtNtB7_2io5Write14write_vectored";
        let tcp = "_RNvXs2_NtNtCsjrHSEGnQ3l9_3std3net3tcpRNtB5_9TcpStreamNtNtB9_2io5Write14write_vectored";
        let aliases = Aliases::from_groups(vec![vec![file, tcp]].into_iter());
        let frame = |name: &str| Frame {
            function: name.into(),
            file: None,
            line: None,
            module: None,
            inlined: false,
        };
        let shared = "<&std::fs::File as std::io::Write>::write_vectored";
        let mut frames = vec![
            frame("writev"),
            frame(shared),
            frame("<&mio::net::tcp::stream::TcpStream as std::io::Write>::write_vectored"),
            frame("tokio::io::poll_evented::PollEvented<E>::poll_write_vectored"),
        ];
        name_by_callers(&mut frames, &aliases);
        assert_eq!(
            &*frames[1].function,
            "<&std::net::tcp::TcpStream as std::io::Write>::write_vectored"
        );
        // No caller of one of the types: the name stays.
        let mut alone = vec![frame(shared), frame("app::flush")];
        name_by_callers(&mut alone, &aliases);
        assert_eq!(&*alone[0].function, shared);
    }

    /// This test binary links the standard library's socket and file
    /// writes: where they are one body (the same address), the table
    /// says so, and where they are not, it does not.
    #[test]
    fn the_standard_library_socket_and_file_writes() {
        use std::io::{IoSlice, Result, Write};
        type WriteV<T> = fn(&mut T, &[IoSlice<'_>]) -> Result<usize>;
        let tcp: WriteV<&std::net::TcpStream> = <&std::net::TcpStream as Write>::write_vectored;
        let file: WriteV<&std::fs::File> = <&std::fs::File as Write>::write_vectored;
        let one_body = std::hint::black_box(tcp as usize) == std::hint::black_box(file as usize);
        let aliases = Aliases::of_file(&std::env::current_exe().unwrap());
        let names = aliases.of("<&std::net::tcp::TcpStream as std::io::Write>::write_vectored");
        let with_file = names.is_some_and(|n| {
            n.iter()
                .any(|n| &**n == "<&std::fs::File as std::io::Write>::write_vectored")
        });
        assert_eq!(with_file, one_body, "{names:?}");
    }
}
