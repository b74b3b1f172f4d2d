//! Taobench: a port of the model of Meta's TAO benchmark (taobench, part
//! of DCPerf), written from its public description with no source at
//! hand. TAO is Meta's social-graph cache; taobench drives a memcached-like
//! server with many clients issuing small get/set requests whose sizes and
//! hit rate follow TAO's production shape, and reports operations per
//! second and ops per CPU-second.
//!
//! Workers `0..servers` are cache servers (`servers` clamped to leave at
//! least one client); the rest are clients, client `c` served by server
//! `c % servers`, so many clients share one server as taobench's client
//! threads share the server's threads. One operation: the client draws a
//! request from the mix (a hit with probability `hit_permille / 1000`,
//! an object size from a bounded Pareto distribution), posts it to its
//! server and sleeps until answered. The server serves every posted
//! request in a sweep: a hit copies and checksums the object out of the
//! server's cache (`cache_kb`, so the CPU work grows with the size and
//! has a cache footprint), a miss is a short probe. On a miss the client
//! goes off CPU for the backing store (`miss_us`, the long-tail slow
//! path), then posts a set of the object, which the server writes into
//! its cache: memcached's look-aside pattern, which keeps every server
//! request short, as TAO's fast path is, and puts the store's wait where
//! it blocks only the one request.
//!
//! Wake samples, both sides as [`crate::wake_stamp`] defines them, for
//! waits a wake ended: a server's from the first waiting client's stamp
//! (taken just before it posts) to the server running; a client's from
//! its server's stamp before the answer to the client running. A request
//! latency (`request_latencies_ns`, the group's `request_p50_ns`/
//! `request_p99_ns`) runs from the client's first post to the op's end,
//! the miss's store wait and set included. Work units are operations: a
//! client's one per op completed, a server's one per get served, so each
//! role's work/s is the ops/s and the group's is twice it.

use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_US};
use super::request_rate::splitmix64;
use super::schbench::{post, wait_posted, BLOCKED};
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::report::WorkerReport;
use crate::shared::SharedRegion;
use crate::stop::sleep_unless_stopped;
use crate::telemetry::Telemetry;
use crate::wake_stamp::WakeStamp;
use runq_kernel::clock::fast::now_ns;

mod mix;

use mix::{Request, RequestMix};

/// Taobench parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// Server workers (at most the group's size less one).
    pub servers: u64,
    /// Gets that hit, per thousand.
    pub hit_permille: u64,
    /// Smallest object, bytes (the Pareto distribution's scale).
    pub min_object_bytes: u64,
    /// Largest object, bytes (where the distribution is cut off).
    pub max_object_bytes: u64,
    /// The Pareto shape of object sizes, x100 (120: alpha 1.2; smaller is
    /// a heavier tail).
    pub size_alpha_x100: u64,
    /// The backing store's wait on a miss, µs (off CPU).
    pub miss_us: u64,
    /// Each server's cache, KiB.
    pub cache_kb: u64,
    /// Seed of the clients' request mix.
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            servers: 1,
            hit_permille: 900,
            min_object_bytes: 64,
            max_object_bytes: 65_536,
            size_alpha_x100: 120,
            miss_us: 500,
            cache_kb: 4096,
            seed: 1,
        }
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "Taobench",
    summary: "taobench's model (TAO, Meta's graph cache): clients post small gets to cache \
              servers and sleep until answered; a hit copies a Pareto-sized object out of a \
              server's cache_kb, a miss waits miss_us off CPU for the store, then sets it",
    units: "one unit per operation: clients count ops completed, servers gets served, so each \
            role's work/s is the ops/s (the group's is twice it); ops per CPU-second is the \
            ops over the group's summed CPU time (the report's cpu_time_ns)",
    wakes: Some(
        "servers: from the first waiting client's stamp, taken just before it posts, to the \
         server running; clients: from the server's stamp before its answer to the client \
         running; waits a wake ended only",
    ),
    workers: super::WorkerRule::AtLeast {
        n: 2,
        roles: "workers 0..servers serve, at most all but one; the rest are clients",
    },
    wake_figure: super::WakeFigure::Latency,
    params: &[
        ParamRange::new("servers", 1, 1024),
        ParamRange::new("hit_permille", 0, 1000),
        ParamRange::new("min_object_bytes", 1, 1 << 20),
        ParamRange::new("max_object_bytes", 1, 16 << 20),
        ParamRange::new("size_alpha_x100", 10, 1000),
        ParamRange::new("miss_us", 0, MAX_US),
        ParamRange::new("cache_kb", 1, 256 * 1024),
        ParamRange::new("seed", 0, u32::MAX as i64),
    ],
    needs: super::HostNeed::Nothing,
};

