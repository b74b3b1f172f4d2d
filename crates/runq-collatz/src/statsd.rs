//! Per-iteration gauges over a unix datagram socket in statsd format
//! (`name:value|g`), for runs where DD_DOGSTATSD_SOCKET is set.

use std::os::unix::net::UnixDatagram;
use std::path::Path;

/// The environment variable naming the socket.
pub const SOCKET_ENV: &str = "DD_DOGSTATSD_SOCKET";

/// A connected statsd sender.
pub struct Statsd(UnixDatagram);

impl Statsd {
    /// Connects to `path`; `None` when nothing listens there.
    pub fn connect(path: &Path) -> Option<Self> {
        let sock = UnixDatagram::unbound().ok()?;
        sock.connect(path).ok()?;
        Some(Statsd(sock))
    }

    /// Connects to the socket named by [`SOCKET_ENV`], if any.
    pub fn from_env() -> Option<Self> {
        let path = std::env::var_os(SOCKET_ENV)?;
        Self::connect(Path::new(&path))
    }

    /// Sends one gauge; losses are ignored, as statsd clients do.
    pub fn gauge(&self, name: &str, value: u64) {
        let _ = self.0.send(gauge_line(name, value).as_bytes());
    }

    /// Sends the three gauges of one outer iteration.
    pub fn iteration(&self, ticks: u64, stacks: u64, functions: u64) {
        self.gauge("app.collatz.ticks", ticks);
        self.gauge("app.collatz.stacks", stacks);
        self.gauge("app.collatz.functions", functions);
    }
}

/// `name:value|g`.
pub fn gauge_line(name: &str, value: u64) -> String {
    format!("{name}:{value}|g")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_reach_a_listening_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("statsd.sock");
        let server = UnixDatagram::bind(&path).unwrap();
        let client = Statsd::connect(&path).unwrap();
        client.iteration(1234, 10, 160);
        let mut buf = [0u8; 128];
        let mut got = Vec::new();
        for _ in 0..3 {
            let n = server.recv(&mut buf).unwrap();
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        assert_eq!(
            got,
            [
                "app.collatz.ticks:1234|g",
                "app.collatz.stacks:10|g",
                "app.collatz.functions:160|g"
            ]
        );
    }

    #[test]
    fn no_listener_means_no_sender() {
        assert!(Statsd::connect(Path::new("/nonexistent/statsd.sock")).is_none());
    }
}
