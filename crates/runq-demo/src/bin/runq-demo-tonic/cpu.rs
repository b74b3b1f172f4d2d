//! The CPU-bound blocking parts, each a function of its own
//! (`#[inline(never)]`, so its frame is kept): a key derivation, a JSON
//! parse, a regex compile and name lookups. Each runs for about
//! [`CPU_PART`] and returns a value the caller uses.

use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

/// How long each CPU-bound part runs: thread CPU time for the ones in
/// pure Rust, wall time for the name lookups.
pub(crate) const CPU_PART: Duration = Duration::from_millis(20);

/// Thread CPU time spent since `start`, ns, is under [`CPU_PART`].
fn within(start: u64) -> bool {
    runq_demo::thread_cpu_ns() - start < CPU_PART.as_nanos() as u64
}

/// A session key from a user's name and salt: a SHA-256-like
/// compression function iterated for [`CPU_PART`] of CPU, as a KDF's
/// cost parameter would have it.
#[inline(never)]
pub(crate) fn derive_session_key(user: &str, salt: &[u8]) -> u64 {
    let mut s = [
        0x6a09_e667u32,
        0xbb67_ae85,
        0x3c6e_f372,
        0xa54f_f53a,
        0x510e_527f,
        0x9b05_688c,
        0x1f83_d9ab,
        0x5be0_cd19,
    ];
    for (i, b) in user.bytes().chain(salt.iter().copied()).enumerate() {
        s[i % 8] ^= u32::from(b) << (i % 4 * 8);
    }
    let start = runq_demo::thread_cpu_ns();
    let mut round = 0u32;
    while within(start) {
        for _ in 0..1 << 16 {
            round = round.wrapping_add(0x428a_2f98);
            let ch = (s[4] & s[5]) ^ (!s[4] & s[6]);
            let t1 = s[7]
                .wrapping_add(s[4].rotate_right(6) ^ s[4].rotate_right(11) ^ s[4].rotate_right(25))
                .wrapping_add(ch)
                .wrapping_add(round);
            let maj = (s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]);
            let t2 = (s[0].rotate_right(2) ^ s[0].rotate_right(13) ^ s[0].rotate_right(22))
                .wrapping_add(maj);
            s.rotate_right(1);
            s[4] = s[4].wrapping_add(t1);
            s[0] = t1.wrapping_add(t2);
        }
    }
    std::hint::black_box(u64::from(s[0]) << 32 | u64::from(s[4]))
}

/// A manifest of `entries` services, as JSON.
pub(crate) fn manifest(entries: usize) -> String {
    let items: Vec<serde_json::Value> = (0..entries)
        .map(|i| {
            serde_json::json!({
                "name": format!("service-{i:06}"),
                "replicas": i % 7,
                "ports": [8000 + i % 1000, 9000 + i % 1000],
                "labels": {"tier": if i % 2 == 0 { "web" } else { "batch" }, "zone": i % 3},
                "weight": i as f64 / 3.0,
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
}

/// Parses the manifest `doc` (serde_json, into a `Value`) again and
/// again for [`CPU_PART`] of CPU; returns the replicas it counted.
#[inline(never)]
pub(crate) fn parse_manifest(doc: &str) -> u64 {
    let start = runq_demo::thread_cpu_ns();
    let mut replicas = 0;
    while within(start) {
        let parsed: serde_json::Value = serde_json::from_str(doc).unwrap_or_default();
        let items = parsed.as_array().map(Vec::as_slice).unwrap_or_default();
        replicas += items
            .iter()
            .filter_map(|s| s["replicas"].as_u64())
            .sum::<u64>();
    }
    std::hint::black_box(replicas)
}

/// A route filter of `routes` alternatives, as a regex.
pub(crate) fn route_pattern(routes: usize) -> String {
    let names: Vec<String> = (0..routes).map(|i| format!("svc{i}[a-z]{{2,5}}")).collect();
    format!("^/api/v[0-9]+/({})/[0-9]+(/[a-z_]+)*$", names.join("|"))
}

/// Compiles the route filter `pattern` (regex) again and again for
/// [`CPU_PART`] of CPU; returns the matches of a probe path.
#[inline(never)]
pub(crate) fn compile_route_filter(pattern: &str) -> u64 {
    let start = runq_demo::thread_cpu_ns();
    let mut matched = 0;
    while within(start) {
        if let Ok(re) = regex::Regex::new(pattern) {
            matched += u64::from(re.is_match("/api/v2/svc7abc/42/items"));
        }
    }
    std::hint::black_box(matched)
}

/// Looks the peers' name up (`ToSocketAddrs`, glibc's `getaddrinfo`)
/// again and again for [`CPU_PART`] of wall time; returns the addresses
/// found.
#[inline(never)]
pub(crate) fn resolve_peers() -> u64 {
    let t = Instant::now();
    let mut found = 0;
    while t.elapsed() < CPU_PART {
        found += "localhost:80"
            .to_socket_addrs()
            .map_or(0, |a| a.count() as u64);
    }
    std::hint::black_box(found)
}