/// Rules across parameters: the sizes' bounds in order, and the largest
/// object fits in a server's cache.
pub fn check(p: &Params) -> Result<(), String> {
    if p.min_object_bytes > p.max_object_bytes {
        return Err(format!(
            "min_object_bytes ({}) must not exceed max_object_bytes ({})",
            p.min_object_bytes, p.max_object_bytes
        ));
    }
    if p.max_object_bytes > p.cache_kb * 1024 {
        return Err(format!(
            "max_object_bytes ({}) must fit in cache_kb ({} KiB)",
            p.max_object_bytes, p.cache_kb
        ));
    }
    Ok(())
}

/// A Taobench group's throughput, as taobench reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpsFigures {
    /// Operations per second: the servers' gets served per second of
    /// their wall time, summed.
    pub ops_per_s: f64,
    /// Operations over the group's CPU seconds (clients' and servers').
    pub ops_per_cpu_s: f64,
}

/// The throughput of one Taobench group from its live workers' reports
/// (servers are role 1); `None` without CPU time or a server.
pub fn ops_figures(reports: &[&WorkerReport]) -> Option<OpsFigures> {
    let servers = || reports.iter().filter(|r| r.role == 1);
    let ops: u64 = servers().map(|r| r.work_units).sum();
    let cpu_ns: u64 = reports.iter().map(|r| r.cpu_time_ns).sum();
    (cpu_ns > 0 && servers().next().is_some()).then(|| OpsFigures {
        ops_per_s: servers()
            .filter(|r| r.wall_time_ns > 0)
            .map(|r| r.work_units as f64 * 1e9 / r.wall_time_ns as f64)
            .sum(),
        ops_per_cpu_s: ops as f64 * 1e9 / cpu_ns as f64,
    })
}

/// One cache line per worker: its futex at +0, its "request posted" flag
/// at +4 (clients), the request at +8 (clients) or the pending wake stamp
/// of the first waiting client (servers), the server's answer stamp at
/// +16 (clients).
const SLOT: usize = 64;
const FLAG: usize = 4;
const REQUEST: usize = 8;
const PENDING: usize = 8;
const ANSWER: usize = 16;

struct Group {
    region: SharedRegion,
    workers: usize,
    servers: usize,
    params: Params,
}

/// Servers in a group of `workers` when `asked` for: at least one, and
/// one client left.
fn server_count(asked: u64, workers: usize) -> usize {
    usize::try_from(asked)
        .unwrap_or(usize::MAX)
        .clamp(1, workers.saturating_sub(1).max(1))
}

impl PreparedWork for Group {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let p = &self.params;
        if idx < self.servers {
            let cache = usize::try_from(p.cache_kb * 1024).unwrap_or(1024);
            let max_object = usize::try_from(p.max_object_bytes).unwrap_or(cache);
            let clients = (self.servers..self.workers)
                .filter(|c| c % self.servers == idx)
                .collect();
            return Ok(Box::new(Server {
                region: self.region.clone(),
                me: idx * SLOT,
                clients,
                cache: vec![0x5a; cache],
                out: vec![0; cache.min(64.max(max_object))],
            }));
        }
        let mut rng = p.seed ^ (idx as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        splitmix64(&mut rng);
        Ok(Box::new(Client {
            region: self.region.clone(),
            me: idx * SLOT,
            server: (idx % self.servers) * SLOT,
            mix: RequestMix::new(p),
            rng,
            miss: Duration::from_micros(p.miss_us),
        }))
    }
}

