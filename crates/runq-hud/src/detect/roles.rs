//! A thread's role at the time of each event: Tokio moves threads between
//! roles. After `block_in_place` the old worker finishes its blocking code
//! and joins the blocking pool, while a pool thread takes over the
//! worker's core; the same thread can later run a worker again. So a
//! finding belongs to the role its own stack shows at that moment, never
//! to what the thread became later.
//!
//! A stack cut short (deeper than the copy, or through code the walk
//! cannot cross) shows no loop, so no role. It takes the role of the whole
//! stacks that passed through its deepest known frame (the same return
//! address: the same code path, which whole stacks of the same handler
//! show when the stack pointer sat a little higher). Failing that, a
//! thread last seen as a worker is one still; otherwise its finding waits
//! for the next stack that shows a role: a thread last seen idle in the
//! pool that runs deep code has most often just taken over a worker's core
//! (after another worker's `block_in_place`), which its next stacks show.
//! At the session's end, findings still waiting are dropped: their
//! thread was last seen in the pool, or never showed a role at all (a
//! thread watched for its name, a pool thread of the workers' name). Only
//! when discovery took the workers by name, with no stack to go by (a
//! stripped executable, `--workers`), does a thread that never showed a
//! role count as a worker. Workers found by their stacks begin the
//! session as workers of the flavor discovery saw.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Finding;
use crate::classify::Flavor;

/// What a thread was doing when an event happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Running a runtime's tasks, in a loop of this flavor.
    Worker(Flavor),
    /// A blocking-pool thread (`spawn_blocking` work, or idle in the pool).
    Pool,
}

/// Findings of cut stacks waiting for their thread's role are not kept
/// without bound (a target whose every stack is cut).
const MAX_PENDING: usize = 100_000;

/// The roles of the watched threads over the session.
#[derive(Debug, Default)]
pub struct Roles {
    last: BTreeMap<u32, Role>,
    workers: BTreeMap<u32, Flavor>,
    /// Threads with findings made while their role was not known
    /// (workers taken by name).
    unjudged: BTreeSet<u32>,
    pool: BTreeSet<u32>,
    pending: BTreeMap<u32, Vec<Finding>>,
    pending_len: usize,
    dropped: u64,
    /// Per return address of whole stacks: the role they showed (`None`
    /// once both roles went through it).
    by_address: HashMap<u64, Option<Role>>,
    /// Discovery took the workers by name: a thread that never showed a
    /// role is a worker.
    by_names: bool,
    /// Threads whose last whole stack went through no loop (a plain
    /// thread: the main thread in a runtime's `block_on`, a thread of
    /// the program's own).
    plain: BTreeSet<u32>,
}

/// What observing a role released.
#[derive(Debug, Default)]
pub struct Released {
    /// Held findings of a thread now known to be a worker.
    pub findings: Vec<Finding>,
    /// Held findings dropped: their thread turned out to be in the pool.
    pub pool_events: u64,
    /// Held findings dropped: their thread never showed a role, and
    /// discovery went by stacks.
    pub non_worker_events: u64,
}

impl Roles {
    /// The session begins: `by_names` when discovery took the workers by
    /// their names; `workers`, those it saw running a loop of a flavor.
    pub fn begin(&mut self, by_names: bool, workers: &BTreeMap<u32, Flavor>) {
        self.by_names = by_names;
        for (tid, flavor) in workers {
            self.observe(*tid, Role::Worker(*flavor));
        }
    }

    /// True when `tid` was a worker at its last stack that showed a role
    /// (or, with workers taken by name, showed none yet).
    pub fn is_worker_now(&self, tid: u32) -> bool {
        match self.current(tid) {
            Some(Role::Worker(_)) => true,
            Some(Role::Pool) => false,
            None => self.by_names,
        }
    }

    /// The thread `tid` showed `role` on a whole stack; findings held for
    /// it take that role.
    pub fn observe(&mut self, tid: u32, role: Role) -> Released {
        self.plain.remove(&tid);
        self.last.insert(tid, role);
        match role {
            Role::Worker(flavor) => {
                self.workers.entry(tid).or_insert(flavor);
            }
            Role::Pool => {
                self.pool.insert(tid);
            }
        }
        let mut out = Released::default();
        if let Some(held) = self.pending.remove(&tid) {
            self.pending_len -= held.len();
            match role {
                Role::Worker(_) => out.findings = held,
                Role::Pool => out.pool_events = held.len() as u64,
            }
        }
        out
    }

