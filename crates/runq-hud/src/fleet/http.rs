//! The scrape endpoint of continuous mode (`--metrics-addr`): a minimal
//! HTTP/1.1 server, one request per connection, answering `GET /metrics`
//! with the fleet's figures: OpenMetrics when the scraper's `Accept` asks
//! for it (Prometheus does), else the Prometheus text format.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::metrics::Dialect;
use super::Shared;

/// The largest request head read.
const MAX_HEAD: usize = 8192;

/// The response to one request head.
fn respond(head: &str, metrics: &Shared) -> (u16, &'static str, String) {
    let mut first = head.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
    if method != "GET" {
        return (405, "text/plain", "only GET\n".into());
    }
    if path != "/metrics" && !path.starts_with("/metrics?") {
        return (404, "text/plain", "see /metrics\n".into());
    }
    let openmetrics = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("accept:") && l.contains("application/openmetrics-text")
    });
    let (dialect, kind) = match openmetrics {
        true => (
            Dialect::OpenMetrics,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
        false => (
            Dialect::Prometheus,
            "text/plain; version=0.0.4; charset=utf-8",
        ),
    };
    match metrics.lock() {
        Ok(m) => (200, kind, m.render(dialect)),
        Err(_) => (500, "text/plain", "figures unavailable\n".into()),
    }
}

/// Reads a request head (to its blank line, at most [`MAX_HEAD`] bytes).
fn read_head(stream: &mut TcpStream) -> Option<String> {
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_HEAD {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

fn answer(mut stream: TcpStream, metrics: &Shared) {
    let Some(head) = read_head(&mut stream) else {
        return;
    };
    let (code, kind, body) = respond(&head, metrics);
    let reason = match code {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Internal Server Error",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Serves the figures on `listener` until `stop` is set.
pub fn spawn(
    listener: TcpListener,
    metrics: Shared,
    stop: &'static AtomicBool,
) -> std::io::Result<JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    Ok(std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(false).is_ok() {
                        answer(stream, &metrics);
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_gets_the_dialect_it_asks_for_and_other_requests_are_refused() {
        let m = Shared::default();
        let om = respond(
            "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n",
            &m,
        );
        assert_eq!(
            (om.0, om.1.starts_with("application/openmetrics-text")),
            (200, true)
        );
        assert!(om.2.ends_with("# EOF\n"));
        let plain = respond("GET /metrics HTTP/1.1\r\n\r\n", &m);
        assert!(plain.1.starts_with("text/plain; version=0.0.4") && !plain.2.contains("# EOF"));
        assert_eq!(respond("GET / HTTP/1.1\r\n\r\n", &m).0, 404);
        assert_eq!(respond("POST /metrics HTTP/1.1\r\n\r\n", &m).0, 405);
    }
}