/// Maps one slot per worker.
pub fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    Ok(Box::new(Group {
        region: SharedRegion::new(workers.max(1) * SLOT)?,
        workers,
        servers: server_count(p.servers, workers),
        params: p.clone(),
    }))
}

/// A cache server.
struct Server {
    region: SharedRegion,
    me: usize,
    clients: Vec<usize>,
    cache: Vec<u8>,
    /// The answer's buffer: a hit's object is copied here.
    out: Vec<u8>,
}

impl Server {
    /// Serves every posted request of its clients: the gets served.
    fn sweep(&mut self) -> u64 {
        let mut gets = 0;
        for i in 0..self.clients.len() {
            let slot = self.clients[i] * SLOT;
            if self
                .region
                .atomic_u32(slot + FLAG)
                .swap(0, Ordering::AcqRel)
                == 1
            {
                let req = Request::decode(
                    self.region
                        .atomic_u64(slot + REQUEST)
                        .load(Ordering::Acquire),
                );
                gets += u64::from(!req.set);
                self.serve(req);
                WakeStamp::new(self.region.atomic_u64(slot + ANSWER)).mark();
                post(self.region.atomic_u32(slot));
            }
        }
        gets
    }

    /// A hit copies the object out of the cache and checksums it, a miss
    /// probes one line, a set writes the object.
    fn serve(&mut self, req: Request) {
        let len = if req.set || req.hit {
            req.size as usize
        } else {
            64
        };
        let len = len.min(self.cache.len());
        let at = (req.key as usize * 64) % (self.cache.len() - len + 1);
        if req.set {
            self.cache[at..at + len].fill(req.key as u8);
            return;
        }
        let out = &mut self.out[..len];
        out.copy_from_slice(&self.cache[at..at + len]);
        let sum = out
            .iter()
            .fold(0u64, |s, &b| s.wrapping_mul(31).wrapping_add(u64::from(b)));
        std::hint::black_box(sum);
    }
}

impl WorkerBody for Server {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let me = self.me;
        let pending = |r: &SharedRegion| WakeStamp::new(r.atomic_u64(me + PENDING)).claim();
        self.region
            .atomic_u32(self.me)
            .store(BLOCKED, Ordering::Release);
        // Stamps of clients this sweep serves belong to no wake.
        pending(&self.region);
        let gets = self.sweep();
        if gets == 0 {
            let woken = wait_posted(self.region.atomic_u32(self.me));
            let stamp = pending(&self.region);
            if woken == Some(true) && stamp != 0 {
                tel.record_wake_stamped(stamp);
            }
        }
        gets
    }

    fn role(&self) -> u8 {
        1
    }
}

/// A client.
struct Client {
    region: SharedRegion,
    me: usize,
    server: usize,
    mix: RequestMix,
    rng: u64,
    miss: Duration,
}

impl Client {
    /// Posts `req` to the server and sleeps until answered; false on STOP.
    fn call(&self, req: Request, tel: &mut Telemetry) -> bool {
        let own = self.region.atomic_u32(self.me);
        own.store(BLOCKED, Ordering::Release);
        self.region
            .atomic_u64(self.me + REQUEST)
            .store(req.encode(), Ordering::Release);
        self.region
            .atomic_u32(self.me + FLAG)
            .store(1, Ordering::Release);
        WakeStamp::new(self.region.atomic_u64(self.server + PENDING)).mark_pending();
        post(self.region.atomic_u32(self.server));
        match wait_posted(own) {
            None => false,
            Some(woken) => {
                if woken {
                    tel.record_wake_stamped(
                        WakeStamp::new(self.region.atomic_u64(self.me + ANSWER)).read(),
                    );
                }
                true
            }
        }
    }
}