    /// Notes the role a whole stack showed, for each of its addresses.
    pub fn learn(&mut self, addrs: &[u64], role: Role) {
        let kind = |r: Role| matches!(r, Role::Pool);
        for a in addrs {
            self.by_address
                .entry(*a)
                .and_modify(|known| {
                    if known.is_some_and(|k| kind(k) != kind(role)) {
                        *known = None;
                    }
                })
                .or_insert(Some(role));
        }
    }

    /// The thread `tid` showed a whole stack (`addrs`) through no loop: a
    /// plain thread then. The code it went through names no role: a
    /// stack of another thread cut short inside it (the C library's
    /// futex call, std's locks) takes none from it.
    pub fn observe_plain(&mut self, tid: u32, addrs: &[u64]) {
        self.plain.insert(tid);
        for a in addrs {
            self.by_address.insert(*a, None);
        }
    }

    /// The role of a stack cut short (innermost first), by the whole
    /// stacks that went through its deepest known address; else a worker
    /// when its thread was last seen as one (and not plain since); else
    /// not known yet (the next role the thread shows decides).
    pub fn of_cut_stack(&self, tid: u32, addrs: &[u64]) -> Option<Role> {
        let by_path = addrs
            .iter()
            .rev()
            .find_map(|a| self.by_address.get(a))
            .copied()
            .flatten();
        let last = (!self.plain.contains(&tid)).then(|| self.current(tid));
        by_path.or_else(|| last.flatten().filter(|r| *r != Role::Pool))
    }

    /// The role `tid` showed last, if any.
    pub fn current(&self, tid: u32) -> Option<Role> {
        self.last.get(&tid).copied()
    }

    /// Holds a finding of a thread whose role is not known yet.
    pub fn hold(&mut self, f: Finding) {
        if self.pending_len >= MAX_PENDING {
            self.dropped += 1;
            return;
        }
        self.pending_len += 1;
        self.pending.entry(f.tid).or_default().push(f);
    }

    /// The session ends: findings still held belong to threads whose
    /// next role was never seen. Those of a thread last seen in the pool
    /// stay there (counted in `Released::pool_events`); those of a
    /// thread that never showed a role are a worker's only when
    /// discovery took the workers by name (else counted in
    /// `Released::non_worker_events`).
    pub fn flush(&mut self) -> Released {
        self.pending_len = 0;
        let mut out = Released::default();
        for (tid, held) in std::mem::take(&mut self.pending) {
            match self.last.get(&tid) {
                Some(Role::Pool) => out.pool_events += held.len() as u64,
                Some(Role::Worker(_)) => out.findings.extend(held),
                None if self.by_names => {
                    self.unjudged.insert(tid);
                    out.findings.extend(held);
                }
                None => out.non_worker_events += held.len() as u64,
            }
        }
        out
    }

    /// Threads that ran a runtime's tasks at some point, with the flavor
    /// of the loop they were first seen in.
    pub fn workers(&self) -> &BTreeMap<u32, Flavor> {
        &self.workers
    }

    /// A finding of `tid` was made as a worker's, in `role` (`None`:
    /// not known, workers taken by name): the thread is listed among
    /// the workers, as every thread with a finding is.
    pub fn credit(&mut self, tid: u32, role: Option<Role>) {
        match role {
            Some(Role::Worker(flavor)) => {
                self.workers.entry(tid).or_insert(flavor);
            }
            Some(Role::Pool) => {}
            None => {
                self.unjudged.insert(tid);
            }
        }
    }

    /// True when `tid` is listed among the workers: it ran a task loop,
    /// or had a finding while its role was not known.
    pub fn listed(&self, tid: u32) -> bool {
        self.workers.contains_key(&tid) || self.unjudged.contains(&tid)
    }

    /// True for a thread seen in the blocking pool and never as a worker.
    pub fn only_pool(&self, tid: u32) -> bool {
        self.pool.contains(&tid) && !self.workers.contains_key(&tid)
    }

    /// Held findings dropped for lack of room.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Category;

    fn finding(tid: u32, start_ns: u64) -> Finding {
        Finding {
            category: Category::BlockingCall,
            tid,
            start_ns,
            duration_ns: 10,
            stack: std::sync::Arc::from([]),
            holder: None,
            task_id: None,
            call: None,
        }
    }

    #[test]
    fn held_findings_take_the_next_role_seen() {
        let mut r = Roles::default();
        r.hold(finding(7, 1));
        r.hold(finding(8, 2));
        let w = r.observe(7, Role::Worker(Flavor::MultiThread));
        assert_eq!(w.findings.len(), 1);
        let p = r.observe(8, Role::Pool);
        assert!(p.findings.is_empty());
        assert_eq!(p.pool_events, 1);
        assert!(r.flush().findings.is_empty());
    }

