//! NetTraffic: pairs of workers send messages to each other over real
//! TCP or UDP sockets on the loopback interface (127.0.0.1), so every
//! message goes through the kernel's network stack (the socket layer,
//! TCP/UDP and IP, loopback's transmit and the receive softirq) before it
//! wakes its receiver. With `path = "nic"` (in a VM with `--vm-net`) the
//! odd worker's socket lives in the NIC pair's far namespace, so every
//! message leaves through one virtio-net device and arrives through the
//! other's receive interrupt ([`runq_kernel::netns`]).
//!
//! - `ping_pong`: the even worker of a pair sends a message and waits for
//!   the odd one's reply of the same size; a round trip per iteration.
//! - `stream`: the even worker sends without waiting, as fast as the
//!   socket takes its messages; the odd worker receives them.
//!
//! Each message begins with its sender's clock reading taken just before
//! the `send` call; a receive that blocked records from that stamp to
//! running again with the whole message (a receive that found it waiting
//! records nothing). A worker's work units are the bytes it moved (sent
//! or received), its iterations its round trips (ping-pong) or messages
//! (stream); [`net_figures`] turns them into the bytes and messages a
//! second that arrived.

use std::io;
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};

use serde::{Deserialize, Serialize};

use super::ranges::{ParamRange, MAX_ITERS};
use super::{PreparedWork, TypeInfo, WorkerBody};
use crate::stop::request_stop;
use crate::telemetry::Telemetry;
use runq_kernel::clock::fast::now_ns;
use runq_kernel::netns;

/// The transport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// A TCP connection per pair (`TCP_NODELAY`).
    #[default]
    Tcp,
    /// A pair of connected UDP sockets; a message is one datagram.
    Udp,
}

/// Who waits for whom.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A request and a reply of `msg_bytes` each, one at a time.
    #[default]
    PingPong,
    /// One way, from the even worker to the odd one, without waiting.
    Stream,
}

/// Which way the messages go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetPath {
    /// The loopback device, inside one namespace.
    #[default]
    Loopback,
    /// The NIC pair of `--vm-net`: out of one virtio-net device, in
    /// through the other's receive interrupt.
    Nic,
}

/// The largest UDP payload over IPv4.
const MAX_UDP_BYTES: u64 = 65_507;

/// NetTraffic parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Params {
    /// TCP or UDP.
    pub proto: Proto,
    /// Ping-pong or one-way stream.
    pub mode: Mode,
    /// Bytes per message (the stamp takes the first 8).
    pub msg_bytes: u64,
    /// Spin units before each send.
    pub spin_iters: u64,
    /// Loopback, or the NIC pair of a VM run with `--vm-net`.
    pub path: NetPath,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            proto: Proto::Tcp,
            mode: Mode::PingPong,
            msg_bytes: 1024,
            spin_iters: 0,
            path: NetPath::Loopback,
        }
    }
}

impl Params {
    /// A UDP message must fit one datagram.
    pub fn validate(&self) -> Result<(), String> {
        if self.proto == Proto::Udp && self.msg_bytes > MAX_UDP_BYTES {
            return Err(format!(
                "msg_bytes={} does not fit one UDP datagram (at most {MAX_UDP_BYTES}); use \
                 proto=tcp or a smaller message",
                self.msg_bytes
            ));
        }
        Ok(())
    }
}

/// Description for `--list`.
pub const INFO: TypeInfo = TypeInfo {
    name: "NetTraffic",
    summary: "pairs of workers exchange stamped messages over TCP or UDP on loopback \
              (127.0.0.1) or, with path=nic in a --vm-net VM, through two virtio-net devices; \
              ping-pong or a one-way stream",
    units: "one unit per byte sent or received; one iteration per round trip (ping_pong) or \
            message (stream); the report adds the bytes/s and messages/s that arrived",
    wakes: Some(
        "a receive that blocked: from the sender's stamp, taken just before its send, to the \
         receiver running with the whole message (the loopback stack's time is in it)",
    ),
    workers: super::WorkerRule::PAIRS,
    wake_figure: super::WakeFigure::MessageLatency,
    params: &[
        ParamRange::new("msg_bytes", 8, 1 << 20),
        ParamRange::new("spin_iters", 0, MAX_ITERS),
    ],
    needs: super::HostNeed::Nothing,
};

/// A connected pair of sockets: both on loopback, or (`path = nic`) the
/// even one at the NIC pair's near address and the odd one made in its
/// far namespace.
pub(super) fn socket_pair(proto: Proto, path: NetPath) -> io::Result<(OwnedFd, OwnedFd)> {
    let (near, far) = match path {
        NetPath::Loopback => (Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST),
        NetPath::Nic => (netns::NIC_LOCAL_ADDR, netns::NIC_PEER_ADDR),
    };
    let in_far = |f: &dyn Fn() -> io::Result<OwnedFd>| match path {
        NetPath::Loopback => f(),
        NetPath::Nic => netns::with_netns(&netns::nic_peer_netns(), f),
    };
    match proto {
        Proto::Tcp => {
            let listener = in_far(&|| TcpListener::bind((far, 0)).map(OwnedFd::from))?;
            let listener = TcpListener::from(listener);
            let a = TcpStream::connect(listener.local_addr()?)?;
            let (b, _) = listener.accept()?;
            a.set_nodelay(true)?;
            b.set_nodelay(true)?;
            Ok((a.into(), b.into()))
        }
        Proto::Udp => {
            let a = UdpSocket::bind((near, 0))?;
            let b = UdpSocket::from(in_far(&|| UdpSocket::bind((far, 0)).map(OwnedFd::from))?);
            a.connect(b.local_addr()?)?;
            b.connect(a.local_addr()?)?;
            Ok((a.into(), b.into()))
        }
    }
}

