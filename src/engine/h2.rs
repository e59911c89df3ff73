//! HTTP/2 on the `h2` crate: `-m` concurrent streams ("lanes") per connection, each sending its next
//! request as soon as its previous response completes. Lanes above the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS retire once the server's SETTINGS are known.

use std::cell::Cell;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::{join_all, LocalBoxFuture};
use futures_util::FutureExt;
use h2::client::{ResponseFuture, SendRequest};
use http::{HeaderMap, Method, Request, Uri};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{header_map, spawn_connection, ConnEnd, Engine, Io, PathCycle, Session};
use crate::plan::{H2Settings, RunPlan};
use crate::recorder::{ErrorKind, ResponseSample};

/// Streams opened before the server's SETTINGS arrive. The `h2` crate queues further requests and
/// sends them once the SETTINGS tell how many the server allows, so a server limit below `-m` never
/// gets streams refused (nghttp2 assumes 100 here, and h2load's excess streams can be refused).
const STREAMS_BEFORE_SETTINGS: usize = 1;
/// HPACK's count for the `:status` pseudo-header: name and a three-digit value.
const STATUS_HEADER_LEN: u64 = ":status".len() as u64 + 3;

/// Header fields HTTP/2 forbids (RFC 9113 §8.2.2); h2load drops them too.
const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// The HTTP/2 engine (h2c by prior knowledge).
pub struct H2 {
    method: Method,
    uris: Vec<Uri>,
    headers: HeaderMap,
    body: Bytes,
    lanes: usize,
    settings: H2Settings,
    request_timeout: Option<Duration>,
}

/// Why a request failed, and whether its connection is still usable.
enum Failure {
    /// Only this stream failed (e.g. RST_STREAM); the connection carries on.
    Stream(ErrorKind),
    /// The connection is gone (GOAWAY, I/O error, protocol error).
    Connection(ErrorKind),
}

/// Per-connection state the lanes share.
struct Lanes<'a> {
    session: Session<'a>,
    paths: PathCycle,
    /// Set once a response has arrived, which proves the server's SETTINGS were applied.
    settled: Cell<bool>,
}

impl H2 {
    /// Prepares request parts once, so each request only clones them.
    pub fn new(plan: &RunPlan) -> Self {
        let template = &plan.request;
        let headers = header_map(template, &CONNECTION_SPECIFIC);
        let uris = template
            .paths
            .iter()
            .map(|path| {
                Uri::builder()
                    .scheme(if plan.tls.is_some() { "https" } else { "http" })
                    .authority(template.authority.as_str())
                    .path_and_query(path.as_str())
                    .build()
                    .expect("authority and path came from parsed URLs")
            })
            .collect();
        H2 {
            method: template.method.clone(),
            uris,
            headers,
            body: template.body.clone(),
            lanes: plan.max_concurrent,
            settings: plan.h2,
            request_timeout: plan.timeouts.request,
        }
    }

    /// Drives an HTTP/2 connection. After an h2c upgrade, `upgraded` holds the start of the
    /// HTTP/1.1 request whose response arrives on stream 1, and `first_path` the next path to use.
    pub async fn run<T>(
        &self,
        io: T,
        session: Session<'_>,
        upgraded: Option<Instant>,
        first_path: usize,
    ) -> ConnEnd
    where
        T: AsyncRead + AsyncWrite + Unpin + 'static,
    {
        let handshake = h2::client::Builder::new()
            .initial_window_size(self.settings.stream_window)
            .initial_connection_window_size(self.settings.connection_window)
            .max_frame_size(self.settings.max_frame_size)
            .header_table_size(self.settings.header_table_size)
            .initial_max_send_streams(self.lanes.min(STREAMS_BEFORE_SETTINGS))
            .enable_push(false)
            .handshake::<_, Bytes>(io)
            .await;
        let (sender, connection) = match handshake {
            Ok(parts) => parts,
            Err(error) => {
                session.note_error(|| format!("HTTP/2 handshake failed: {error}"));
                return ConnEnd::Lost;
            }
        };
        let _connection = spawn_connection(connection);
        let lanes = Lanes {
            session,
            paths: PathCycle::starting_at(first_path),
            settled: Cell::new(false),
        };
        let stream_one = async {
            match upgraded {
                Some(start) => self.upgraded_stream(sender.clone(), start, &lanes).await,
                None => ConnEnd::Finished,
            }
        };
        let all_lanes =
            join_all((0..self.lanes).map(|lane| self.lane(lane, sender.clone(), &lanes)));
        let (first, ends) = futures_util::future::join(stream_one, all_lanes).await;
        if first == ConnEnd::Lost || ends.contains(&ConnEnd::Lost) {
            ConnEnd::Lost
        } else {
            ConnEnd::Finished
        }
    }

