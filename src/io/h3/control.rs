//! The connection's unidirectional streams: the client's control stream (its SETTINGS), and
//! the server's control and QPACK streams, read to their end.

use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use quinn::{ReadError, RecvStream, SendStream, VarInt, WriteError};

use super::Shared;
use crate::io::quic;
use crate::proto::h3::{
    H3Error, UniStreamParser, H3_CLOSED_CRITICAL_STREAM, H3_STREAM_CREATION_ERROR, STREAM_CONTROL,
    STREAM_QPACK_DECODER, STREAM_QPACK_ENCODER,
};
use crate::recorder::{ErrorKind, Failure};
use crate::schedule::Timer;
use crate::units::format_micros;

/// Opens the client's control stream with the client's SETTINGS, within the credit wait.
pub(super) async fn open_control(
    shared: &Shared<'_>,
    timer: &impl Timer,
) -> Result<SendStream, Failure> {
    let lost = |error: quinn::ConnectionError| quic::connection_failure(&error);
    let limit = shared.template.credit_wait;
    let mut control = tokio::select! {
        opened = shared.conn.open_uni() => opened.map_err(lost)?,
        () = timer.sleep_until(Instant::now() + limit) => {
            shared.ledger.closed_by_client();
            return Err(Failure::new(
                ErrorKind::Timeout,
                format!(
                    "the server allows no unidirectional stream (initial_max_streams_uni 0): the client's HTTP/3 control stream waited {} for one",
                    format_micros(limit.as_micros() as f64)
                ),
            ));
        }
    };
    match control.write_chunk(shared.template.control.clone()).await {
        Ok(()) => {
            let id = VarInt::from(control.id()).into_inner();
            shared.trace_sent(id, &shared.template.control);
            Ok(control)
        }
        Err(WriteError::ConnectionLost(error)) => Err(lost(error)),
        Err(error) => Err(Failure::protocol(format!(
            "the server refused the client's control stream: {error}"
        ))),
    }
}

/// Accepts and reads the server's unidirectional streams; returns when one breaks the protocol
/// or the connection is lost.
pub(super) async fn server_streams(shared: &Shared<'_>) -> Failure {
    let mut readers = FuturesUnordered::new();
    loop {
        tokio::select! {
            accepted = shared.conn.accept_uni() => match accepted {
                Ok(stream) => readers.push(read_server_stream(shared, stream)),
                Err(error) => return quic::connection_failure(&error),
            },
            Some(Err(failure)) = readers.next(), if !readers.is_empty() => return failure,
        }
    }
}

/// Reads one of the server's unidirectional streams to its end.
async fn read_server_stream(shared: &Shared<'_>, mut stream: RecvStream) -> Result<(), Failure> {
    let mut parser = UniStreamParser::default();
    loop {
        let critical = matches!(
            parser.kind(),
            Some(STREAM_CONTROL | STREAM_QPACK_ENCODER | STREAM_QPACK_DECODER)
        );
        if parser.kind().is_some() && !critical {
            // An unknown (reserved) stream type: not read (RFC 9114 §6.2.3).
            let _ =
                stream.stop(VarInt::from_u64(H3_STREAM_CREATION_ERROR).expect("a valid varint"));
            return Ok(());
        }
        let chunk = match stream.read_chunk(usize::MAX, true).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) | Err(ReadError::Reset(_)) if critical => {
                return Err(shared.violation(H3Error {
                    code: H3_CLOSED_CRITICAL_STREAM,
                    reason: "the server closed its control or a QPACK stream",
                }))
            }
            Err(ReadError::ConnectionLost(error)) => return Err(quic::connection_failure(&error)),
            Ok(None) | Err(_) => return Ok(()),
        };
        shared.last_read.set(Instant::now());
        shared.ledger.wire().add_total(chunk.bytes.len() as u64);
        shared.trace_received(VarInt::from(stream.id()).into_inner(), &chunk.bytes);
        let known = parser.kind();
        parser
            .feed(&chunk.bytes, |event| shared.on_control(event))
            .map_err(|error| shared.violation(error))?;
        if let (None, Some(kind @ (STREAM_CONTROL | STREAM_QPACK_ENCODER | STREAM_QPACK_DECODER))) =
            (known, parser.kind())
        {
            shared.critical_opened(kind)?;
        }
    }
}
