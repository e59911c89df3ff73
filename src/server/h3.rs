//! The target's HTTP/3 front end: a quinn endpoint on the UDP port of the TLS listener, answering
//! with the same routes, delays and stalls as HTTP/1.1 and HTTP/2 ([`routes::decide`]).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http::header::CONTENT_LENGTH;
use http::{HeaderValue, Method, Request};
use quinn::crypto::rustls::QuicServerConfig;
use socket2::{Domain, Protocol, Socket, Type};

use super::echo::EchoBudget;
use super::gate::Gate;
use super::idle::{self, Activity};
use super::routes::{self, Answer, Behaviour, Reply};
use super::windows::{Sizes, Windows};
use super::ServeOptions;

type RequestStream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// What the target asks of the kernel for its UDP socket's receive and send buffers (capped at
/// `net.core.rmem_max` / `wmem_max`): 200 clients starting at once overflowed the default 208 KiB,
/// and every lost Initial cost its client a 1 s retransmission timer in connect time.
const UDP_BUFFER: usize = 8 << 20;

/// A UDP socket bound to `addr` with large kernel buffers, for the QUIC endpoint.
pub(super) fn udp_socket(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_recv_buffer_size(UDP_BUFFER)?;
    socket.set_send_buffer_size(UDP_BUFFER)?;
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// The QUIC endpoint of the target on `socket`, with [`Configs`]. Must be called within a tokio
/// runtime.
pub(super) fn endpoint(socket: UdpSocket, configs: &Configs) -> io::Result<quinn::Endpoint> {
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(quinn::ServerConfig::clone(&configs.full)),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// The QUIC server configurations of the target: with full receive windows, and for the
/// connections beyond the window budget.
#[derive(Clone)]
pub(super) struct Configs {
    full: Arc<quinn::ServerConfig>,
    floor: Arc<quinn::ServerConfig>,
}

impl Configs {
    pub(super) fn new(tls: &rustls::ServerConfig, options: &ServeOptions) -> io::Result<Configs> {
        Ok(Configs {
            full: Arc::new(server_config(tls, options, Sizes::FULL)?),
            floor: Arc::new(server_config(tls, options, Sizes::FLOOR)?),
        })
    }
}

/// A QUIC server configuration with the certificate of `tls` (TLS 1.3, ALPN `h3`), room for
/// `options.max_concurrent_streams` requests at once per connection, QUIC's idle timeout (no
/// packet either way) at `options.idle_timeout`, and receive windows of `sizes`.
fn server_config(
    tls: &rustls::ServerConfig,
    options: &ServeOptions,
    sizes: Sizes,
) -> io::Result<quinn::ServerConfig> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = QuicServerConfig::try_from(tls).map_err(io::Error::other)?;
    let mut transport = quinn::TransportConfig::default();
    // Load generators open many streams at once and upload to /echo: neither the stream count
    // nor the receive windows may be what limits them. The send window stays quinn's (10 MiB):
    // it bounds what a download holds in memory (128 MiB made a 1 GiB download take 140 MB of
    // RSS instead of 20 MB, and no faster).
    let idle = quinn::IdleTimeout::try_from(options.idle_timeout).map_err(io::Error::other)?;
    transport
        .max_idle_timeout(Some(idle))
        .max_concurrent_bidi_streams(options.max_concurrent_streams.into())
        .stream_receive_window(sizes.stream.into())
        .receive_window(sizes.connection.into());
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Accepts QUIC connections on `endpoint` and serves HTTP/3 on them until the runtime shuts down;
/// each takes a place at `gate` (without one it is refused) and its receive windows from
/// `windows` (`configs` has both sizes), and `/echo` shares `echo`.
pub(super) async fn serve(
    endpoint: quinn::Endpoint,
    configs: Configs,
    options: ServeOptions,
    gate: Arc<Gate>,
    echo: EchoBudget,
    windows: Windows,
) {
    while let Some(incoming) = endpoint.accept().await {
        match gate.admit() {
            Some(place) => {
                let behaviour = options.behaviour.clone();
                let echo = echo.for_connection();
                let window = windows.reserve();
                let config = match window.sizes() {
                    Sizes::FULL => configs.full.clone(),
                    _ => configs.floor.clone(),
                };
                let Ok(connecting) = incoming.accept_with(config) else {
                    continue;
                };
                tokio::spawn(async move {
                    let _held = (place, window);
                    serve_connection(connecting, behaviour, options.idle_timeout, echo).await
                });
            }
            None => incoming.refuse(),
        }
    }
}

/// Serves one connection until it ends, or until it has had no request in progress (or no
/// request's bytes moving) for `idle_timeout`. A client that goes away is normal under load:
/// nothing is reported.
async fn serve_connection(
    connecting: quinn::Connecting,
    behaviour: Behaviour,
    idle_timeout: Duration,
    echo: EchoBudget,
) {
    let Ok(quic) = connecting.await else {
        return;
    };
    // No grease: every byte the target sends is then one a test can predict.
    let built = h3::server::builder()
        .send_grease(false)
        .build::<_, Bytes>(h3_quinn::Connection::new(quic.clone()))
        .await;
    let Ok(mut connection) = built else {
        return;
    };
    let activity = Arc::new(Activity::default());
    let mut quiet = std::pin::pin!(idle::quiet_for(&activity, idle_timeout));
    loop {
        let resolver = tokio::select! {
            accepted = connection.accept() => match accepted {
                Ok(Some(resolver)) => resolver,
                _ => return,
            },
            () = quiet.as_mut() => break,
        };
        let behaviour = behaviour.clone();
        let activity = activity.clone();
        let echo = echo.clone();
        tokio::spawn(async move {
            let _in_progress = activity.begin();
            if let Ok((request, stream)) = resolver.resolve_request().await {
                let _ = serve_request(request, stream, behaviour, &activity, &echo).await;
            }
        });
    }
    quic.close(H3_NO_ERROR, b"idle");
}

/// HTTP/3's error code for a connection closed with nothing wrong (RFC 9114 §8.1).
const H3_NO_ERROR: quinn::VarInt = quinn::VarInt::from_u32(0x100);

/// Answers one request on its stream, counting its body's chunks as bytes moving on `activity`;
/// `/echo` within `echo`'s budget.
async fn serve_request(
    request: Request<()>,
    mut stream: RequestStream,
    behaviour: Behaviour,
    activity: &Arc<Activity>,
    echo: &EchoBudget,
) -> Result<(), h3::error::StreamError> {
    let deciding = activity.deciding();
    let Answer { head, reply } =
        routes::decide(request.method(), request.uri().path(), &behaviour).await;
    drop(deciding);
    // hyper says how long h1/h2 bodies are from their size; the same here when it is known.
    let length = match &reply {
        Reply::Static(bytes) => Some(HeaderValue::from(bytes.as_ref().map_or(0, Bytes::len))),
        Reply::Filler(count) => Some(HeaderValue::from(*count)),
        Reply::Echo => request.headers().get(CONTENT_LENGTH).cloned(),
        Reply::Events(_) => None,
    };
    let mut response = head.response(());
    if let Reply::Events(events) = &reply {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, events.content_type());
    }
    // As hyper does for h1/h2: no length on a response that cannot have a body.
    let bodiless = matches!(response.status().as_u16(), 204 | 304);
    if let Some(length) = length.filter(|_| !bodiless) {
        response.headers_mut().insert(CONTENT_LENGTH, length);
    }
    stream.send_response(response).await?;
    // A HEAD response says how long the body would be and sends none (RFC 9110 §9.3.2).
    let reply = if request.method() == Method::HEAD {
        Reply::Static(None)
    } else {
        reply
    };
    match reply {
        Reply::Static(Some(bytes)) => stream.send_data(bytes).await?,
        Reply::Static(None) => {}
        Reply::Filler(mut left) => {
            while left > 0 {
                let chunk = routes::filler_chunk(left);
                left -= chunk.len() as u64;
                stream.send_data(chunk).await?;
                activity.moved();
            }
        }
        Reply::Events(events) => {
            let mut schedule = events.schedule(Instant::now());
            while let Some(event) = schedule.next().await {
                stream.send_data(event).await?;
                activity.moved();
            }
        }
        Reply::Echo => {
            let mut reserver = echo.reserver();
            while let Some(mut chunk) = stream.recv_data().await? {
                activity.moved();
                let chunk = chunk.copy_to_bytes(chunk.remaining());
                reserver.room(chunk.len()).await;
                stream.send_data(reserver.hold(chunk)).await?;
                activity.moved();
            }
            return stream.finish().await;
        }
    }
    stream.finish().await?;
    // Read what a request to another route uploaded (nothing, for a GET), so the client's upload
    // completes instead of being stopped.
    while stream.recv_data().await?.is_some() {
        activity.moved();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use bytes::{Buf, Bytes};
    use http::{HeaderMap, Method, Request, StatusCode};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::server::{spawn_background, ServeOptions};
    use crate::tls;

    type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

    /// The built-in target with TLS and HTTP/3, on a free loopback port.
    fn target() -> SocketAddr {
        target_with(ServeOptions::default())
    }

    /// Like [`target`], with `options` otherwise.
    fn target_with(options: ServeOptions) -> SocketAddr {
        let tls = tls::server_config(
            tls::test_pki::SERVER_CERT.as_bytes(),
            tls::test_pki::SERVER_KEY.as_bytes(),
        )
        .expect("the test certificate loads");
        let options = ServeOptions {
            tls: Some(tls),
            h3: true,
            ..options
        };
        spawn_background(1, options).expect("the target starts")
    }

    /// Runs a client on a runtime of its own (the target has another, in its thread).
    fn client<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("client runtime")
            .block_on(future)
    }

    /// An HTTP/3 connection to `addr` (QUIC on its UDP port), trusting the test CA.
    async fn connect(addr: SocketAddr) -> SendRequest {
        connect_quic(addr, quinn::TransportConfig::default())
            .await
            .0
    }

    /// Like [`connect`], with `transport`; also the QUIC connection.
    async fn connect_quic(
        addr: SocketAddr,
        transport: quinn::TransportConfig,
    ) -> (SendRequest, quinn::Connection) {
        let crypto = tls::client_config(&tls::ClientTlsOptions {
            alpn: vec![b"h3".to_vec()],
            trust_test_ca: true,
            ..Default::default()
        })
        .expect("client TLS configuration");
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto)
            .expect("TLS 1.3 is available");
        let mut endpoint = quinn::Endpoint::client(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("client UDP socket");
        let mut config = quinn::ClientConfig::new(std::sync::Arc::new(crypto));
        config.transport_config(std::sync::Arc::new(transport));
        endpoint.set_default_client_config(config);
        let connection = endpoint
            .connect(addr, "localhost")
            .expect("connection starts")
            .await
            .expect("QUIC handshake with the target");
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(connection.clone()))
            .await
            .expect("HTTP/3 connection");
        tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
        (send, connection)
    }

    #[test]
    fn a_connection_without_requests_is_closed_after_the_idle_timeout_despite_pings() {
        let addr = target_with(ServeOptions {
            idle_timeout: Duration::from_secs(1),
            ..ServeOptions::default()
        });
        client(async {
            // QUIC PINGs every 100 ms: QUIC's own idle timeout never fires.
            let mut transport = quinn::TransportConfig::default();
            transport.keep_alive_interval(Some(Duration::from_millis(100)));
            let (mut send, quic) = connect_quic(addr, transport).await;
            // A request first: the connection is idle once it is answered (after it began).
            let since = std::time::Instant::now();
            let (status, _, _) = fetch(&mut send, Method::GET, "/ping", b"").await;
            assert_eq!(status, StatusCode::OK);
            let closed = tokio::time::timeout(Duration::from_secs(20), quic.closed())
                .await
                .expect("closed within 20 s");
            assert!(
                since.elapsed() >= Duration::from_secs(1),
                "{:?}",
                since.elapsed()
            );
            assert!(
                matches!(&closed, quinn::ConnectionError::ApplicationClosed(close) if close.error_code == super::H3_NO_ERROR),
                "{closed:?}"
            );
        });
    }

    /// Sends `method path` with `body`; returns the response's status, headers and body.
    async fn fetch(
        send: &mut SendRequest,
        method: Method,
        path: &str,
        body: &[u8],
    ) -> (StatusCode, HeaderMap, Vec<u8>) {
        let request = Request::builder()
            .method(method)
            .uri(format!("https://localhost{path}"))
            .body(())
            .expect("valid request");
        let mut stream = send.send_request(request).await.expect("request sent");
        for chunk in body.chunks(50_000) {
            stream
                .send_data(Bytes::copy_from_slice(chunk))
                .await
                .expect("body sent");
        }
        stream.finish().await.expect("request finished");
        let response = stream.recv_response().await.expect("response head");
        let mut received = Vec::new();
        while let Some(mut chunk) = stream.recv_data().await.expect("response body") {
            while chunk.has_remaining() {
                let slice = chunk.chunk();
                received.extend_from_slice(slice);
                let read = slice.len();
                chunk.advance(read);
            }
        }
        (response.status(), response.headers().clone(), received)
    }

    #[test]
    fn every_route_answers_over_http3() {
        let addr = target();
        client(every_route(addr));
    }

    async fn every_route(addr: SocketAddr) {
        let mut send = connect(addr).await;

        let (status, headers, body) = fetch(&mut send, Method::GET, "/ping", b"").await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"pong"[..]));
        assert_eq!(headers["content-length"], "4");

        // Several 64 KiB slices and a partial one.
        let (status, headers, body) = fetch(&mut send, Method::GET, "/bytes/200001", b"").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["content-length"], "200001");
        assert_eq!(body.len(), 200_001);
        assert!(body.iter().all(|&byte| byte == b'x'));

        // HEAD: the length the body would have, no body; 204: neither (as hyper answers h1/h2).
        let (status, headers, body) = fetch(&mut send, Method::HEAD, "/ping", b"").await;
        assert_eq!((status, body.len()), (StatusCode::OK, 0));
        assert_eq!(headers["content-length"], "4");
        let (status, headers, body) = fetch(&mut send, Method::GET, "/status/204", b"").await;
        assert_eq!((status, body.len()), (StatusCode::NO_CONTENT, 0));
        assert!(!headers.contains_key("content-length"));

        let (status, _, body) = fetch(&mut send, Method::GET, "/status/503", b"").await;
        assert_eq!((status, body.len()), (StatusCode::SERVICE_UNAVAILABLE, 0));

        let (status, headers, body) = fetch(&mut send, Method::GET, "/delay/20", b"").await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"pong"[..]));
        let applied: u64 = headers["x-delay-applied-us"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((20_000..200_000).contains(&applied), "{applied} µs");
        let (status, headers, body) = fetch(&mut send, Method::GET, "/exp/1", b"").await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"pong"[..]));
        assert!(headers.contains_key("x-delay-applied-us"));

        let upload: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let (status, _, body) = fetch(&mut send, Method::POST, "/echo", &upload).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            body == upload,
            "echoed {} of {} bytes",
            body.len(),
            upload.len()
        );

        // A body sent to a route that ignores it is read, not refused.
        let (status, _, body) = fetch(&mut send, Method::POST, "/ping", &upload).await;
        assert_eq!((status, body.as_slice()), (StatusCode::OK, &b"pong"[..]));

        let (status, _, _) = fetch(&mut send, Method::GET, "/echo", b"").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        let (status, _, _) = fetch(&mut send, Method::GET, "/nowhere", b"").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[test]
    fn hundreds_of_requests_are_open_at_once_on_one_connection() {
        let addr = target();
        client(open_at_once(addr));
    }

    /// Opens 300 uploads to `/echo` and keeps them all open before finishing any: past quinn's
    /// default of 100 concurrent streams, opening would wait forever (the timeout fails it).
    async fn open_at_once(addr: SocketAddr) {
        let mut send = connect(addr).await;
        let open = async {
            let mut streams = Vec::new();
            for _ in 0..300 {
                let request = Request::post("https://localhost/echo").body(()).unwrap();
                let mut stream = send.send_request(request).await.expect("stream opens");
                stream.send_data(Bytes::from_static(b"x")).await.unwrap();
                streams.push(stream);
            }
            streams
        };
        let streams = tokio::time::timeout(Duration::from_secs(30), open)
            .await
            .expect("300 streams open at once");
        for mut stream in streams {
            stream.finish().await.unwrap();
            assert_eq!(
                stream.recv_response().await.unwrap().status(),
                StatusCode::OK
            );
            let mut echoed = 0;
            while let Some(chunk) = stream.recv_data().await.unwrap() {
                echoed += chunk.remaining();
            }
            assert_eq!(echoed, 1);
        }
    }

    #[test]
    fn tls_responses_announce_http3() {
        let addr = target();
        client(alt_svc(addr));
    }

    async fn alt_svc(addr: SocketAddr) {
        let config = tls::client_config(&tls::ClientTlsOptions {
            alpn: vec![b"http/1.1".to_vec()],
            trust_test_ca: true,
            ..Default::default()
        })
        .unwrap();
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut stream = tokio_rustls::TlsConnector::from(config)
            .connect(tls::server_name("localhost").unwrap(), tcp)
            .await
            .unwrap();
        stream
            .write_all(b"GET /ping HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response).await;
        let expected = format!("alt-svc: h3=\":{}\"; ma=86400\r\n", addr.port());
        assert!(response.contains(&expected), "{response}");
    }
}