struct Pairs {
    sockets: Vec<(Option<OwnedFd>, Option<OwnedFd>)>,
    params: Params,
}

impl PreparedWork for Pairs {
    fn worker(&mut self, idx: usize) -> io::Result<Box<dyn WorkerBody>> {
        let pair = self.sockets.get_mut(idx / 2);
        let fd = pair.and_then(|(a, b)| if idx % 2 == 0 { a.take() } else { b.take() });
        let fd = fd.ok_or_else(|| io::Error::other("socket already taken"))?;
        Ok(Box::new(Peer::new(fd, idx, &self.params)))
    }

    fn release_parent_copies(&mut self) {
        self.sockets.clear();
    }
}

/// Connects one socket pair per worker pair.
pub fn prepare(p: &Params, workers: usize) -> io::Result<Box<dyn PreparedWork>> {
    let sockets = (0..workers / 2)
        .map(|_| socket_pair(p.proto, p.path).map(|(a, b)| (Some(a), Some(b))))
        .collect::<io::Result<_>>()?;
    Ok(Box::new(Pairs {
        sockets,
        params: p.clone(),
    }))
}

/// What a receive or send came to.
enum Transfer {
    /// The whole message went through.
    Done,
    /// A signal (the stop) interrupted it.
    Interrupted,
    /// The partner's end closed.
    Closed,
}

struct Peer {
    fd: OwnedFd,
    buf: Vec<u8>,
    even: bool,
    stream: bool,
    /// UDP: one receive is one whole message.
    whole_datagrams: bool,
    spin: u64,
    partner: usize,
    partner_lost: bool,
}

impl Peer {
    /// Worker `idx`'s end of its pair's connection.
    fn new(fd: OwnedFd, idx: usize, p: &Params) -> Peer {
        Peer {
            fd,
            buf: vec![0; p.msg_bytes as usize],
            even: idx % 2 == 0,
            stream: p.mode == Mode::Stream,
            whole_datagrams: p.proto == Proto::Udp,
            spin: p.spin_iters,
            partner: idx ^ 1,
            partner_lost: false,
        }
    }

    /// Sends the buffer, stamped just before the first `send`.
    fn send(&mut self) -> Transfer {
        self.buf[..8].copy_from_slice(&now_ns().to_ne_bytes());
        let mut sent = 0;
        while sent < self.buf.len() {
            let rest = &self.buf[sent..];
            // SAFETY: sending from a valid slice; MSG_NOSIGNAL: EPIPE, no SIGPIPE.
            let n = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            match n {
                n if n > 0 => sent += n as usize,
                _ => return self.failed(),
            }
        }
        Transfer::Done
    }

    /// Receives one whole message and records its latency if it waited.
    fn receive(&mut self, tel: &mut Telemetry) -> Transfer {
        let start = now_ns();
        let mut got = 0;
        while got < self.buf.len() {
            let rest = &mut self.buf[got..];
            // SAFETY: receiving into a valid slice.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), rest.as_mut_ptr().cast(), rest.len(), 0) };
            match n {
                0 if !self.whole_datagrams => return self.closed(),
                n if n >= 0 && self.whole_datagrams => break,
                n if n > 0 => got += n as usize,
                _ => return self.failed(),
            }
        }
        let stamp = u64::from_ne_bytes(self.buf[..8].try_into().unwrap_or_default());
        tel.record_wake_if_waited(start, stamp);
        Transfer::Done
    }

    fn closed(&mut self) -> Transfer {
        self.partner_lost = true;
        Transfer::Closed
    }

    /// A failed call: the stop's interruption, a partner gone, or an
    /// error that ends the worker.
    fn failed(&mut self) -> Transfer {
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => Transfer::Interrupted,
            Some(libc::EPIPE | libc::ECONNRESET | libc::ECONNREFUSED) => self.closed(),
            _ => {
                request_stop();
                Transfer::Interrupted
            }
        }
    }
}

