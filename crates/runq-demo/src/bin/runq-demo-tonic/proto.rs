//! The `runq.demo.Vault` service's messages, derived by hand with prost
//! (what `prost-build` would generate from a `.proto` file), and its
//! methods: each one's gRPC path, the handler's blocking part, and how
//! often the client calls it.

/// The request of every method: what to work on, and how much of it.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Ask {
    /// The user, file or name the call is about.
    #[prost(string, tag = "1")]
    pub(crate) subject: String,
    /// A size or count, by method.
    #[prost(uint32, tag = "2")]
    pub(crate) size: u32,
}

/// The response of every method.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Answer {
    /// What the blocking part returned.
    #[prost(uint64, tag = "1")]
    pub(crate) value: u64,
    /// Which handler answered.
    #[prost(string, tag = "2")]
    pub(crate) served_by: String,
}

/// The service's name in its gRPC paths.
pub(crate) const SERVICE: &str = "runq.demo.Vault";

/// Each method's gRPC path and the client's pause after each call, ms.
pub(crate) const METHODS: [(&str, u64); 8] = [
    ("/runq.demo.Vault/DeriveKey", 150),
    ("/runq.demo.Vault/LoadManifest", 150),
    ("/runq.demo.Vault/CompileFilter", 150),
    ("/runq.demo.Vault/ProbeBackend", 80),
    ("/runq.demo.Vault/CommitJournal", 80),
    ("/runq.demo.Vault/SettleLedger", 80),
    ("/runq.demo.Vault/ResolvePeers", 150),
    ("/runq.demo.Vault/RebuildIndex", 80),
];
