//! The `runq.demo.Vault` server written by hand the way `tonic-build`
//! writes one: a `tower::Service` over HTTP requests that routes each
//! gRPC path to its handler through `tonic::server::Grpc` and the prost
//! codec, and a [`NamedService`] for tonic's router.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;

use crate::handlers::{self, State};
use crate::proto::{Answer, Ask, SERVICE};

/// A boxed future, as generated servers return.
type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'static>>;

/// The server: the handlers' shared state.
#[derive(Clone)]
pub(crate) struct VaultServer {
    state: Arc<State>,
}

impl VaultServer {
    /// A server of `state`.
    pub(crate) fn new(state: State) -> Self {
        VaultServer {
            state: Arc::new(state),
        }
    }
}

impl NamedService for VaultServer {
    const NAME: &'static str = SERVICE;
}

/// One unary method: its handler, an async fn of the state and request.
struct Unary<F> {
    state: Arc<State>,
    handler: F,
}

impl<F, Fut> UnaryService<Ask> for Unary<F>
where
    F: Fn(Arc<State>, Ask) -> Fut,
    Fut: Future<Output = Result<Answer, Status>> + Send + 'static,
{
    type Response = Answer;
    type Future = BoxFuture<Response<Answer>, Status>;

    fn call(&mut self, request: Request<Ask>) -> Self::Future {
        let reply = (self.handler)(self.state.clone(), request.into_inner());
        Box::pin(async move { reply.await.map(Response::new) })
    }
}

/// Serves `request` with `handler` through tonic's unary path.
fn unary<F, Fut>(
    state: Arc<State>,
    handler: F,
    request: http::Request<Body>,
) -> BoxFuture<http::Response<Body>, Infallible>
where
    F: Fn(Arc<State>, Ask) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Answer, Status>> + Send + 'static,
{
    Box::pin(async move {
        let mut grpc = Grpc::new(ProstCodec::<Answer, Ask>::default());
        Ok(grpc.unary(Unary { state, handler }, request).await)
    })
}

impl tower::Service<http::Request<Body>> for VaultServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let state = self.state.clone();
        let path = request.uri().path().strip_prefix("/runq.demo.Vault/");
        match path.unwrap_or_default() {
            "DeriveKey" => unary(state, handlers::derive_key, request),
            "LoadManifest" => unary(state, handlers::load_manifest, request),
            "CompileFilter" => unary(state, handlers::compile_filter, request),
            "ProbeBackend" => unary(state, handlers::probe, request),
            "CommitJournal" => unary(state, handlers::commit, request),
            "SettleLedger" => unary(state, handlers::settle, request),
            "ResolvePeers" => unary(state, handlers::resolve, request),
            "RebuildIndex" => unary(state, handlers::rebuild, request),
            _ => Box::pin(async { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}