    #[test]
    fn a_cut_stack_takes_the_role_of_whole_stacks_through_its_deepest_frame() {
        let mut r = Roles::default();
        let worker = Role::Worker(Flavor::MultiThread);
        r.learn(&[1, 20, 30, 900], worker);
        r.learn(&[1, 40, 901], Role::Pool);
        // The thread was last seen idle in the pool, then took a worker's
        // core: the path through 30 says it is a worker now.
        r.observe(7, Role::Pool);
        assert_eq!(r.of_cut_stack(7, &[1, 20, 30]), Some(worker));
        assert_eq!(r.of_cut_stack(7, &[1, 40]), Some(Role::Pool));
        // 1 went through both roles: no verdict by path; the thread was
        // last in the pool, so its next role decides.
        assert_eq!(r.of_cut_stack(7, &[1]), None);
        r.observe(7, worker);
        assert_eq!(r.of_cut_stack(7, &[1]), Some(worker));
        assert_eq!(r.of_cut_stack(8, &[5]), None);
    }

    #[test]
    fn a_plain_threads_cut_stack_takes_no_workers_role() {
        let mut r = Roles::default();
        let worker = Role::Worker(Flavor::MultiThread);
        // A worker parks through the C library's futex call (2) and
        // std's condvar (3); so does the main thread, in `block_on`.
        r.learn(&[2, 3, 30, 900], worker);
        r.observe(5, worker);
        r.observe_plain(9, &[2, 3, 70, 990]);
        assert_eq!(
            r.of_cut_stack(9, &[2, 3]),
            None,
            "shared code names no role"
        );
        assert_eq!(r.of_cut_stack(9, &[2, 3, 30]), Some(worker));
        // A worker seen plain (a runtime's thread before it ran one)
        // takes no role from its past either.
        r.observe_plain(5, &[2, 80, 991]);
        assert_eq!(r.of_cut_stack(5, &[2]), None);
        r.observe(5, worker);
        assert_eq!(r.of_cut_stack(5, &[2]), Some(worker));
    }

    #[test]
    fn a_worker_that_joins_the_pool_stays_a_worker_of_the_report() {
        let mut r = Roles::default();
        r.observe(7, Role::Worker(Flavor::MultiThread));
        r.observe(7, Role::Pool);
        assert_eq!(r.current(7), Some(Role::Pool));
        assert!(!r.only_pool(7));
        assert_eq!(r.workers().get(&7), Some(&Flavor::MultiThread));
        r.observe(9, Role::Pool);
        assert!(r.only_pool(9));
        r.hold(finding(5, 3));
        r.hold(finding(9, 4));
        r.hold(finding(7, 5));
        let end = r.flush();
        assert!(end.findings.is_empty(), "{:?}", end.findings);
        assert_eq!(end.pool_events, 2, "threads 7 and 9 were last in the pool");
        assert_eq!(end.non_worker_events, 1, "thread 5 never showed a role");
    }

    #[test]
    fn every_thread_with_a_finding_is_listed() {
        let mut r = Roles::default();
        // A cut stack judged a worker's by the path it went through.
        r.credit(4, Some(Role::Worker(Flavor::MultiThread)));
        assert!(r.listed(4) && r.workers().contains_key(&4));
        // Workers taken by name: a finding of a thread of unknown role.
        r.begin(true, &BTreeMap::new());
        r.hold(finding(6, 1));
        assert_eq!(r.flush().findings.len(), 1);
        assert!(r.listed(6) && !r.workers().contains_key(&6));
        assert!(!r.listed(7));
    }

    #[test]
    fn workers_taken_by_name_are_workers_until_their_stacks_say_otherwise() {
        let mut by_names = Roles::default();
        by_names.begin(true, &BTreeMap::new());
        assert!(by_names.is_worker_now(5));
        by_names.hold(finding(5, 3));
        assert_eq!(by_names.flush().findings.len(), 1);
        by_names.observe(5, Role::Pool);
        assert!(!by_names.is_worker_now(5));
        // Found by stacks: the workers discovery saw begin as workers,
        // and a thread of unknown role is none.
        let mut by_stacks = Roles::default();
        by_stacks.begin(false, &BTreeMap::from([(7, Flavor::CurrentThread)]));
        assert!(by_stacks.is_worker_now(7) && !by_stacks.is_worker_now(8));
        assert_eq!(by_stacks.workers().get(&7), Some(&Flavor::CurrentThread));
    }
}