    /// Receives the response to the upgrade request on stream 1. The `h2` crate only accepts a
    /// response on a stream it opened, so a placeholder request opens stream 1: a relative `GET /`,
    /// which `h2` encodes from the HPACK static table alone, and which the upgraded socket
    /// (`h2c_upgrade::UpgradedIo`) keeps off the wire.
    async fn upgraded_stream(
        &self,
        mut sender: SendRequest<Bytes>,
        start: Instant,
        lanes: &Lanes<'_>,
    ) -> ConnEnd {
        match sender.send_request(Request::new(()), true) {
            Ok((response, _)) => self.settle(&sender, response, start, lanes).await,
            Err(error) => {
                lanes
                    .session
                    .note_error(|| format!("HTTP/2 after the h2c upgrade failed: {error}"));
                lanes.session.fail(start, ErrorKind::Closed);
                ConnEnd::Lost
            }
        }
    }

    /// One stream slot: request after request until the budget is spent or the connection is lost.
    async fn lane(
        &self,
        lane: usize,
        mut sender: SendRequest<Bytes>,
        lanes: &Lanes<'_>,
    ) -> ConnEnd {
        let session = lanes.session;
        loop {
            if lanes.settled.get() && lane >= sender.current_max_send_streams() {
                return ConnEnd::Finished;
            }
            sender = match sender.ready().await {
                Ok(ready) => ready,
                Err(error) => {
                    session.note_error(|| format!("HTTP/2 connection lost: {error}"));
                    return ConnEnd::Lost;
                }
            };
            if !session.take_request() {
                return ConnEnd::Finished;
            }
            let uri = &self.uris[lanes.paths.next(self.uris.len())];
            let Some((start, response)) = self.send(&mut sender, uri, session) else {
                return ConnEnd::Lost;
            };
            if self.settle(&sender, response, start, lanes).await == ConnEnd::Lost {
                return ConnEnd::Lost;
            }
        }
    }

    /// Receives one response within the request timeout and records how it ended. `Lost` when
    /// the failure took the connection with it.
    async fn settle(
        &self,
        sender: &SendRequest<Bytes>,
        response: ResponseFuture,
        start: Instant,
        lanes: &Lanes<'_>,
    ) -> ConnEnd {
        let session = lanes.session;
        let receive = receive(response, start, session);
        let outcome = match self.request_timeout {
            // Dropping the response on timeout resets just this stream (RST_STREAM CANCEL).
            Some(limit) => tokio::time::timeout(limit, receive)
                .await
                .unwrap_or(Err(Failure::Stream(ErrorKind::Timeout))),
            None => receive.await,
        };
        match outcome {
            Ok(sample) => {
                session.complete(sample);
                if !lanes.settled.replace(true) {
                    session.note_effective_concurrency(
                        self.lanes.min(sender.current_max_send_streams()),
                    );
                }
                ConnEnd::Finished
            }
            Err(Failure::Stream(kind)) => {
                session.fail(start, kind);
                ConnEnd::Finished
            }
            Err(Failure::Connection(kind)) => {
                session.fail(start, kind);
                ConnEnd::Lost
            }
        }
    }

    /// Opens a stream with the request (and its body). `None` when the connection refused it; the
    /// budget ticket is then returned, since nothing was sent.
    fn send(
        &self,
        sender: &mut SendRequest<Bytes>,
        uri: &Uri,
        session: Session<'_>,
    ) -> Option<(Instant, ResponseFuture)> {
        let mut request = Request::new(());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = uri.clone();
        *request.headers_mut() = self.headers.clone();
        let (response, mut body_sender) = match sender.send_request(request, self.body.is_empty()) {
            Ok(sent) => sent,
            Err(error) => {
                session.return_request();
                session.note_error(|| format!("HTTP/2 connection refused a new stream: {error}"));
                return None;
            }
        };
        let start = session.begin();
        if !self.body.is_empty() {
            // Only fails if the stream is already reset; the response future then reports why.
            let _ = body_sender.send_data(self.body.clone(), true);
        }
        Some((start, response))
    }
}

/// Reads one response: headers, then the body, releasing flow-control capacity as data arrives.
async fn receive(
    response: ResponseFuture,
    start: Instant,
    session: Session<'_>,
) -> Result<ResponseSample, Failure> {
    let failed = |error: h2::Error| {
        session.note_error(|| format!("HTTP/2 request failed: {error}"));
        classify(&error)
    };
    let response = response.await.map_err(failed)?;
    let first_byte = Instant::now();
    let uncompressed: u64 = response
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().len() + value.len()) as u64)
        .sum();
    session
        .wire()
        .add_uncompressed_headers(uncompressed + STATUS_HEADER_LEN);
    let status = response.status().as_u16();
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(failed)?;
        session.wire().add_data(chunk.len() as u64);
        // Hand the window back at once so flow control never throttles a download.
        body.flow_control()
            .release_capacity(chunk.len())
            .map_err(failed)?;
    }
    Ok(ResponseSample {
        start,
        first_byte,
        end: Instant::now(),
        status,
    })
}

impl Engine for H2 {
    fn drive<'a>(&'a self, mut io: Io, session: Session<'a>) -> LocalBoxFuture<'a, ConnEnd> {
        io.count_h2_frames(&[]);
        self.run(io, session, None, 0).boxed_local()
    }
}

fn classify(error: &h2::Error) -> Failure {
    if error.is_io() || error.is_go_away() {
        Failure::Connection(ErrorKind::Closed)
    } else if error.is_reset() {
        Failure::Stream(ErrorKind::Protocol)
    } else {
        Failure::Connection(ErrorKind::Protocol)
    }
}