impl WorkerBody for Peer {
    #[inline(always)]
    fn iterate(&mut self, tel: &mut Telemetry) -> u64 {
        let bytes = self.buf.len() as u64;
        let spin = |tel: &mut Telemetry, n: u64| if n > 0 { tel.spin(n) } else { 0 };
        if self.stream {
            if self.even {
                spin(tel, self.spin);
                return if matches!(self.send(), Transfer::Done) {
                    bytes
                } else {
                    0
                };
            }
            return if matches!(self.receive(tel), Transfer::Done) {
                bytes
            } else {
                0
            };
        }
        if self.even {
            spin(tel, self.spin);
            if !matches!(self.send(), Transfer::Done) {
                return 0;
            }
            return if matches!(self.receive(tel), Transfer::Done) {
                2 * bytes
            } else {
                bytes
            };
        }
        if !matches!(self.receive(tel), Transfer::Done) {
            return 0;
        }
        spin(tel, self.spin);
        if matches!(self.send(), Transfer::Done) {
            2 * bytes
        } else {
            bytes
        }
    }

    fn role(&self) -> u8 {
        u8::from(self.stream && !self.even)
    }

    fn partner_lost(&self) -> Option<usize> {
        self.partner_lost.then_some(self.partner)
    }
}

/// The throughput of one NetTraffic group from its live workers' reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetFigures {
    /// Bytes per second received, summed over the group's receivers.
    pub bytes_per_s: f64,
    /// Messages per second received, summed likewise.
    pub messages_per_s: f64,
}

/// Bytes and messages per second that arrived: in a stream, at the odd
/// workers (role 1); in a ping-pong, half of every worker's (each
/// iteration is a message each way). `None` without wall time.
pub fn net_figures(reports: &[&crate::WorkerReport]) -> Option<NetFigures> {
    let stream = reports.iter().any(|r| r.role == 1);
    let per_s = |v: u64, wall: u64| v as f64 * 1e9 / wall as f64;
    let mut out = NetFigures {
        bytes_per_s: 0.0,
        messages_per_s: 0.0,
    };
    let mut any = false;
    for r in reports.iter().filter(|r| r.wall_time_ns > 0) {
        any = true;
        let (bytes, msgs) = match (stream, r.role) {
            (true, 1) => (r.work_units, r.iterations),
            (true, _) => continue,
            (false, _) => (r.work_units / 2, r.iterations),
        };
        out.bytes_per_s += per_s(bytes, r.wall_time_ns);
        out.messages_per_s += per_s(msgs, r.wall_time_ns);
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{WorkType, WorkerReport};

    fn run_pair(p: &Params, turns: usize) -> (Telemetry, Telemetry) {
        let (fa, fb) = socket_pair(p.proto, p.path).unwrap();
        let (mut a, mut b) = (Peer::new(fa, 0, p), Peer::new(fb, 1, p));
        let receiver = std::thread::spawn(move || {
            let mut tel = Telemetry::start();
            for _ in 0..turns {
                let units = b.iterate(&mut tel);
                tel.end_iteration(units);
            }
            tel
        });
        let mut tel = Telemetry::start();
        for _ in 0..turns {
            let units = a.iterate(&mut tel);
            tel.end_iteration(units);
        }
        (tel, receiver.join().unwrap())
    }

    #[test]
    fn both_protocols_carry_whole_messages_both_ways() {
        for proto in [Proto::Tcp, Proto::Udp] {
            let p = Params {
                proto,
                msg_bytes: 4000,
                ..Params::default()
            };
            let (a, b) = run_pair(&p, 50);
            let (a, b) = (a.finish(0, false), b.finish(0, false));
            assert_eq!(a.work_units, 50 * 8000, "{proto:?}");
            assert_eq!(b.work_units, 50 * 8000, "{proto:?}");
            assert_eq!(a.iterations, 50);
        }
    }

    #[test]
    fn a_tcp_stream_delivers_what_was_sent_to_the_odd_worker() {
        let p = Params {
            mode: Mode::Stream,
            msg_bytes: 64 * 1024,
            ..Params::default()
        };
        let (a, b) = run_pair(&p, 40);
        let (a, b) = (a.finish(0, false), b.finish(0, false));
        assert_eq!(a.work_units, 40 * 64 * 1024);
        assert_eq!(b.work_units, a.work_units);
    }

    #[test]
    fn udp_messages_must_fit_a_datagram() {
        let t = WorkType::from_name("NetTraffic").unwrap();
        let err = t
            .with_params(&[
                ("proto".into(), "udp".into()),
                ("msg_bytes".into(), "65508".into()),
            ])
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not fit one UDP datagram"), "{err}");
        assert!(t
            .with_params(&[("msg_bytes".into(), "65508".into())])
            .is_ok());
    }

    #[test]
    fn figures_count_arrivals_once() {
        let r = |role, units, iterations| WorkerReport {
            role,
            work_units: units,
            iterations,
            wall_time_ns: 1_000_000_000,
            ..Default::default()
        };
        let (tx, rx) = (r(0, 9000, 9), r(1, 8000, 8));
        let f = net_figures(&[&tx, &rx]).unwrap();
        assert_eq!((f.bytes_per_s, f.messages_per_s), (8000.0, 8.0));
        let (a, b) = (r(0, 2000, 1), r(0, 2000, 1));
        let f = net_figures(&[&a, &b]).unwrap();
        assert_eq!((f.bytes_per_s, f.messages_per_s), (2000.0, 2.0));
        assert_eq!(net_figures(&[]), None);
    }
}
