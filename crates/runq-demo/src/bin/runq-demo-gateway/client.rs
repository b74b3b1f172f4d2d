//! The gateway's load: one plain thread per route, each sending an
//! HTTP/1.1 GET, reading the whole response, and pausing.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Each route and the pause between two of its requests.
const ROUTES: [(&str, u64); 7] = [
    ("/report", 100),
    ("/login", 100),
    ("/archive", 100),
    ("/rotate", 100),
    ("/token", 200),
    ("/resolve", 200),
    ("/import", 500),
];

/// Starts the client threads for the gateway at `addr`, each named by
/// its route (`get/report`: no group of same-named threads that a tool
/// could take for the workers).
pub(crate) fn start(addr: SocketAddr) {
    for (path, pause_ms) in ROUTES {
        std::thread::Builder::new()
            .name(format!("get{path}"))
            .spawn(move || loop {
                // A refused or reset request is tried again after the pause.
                let _ = get(addr, path);
                std::thread::sleep(Duration::from_millis(pause_ms));
            })
            .expect("a client thread");
    }
}

/// One request on a connection of its own; returns the response's length.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<usize> {
    let mut stream = TcpStream::connect(addr)?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)
}
