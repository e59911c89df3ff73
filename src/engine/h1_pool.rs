//! HTTP/1.1 keep-alive connection on hyper: one request in flight at a time.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use http::{HeaderMap, HeaderValue, Method, Request, Response, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

use super::{header_map, spawn_connection, ConnEnd, Engine, Io, PathCycle, Session};
use crate::plan::RunPlan;
use crate::recorder::{ErrorKind, ResponseSample};

/// The hyper-based HTTP/1.1 engine (`-m 1`).
pub struct H1Pool {
    method: Method,
    uris: Vec<Uri>,
    headers: HeaderMap,
    body: Bytes,
    request_timeout: Option<Duration>,
}

impl H1Pool {
    /// Prepares the request parts once, so each request only clones them.
    pub fn new(plan: &RunPlan) -> Self {
        let template = &plan.request;
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::HOST,
            HeaderValue::from_str(&template.authority)
                .expect("authority came from a parsed URL or header"),
        );
        headers.extend(header_map(template, &[]));
        H1Pool {
            method: template.method.clone(),
            uris: template
                .paths
                .iter()
                .map(|path| path.parse().expect("paths came from parsed URLs"))
                .collect(),
            headers,
            body: template.body.clone(),
            request_timeout: plan.timeouts.request,
        }
    }

    fn request(&self, uri: &Uri) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(self.body.clone()));
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = uri.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }

    async fn run(&self, io: Io, session: Session<'_>) -> ConnEnd {
        let (mut sender, connection) = match http1::Builder::new().handshake(TokioIo::new(io)).await
        {
            Ok(parts) => parts,
            Err(error) => {
                session.note_error(|| format!("HTTP/1.1 handshake failed: {error}"));
                return ConnEnd::Lost;
            }
        };
        let _connection = spawn_connection(connection);
        let paths = PathCycle::default();
        loop {
            if sender.ready().await.is_err() {
                // The server closed the connection after the last response (e.g. `Connection: close`).
                return ConnEnd::Lost;
            }
            if !session.take_request() {
                return ConnEnd::Finished;
            }
            let request = self.request(&self.uris[paths.next(self.uris.len())]);
            let start = session.begin();
            let exchange = exchange(&mut sender, request, start, session);
            let outcome = match self.request_timeout {
                Some(limit) => tokio::time::timeout(limit, exchange)
                    .await
                    .unwrap_or(Err(ErrorKind::Timeout)),
                None => exchange.await,
            };
            match outcome {
                Ok(sample) => session.complete(sample),
                Err(kind) => {
                    // HTTP/1.1 cannot abandon one request and keep the connection: start afresh.
                    session.fail(start, kind);
                    return ConnEnd::Lost;
                }
            }
        }
    }
}

impl Engine for H1Pool {
    fn drive<'a>(&'a self, io: Io, session: Session<'a>) -> LocalBoxFuture<'a, ConnEnd> {
        self.run(io, session).boxed_local()
    }
}

/// Sends one request and reads its whole response.
async fn exchange(
    sender: &mut http1::SendRequest<Full<Bytes>>,
    request: Request<Full<Bytes>>,
    start: Instant,
    session: Session<'_>,
) -> Result<ResponseSample, ErrorKind> {
    let response = sender.send_request(request).await.map_err(|error| {
        session.note_error(|| format!("HTTP/1.1 request failed: {error}"));
        classify(&error)
    })?;
    let first_byte = Instant::now();
    let status = response.status().as_u16();
    let header_bytes = header_block_len(&response);
    session.wire().add_headers(header_bytes, header_bytes);
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| {
            session.note_error(|| format!("HTTP/1.1 response body failed: {error}"));
            classify(&error)
        })?;
        if let Some(data) = frame.data_ref() {
            session.wire().add_data(data.len() as u64);
        }
    }
    Ok(ResponseSample {
        start,
        first_byte,
        end: Instant::now(),
        status,
    })
}

fn classify(error: &hyper::Error) -> ErrorKind {
    if error.is_parse() || error.is_parse_status() || error.is_user() {
        ErrorKind::Protocol
    } else {
        ErrorKind::Closed
    }
}

/// The size of the response's header block as sent: status line, fields, blank line.
/// hyper keeps no raw bytes, so this is rebuilt from the parsed head (canonical reason phrase).
fn header_block_len(response: &Response<Incoming>) -> u64 {
    let reason = response.status().canonical_reason().unwrap_or("").len();
    let status_line = "HTTP/1.1 200 \r\n".len() + reason;
    let fields: usize = response
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + 2 + value.len() + 2)
        .sum();
    (status_line + fields + 2) as u64
}
