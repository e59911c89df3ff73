//! The target's HTTP/3 front end: a quinn endpoint on the UDP port of the TLS listener, answering
//! with the same routes, delays and stalls as HTTP/1.1 and HTTP/2 ([`routes::decide`]).

use std::io;
use std::net::UdpSocket;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use http::header::CONTENT_LENGTH;
use http::{HeaderValue, Request};
use quinn::crypto::rustls::QuicServerConfig;

use super::routes::{self, Answer, Behaviour, Reply};
use super::{CONNECTION_WINDOW, STREAM_WINDOW};

type RequestStream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// The QUIC endpoint of the target on `socket`, with the certificate of `tls` (TLS 1.3, ALPN `h3`)
/// and room for `max_streams` requests at once per connection. Must be called within a tokio
/// runtime.
pub(super) fn endpoint(
    socket: UdpSocket,
    tls: &rustls::ServerConfig,
    max_streams: u32,
) -> io::Result<quinn::Endpoint> {
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = QuicServerConfig::try_from(tls).map_err(io::Error::other)?;
    let mut transport = quinn::TransportConfig::default();
    // Load generators open many streams at once and upload to /echo: neither the stream count
    // nor the receive windows may be what limits them.
    transport
        .max_concurrent_bidi_streams(max_streams.into())
        .stream_receive_window(STREAM_WINDOW.into())
        .receive_window(CONNECTION_WINDOW.into())
        .send_window(u64::from(STREAM_WINDOW) * 8);
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// Accepts QUIC connections on `endpoint` and serves HTTP/3 on them until the runtime shuts down.
pub(super) async fn serve(endpoint: quinn::Endpoint, behaviour: Behaviour) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(serve_connection(incoming, behaviour));
    }
}

/// Serves one connection. A client that goes away is normal under load: nothing is reported.
async fn serve_connection(incoming: quinn::Incoming, behaviour: Behaviour) {
    let Ok(connection) = incoming.await else {
        return;
    };
    // No grease: every byte the target sends is then one a test can predict.
    let built = h3::server::builder()
        .send_grease(false)
        .build::<_, Bytes>(h3_quinn::Connection::new(connection))
        .await;
    let Ok(mut connection) = built else {
        return;
    };
    while let Ok(Some(resolver)) = connection.accept().await {
        tokio::spawn(async move {
            if let Ok((request, stream)) = resolver.resolve_request().await {
                let _ = serve_request(request, stream, behaviour).await;
            }
        });
    }
}

/// Answers one request on its stream.
async fn serve_request(
    request: Request<()>,
    mut stream: RequestStream,
    behaviour: Behaviour,
) -> Result<(), h3::error::StreamError> {
    let Answer { head, reply } =
        routes::decide(request.method(), request.uri().path(), behaviour).await;
    // hyper says how long h1/h2 bodies are from their size; the same here when it is known.
    let length = match &reply {
        Reply::Static(bytes) => Some(HeaderValue::from(bytes.as_ref().map_or(0, Bytes::len))),
        Reply::Filler(count) => Some(HeaderValue::from(*count)),
        Reply::Echo => request.headers().get(CONTENT_LENGTH).cloned(),
    };
    let mut response = head.response(());
    if let Some(length) = length {
        response.headers_mut().insert(CONTENT_LENGTH, length);
    }
    stream.send_response(response).await?;
    match reply {
        Reply::Static(Some(bytes)) => stream.send_data(bytes).await?,
        Reply::Static(None) => {}
        Reply::Filler(mut left) => {
            while left > 0 {
                let chunk = routes::filler_chunk(left);
                left -= chunk.len() as u64;
                stream.send_data(chunk).await?;
            }
        }
        Reply::Echo => {
            while let Some(mut chunk) = stream.recv_data().await? {
                let chunk = chunk.copy_to_bytes(chunk.remaining());
                stream.send_data(chunk).await?;
            }
            return stream.finish().await;
        }
    }
    stream.finish().await?;
    // Read what a request to another route uploaded (nothing, for a GET), so the client's upload
    // completes instead of being stopped.
    while stream.recv_data().await?.is_some() {}
    Ok(())
}
