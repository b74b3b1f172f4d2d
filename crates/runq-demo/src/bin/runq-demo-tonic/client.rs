//! The Vault's client: a `current_thread` runtime on a std thread of its
//! own (`vault-client`), calling each method over one tonic `Channel`
//! (HTTP/2) in a loop of its own, with a pause after each call.

use std::net::SocketAddr;
use std::time::Duration;

use http::uri::PathAndQuery;
use tonic::client::Grpc;
use tonic::transport::Channel;
use tonic_prost::ProstCodec;

use crate::proto::{Answer, Ask, METHODS};

/// Starts the client's thread, calling the server at `addr`.
pub(crate) fn start(addr: SocketAddr) {
    std::thread::Builder::new()
        .name("vault-client".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the client's runtime");
            rt.block_on(run(addr));
        })
        .expect("the client's thread");
}

/// Calls every method in a loop of its own, for ever.
async fn run(addr: SocketAddr) {
    let uri = format!("http://{addr}");
    let channel = Channel::from_shared(uri)
        .expect("the server's URI")
        .connect_lazy();
    let mut loops = tokio::task::JoinSet::new();
    for (path, pause_ms) in METHODS {
        let grpc = Grpc::new(channel.clone());
        loops.spawn(call_forever(grpc, path, Duration::from_millis(pause_ms)));
    }
    while loops.join_next().await.is_some() {}
}

/// Calls the method at `path` again and again, `pause` apart (a failed
/// call is tried again after the pause).
async fn call_forever(mut grpc: Grpc<Channel>, path: &'static str, pause: Duration) {
    let mut n = 0u32;
    loop {
        n += 1;
        let ask = Ask {
            subject: format!("user-{}", n % 100),
            size: n,
        };
        let _ = call(&mut grpc, path, ask).await;
        tokio::time::sleep(pause).await;
    }
}

/// One unary call.
async fn call(
    grpc: &mut Grpc<Channel>,
    path: &'static str,
    ask: Ask,
) -> Result<Answer, tonic::Status> {
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let codec = ProstCodec::<Ask, Answer>::default();
    let path = PathAndQuery::from_static(path);
    let reply = grpc.unary(tonic::Request::new(ask), path, codec).await?;
    Ok(reply.into_inner())
}
