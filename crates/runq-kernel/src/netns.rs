//! Network namespaces, and the NIC pair `runq run --vm --vm-net` gives a
//! guest: two virtio-net devices joined by a qemu hub, one left in the
//! guest's own namespace ([`NIC_LOCAL_ADDR`]) and one moved into the
//! namespace [`NIC_PEER_NETNS`] ([`NIC_PEER_ADDR`]). A packet from one
//! address to the other leaves through one device and arrives through the
//! other's receive interrupt, as traffic from another machine would.

use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Where `ip netns` keeps named network namespaces.
pub const NETNS_DIR: &str = "/run/netns";
/// The namespace that holds the NIC pair's far device.
pub const NIC_PEER_NETNS: &str = "runq-peer";
/// The near device's address, in the guest's own namespace.
pub const NIC_LOCAL_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The far device's address, in [`NIC_PEER_NETNS`].
pub const NIC_PEER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

/// The NIC pair's far namespace, as a file to enter.
pub fn nic_peer_netns() -> PathBuf {
    Path::new(NETNS_DIR).join(NIC_PEER_NETNS)
}

/// Why this host has no NIC pair to send through, or `None` when it has.
pub fn nic_pair_lacking(what: &str) -> Option<String> {
    let ns = nic_peer_netns();
    (!ns.exists()).then(|| {
        format!(
            "{what} sends through the NIC pair of `runq run --vm --vm-net` (network namespace \
             {} with {NIC_PEER_ADDR}); this host has none: run it in a VM with --vm-net, or use \
             the loopback form",
            ns.display()
        )
    })
}

/// Runs `f` with the calling thread in the network namespace at `ns` (a
/// file such as `/run/netns/NAME` or `/proc/PID/ns/net`), then returns it
/// to its own. Sockets `f` makes stay in `ns`, wherever they are used.
pub fn with_netns<T>(ns: &Path, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let named = |e: io::Error, what: &str| {
        io::Error::new(e.kind(), format!("{what} {}: {e}", ns.display()))
    };
    let target = File::open(ns).map_err(|e| named(e, "network namespace"))?;
    let own = File::open("/proc/thread-self/ns/net")?;
    enter(&target).map_err(|e| named(e, "entering network namespace"))?;
    let out = f();
    if let Err(e) = enter(&own) {
        // The thread cannot be left in another namespace: every socket it
        // made later would land there.
        eprintln!("runq: could not return to the own network namespace: {e}");
        std::process::abort();
    }
    out
}

/// `setns(2)` into the network namespace `ns`.
fn enter(ns: &File) -> io::Result<()> {
    // SAFETY: setns on a descriptor we own; no pointers are passed.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::process::{Command, Stdio};

    #[test]
    fn a_missing_namespace_is_named() {
        let err = with_netns(Path::new("/run/netns/runq-no-such"), || Ok(())).unwrap_err();
        assert!(err.to_string().contains("/run/netns/runq-no-such"), "{err}");
    }

    #[test]
    #[cfg_attr(not(runq_root), ignore = "needs root")]
    fn sockets_made_inside_stay_in_the_other_namespace() {
        // A fresh namespace has only a loopback device, and it is down.
        let mut holder = Command::new("unshare")
            .args(["--net", "sleep", "30"])
            .stdout(Stdio::null())
            .spawn()
            .expect("unshare (util-linux)");
        let ns = PathBuf::from(format!("/proc/{}/ns/net", holder.id()));
        std::thread::sleep(std::time::Duration::from_millis(200));
        let inside = with_netns(&ns, || UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)));
        let own = std::fs::read_link("/proc/thread-self/ns/net").unwrap();
        let _ = holder.kill();
        let _ = holder.wait();
        let socket = inside.unwrap();
        let err = socket.send_to(b"x", (Ipv4Addr::LOCALHOST, 9)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENETUNREACH), "{err}");
        assert_eq!(
            std::fs::read_link("/proc/thread-self/ns/net").unwrap(),
            own,
            "the thread is back in its own namespace"
        );
    }
}
