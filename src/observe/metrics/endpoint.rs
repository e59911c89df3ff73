//! The `/metrics` endpoint: an HTTP/1.1 server on its own thread and current-thread runtime, so
//! scrapes never run on the load threads.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::registry::Registry;
use tokio::sync::oneshot;

use super::exposition::{self, CLASSIC, OPENMETRICS};

/// Scrape connections served at once: a few scrapers need a handful; more is a client leaking
/// connections, which must not take the descriptors the load's connections need. Further
/// connections wait in the kernel's accept queue, in order, for a place.
const MAX_SCRAPERS: usize = 16;

/// How long a request head may take to arrive, also while a kept-alive connection waits for its
/// next request: a client sending a byte a second no longer holds a place for long.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one scrape connection may stay open: a client that never reads the answer is dropped.
const SCRAPE_CONNECTION_LIMIT: Duration = Duration::from_secs(30);

use super::Board;
use crate::exposure;

/// A running endpoint; dropping it stops it.
#[derive(Debug)]
pub(crate) struct Endpoint {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Listens on `addr` (before any load is sent, so a port in use fails the run at once) and
    /// serves `board` from another thread.
    pub(crate) fn start(addr: SocketAddr, board: Arc<Board>) -> Result<Endpoint> {
        let anyone = "anyone who can reach it can read the metrics (no authentication)";
        if let Some(line) = exposure::warning("--metrics-listen", addr.ip(), anyone) {
            errln!("{line}");
        }
        let listener = std::net::TcpListener::bind(addr)
            .with_context(|| format!("--metrics-listen: cannot listen on {addr}"))?;
        listener
            .set_nonblocking(true)
            .context("--metrics-listen: cannot make the socket non-blocking")?;
        let addr = listener.local_addr()?;
        let registry = Arc::new(exposition::registry(board));
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("h2load-rs-metrics".to_owned())
            .spawn(move || {
                if let Err(error) = serve(listener, registry, stopped) {
                    errln!("h2load-rs: warning: --metrics-listen stopped serving: {error:#}");
                }
            })
            .context("cannot start the metrics thread")?;
        Ok(Endpoint {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port chosen when asked for port 0).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Keeps serving for `linger` so a last scrape sees the final values, unless a signal
    /// arrives meanwhile (`pause` waits, and knows the signals: the caller passes
    /// `runner::pause`); then stops.
    pub(crate) fn linger(self, linger: Duration, pause: impl FnOnce(Duration) -> bool) {
        if !linger.is_zero() {
            errln!(
                "metrics: serving the final values at http://{}/metrics for {:.1} s (Ctrl-C ends it)",
                self.addr,
                linger.as_secs_f64()
            );
            pause(linger);
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts scrapes until `stopped`.
fn serve(
    listener: std::net::TcpListener,
    registry: Arc<Registry>,
    mut stopped: oneshot::Receiver<()>,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the metrics runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let scrapers = Arc::new(tokio::sync::Semaphore::new(MAX_SCRAPERS));
        loop {
            // A place first, then a connection: the rest wait their turn in the accept queue
            // (a scraper that gave up is closed then) instead of being turned away.
            let permit = tokio::select! {
                permit = scrapers.clone().acquire_owned() => permit?,
                _ = &mut stopped => return Ok(()),
            };
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    // Out of descriptors and similar: try again shortly rather than spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
                _ = &mut stopped => return Ok(()),
            };
            let registry = registry.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let service = service_fn(move |request| {
                    let response = respond(&registry, &request);
                    async move { Ok::<_, Infallible>(response) }
                });
                // A scraper that goes away mid-response is not worth reporting.
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), service);
                let _ = tokio::time::timeout(SCRAPE_CONNECTION_LIMIT, connection).await;
            });
        }
    })
}

/// `GET /metrics` → the exposition, in OpenMetrics when the `Accept` header allows it; anything
/// else → 404.
fn respond(registry: &Registry, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    if request.uri().path() != "/metrics" {
        let mut response =
            Response::new(Full::new(Bytes::from_static(b"not found: try /metrics\n")));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    }
    let openmetrics = request
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("application/openmetrics-text"));
    let body = exposition::render(registry, openmetrics);
    let mut response = Response::new(Full::new(Bytes::from(body)));
    let media_type = if openmetrics { OPENMETRICS } else { CLASSIC };
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(media_type),
    );
    response
}