impl WorkerBody for Client {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let req = self.mix.next(&mut self.rng);
        let start = now_ns();
        if !self.call(req, tel) {
            return 0;
        }
        if !req.hit {
            tel.plan(u64::try_from(self.miss.as_nanos()).unwrap_or(u64::MAX));
            if !sleep_unless_stopped(self.miss) || !self.call(req.as_set(), tel) {
                return 0;
            }
        }
        tel.record_request(now_ns().saturating_sub(start));
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_count_the_servers_gets_over_everyones_cpu() {
        let worker = |role: u8, units: u64, cpu_ms: u64| {
            let mut r = crate::telemetry::Telemetry::start().finish(0, false);
            r.role = role;
            r.work_units = units;
            r.wall_time_ns = 2_000_000_000;
            r.cpu_time_ns = cpu_ms * 1_000_000;
            r
        };
        let (server, a, b) = (
            worker(1, 1000, 500),
            worker(0, 600, 250),
            worker(0, 400, 250),
        );
        let f = ops_figures(&[&server, &a, &b]).unwrap();
        assert_eq!(f.ops_per_s, 500.0);
        assert_eq!(f.ops_per_cpu_s, 1000.0);
        assert_eq!(ops_figures(&[&a, &b]), None);
    }

    /// Runs a server and a client of `p` in two threads for `ops`
    /// operations: their reports (server, client).
    fn serve(p: &Params, ops: u64) -> (WorkerReport, WorkerReport) {
        use std::sync::atomic::AtomicBool;
        let region = SharedRegion::new(2 * SLOT).unwrap();
        let cache = usize::try_from(p.cache_kb * 1024).unwrap();
        let mut server = Server {
            region: region.clone(),
            me: 0,
            clients: vec![1],
            cache: vec![0x5a; cache],
            out: vec![0; cache],
        };
        let mut client = Client {
            region: region.clone(),
            me: SLOT,
            server: 0,
            mix: RequestMix::new(p),
            rng: p.seed,
            miss: Duration::from_micros(p.miss_us),
        };
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let server = s.spawn(|| {
                let mut tel = Telemetry::start();
                while !done.load(Ordering::Acquire) {
                    let units = server.iterate(&mut tel);
                    tel.end_iteration(units);
                }
                let mut report = tel.finish(0, false);
                report.role = server.role(); // as the spawner sets it
                report
            });
            let mut tel = Telemetry::start();
            for _ in 0..ops {
                let units = client.iterate(&mut tel);
                tel.end_iteration(units);
            }
            done.store(true, Ordering::Release);
            post(region.atomic_u32(0)); // the server's last wait
            (server.join().unwrap(), tel.finish(0, false))
        })
    }

    #[test]
    fn each_side_counts_every_operation_and_the_client_its_request_latency() {
        let p = Params {
            hit_permille: 500,
            miss_us: 0,
            cache_kb: 256,
            max_object_bytes: 4096,
            ..Params::default()
        };
        let (server, client) = serve(&p, 2000);
        assert_eq!(client.work_units, 2000);
        assert_eq!(server.work_units, 2000, "gets served, sets not counted");
        assert_eq!(client.request_sample_total, 2000);
        assert_eq!(server.request_sample_total, 0);
        // A miss is two calls (get, set), each at most one wake per side.
        assert!(
            client.wake_sample_total <= 2000 + 1100,
            "{}",
            client.wake_sample_total
        );
        assert!(
            server.wake_sample_total <= 2000 + 1100,
            "{}",
            server.wake_sample_total
        );
        let f = ops_figures(&[&server, &client]).unwrap();
        assert!(f.ops_per_s > 0.0 && f.ops_per_cpu_s > 0.0);
    }

    #[test]
    fn servers_leave_a_client_and_clients_spread_over_them() {
        assert_eq!(server_count(1, 2), 1);
        assert_eq!(server_count(4, 3), 2);
        assert_eq!(server_count(0, 8), 1);
        assert_eq!(server_count(3, 8), 3);
    }

    #[test]
    fn size_bounds_must_be_ordered_and_fit_the_cache() {
        assert_eq!(check(&Params::default()), Ok(()));
        let backwards = Params {
            min_object_bytes: 2048,
            max_object_bytes: 1024,
            ..Params::default()
        };
        assert!(check(&backwards).unwrap_err().contains("min_object_bytes"));
        let too_big = Params {
            max_object_bytes: 8 << 20,
            cache_kb: 1024,
            ..Params::default()
        };
        assert!(check(&too_big).unwrap_err().contains("cache_kb"));
    }
}
