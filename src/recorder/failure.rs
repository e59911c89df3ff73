//! The error taxonomy: why a request or connection did not get its response ([`ErrorKind`]), and
//! the [`Failure`] that carries it with a message for the user and, when the failure alone tells
//! what is wrong with the server or the URL, its [`Symptom`] (the report's cause line leads with it).

/// Why a request or connection did not get its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// The TCP connection could not be established.
    Connect,
    /// Connecting took longer than `--connect-timeout`.
    ConnectTimeout,
    /// The request, or its connection, ran past a timeout.
    Timeout,
    /// The connection was closed or reset before the response completed.
    Closed,
    /// The server sent something that is not valid HTTP, or reset the stream.
    Protocol,
    /// The TLS handshake failed, or ALPN selected a protocol the user ruled out.
    Tls,
    /// The connection was reset (TCP RST) before the response completed.
    Reset,
    /// The server's GOAWAY left the request unprocessed, on every attempt (or with `--no-retry`).
    Goaway,
    /// The server refused the request's HTTP/2 stream (REFUSED_STREAM) on every attempt.
    Refused,
    /// The server reset the request's HTTP/2 stream (its code is counted too).
    StreamReset,
    /// The generator ran out of file descriptors (EMFILE/ENFILE).
    TooManyOpenFiles,
    /// The `--proxy` refused the tunnel (a non-2xx answer to `CONNECT`) or answered badly.
    Proxy,
    /// A complete response failed a response check (`--expect-status`, `--expect-header`,
    /// `--expect-body-contains`).
    Check,
    /// A gRPC call's response ended (HTTP status 200) without a `grpc-status`.
    GrpcStatusMissing,
    /// A gRPC response body that is not a sequence of messages: a compressed flag other than 0
    /// or 1, a message cut short by the end of the stream, or a unary call answered with no
    /// message or several.
    GrpcFraming,
    /// A gRPC message longer than `--grpc-max-message`: the call is cancelled before its bytes
    /// arrive.
    GrpcTooLarge,
    /// A gRPC message marked compressed in a response that names no `grpc-encoding`.
    GrpcCompressed,
    /// A call's rendering of `--grpc-data` did not encode as the method's input message (a
    /// `{rand:N}` or `{seq}` past its field's range, say): the call is not sent.
    GrpcInput,
    /// An event stream's line, or one event's data, was longer than `--max-event-size`: the
    /// request fails there, and no more of its stream is read.
    EventTooLarge,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub(crate) const ALL: [ErrorKind; 19] = [
        ErrorKind::Connect,
        ErrorKind::ConnectTimeout,
        ErrorKind::TooManyOpenFiles,
        ErrorKind::Proxy,
        ErrorKind::Tls,
        ErrorKind::Timeout,
        ErrorKind::Closed,
        ErrorKind::Reset,
        ErrorKind::Goaway,
        ErrorKind::Refused,
        ErrorKind::StreamReset,
        ErrorKind::Protocol,
        ErrorKind::GrpcStatusMissing,
        ErrorKind::GrpcFraming,
        ErrorKind::GrpcTooLarge,
        ErrorKind::GrpcCompressed,
        ErrorKind::GrpcInput,
        ErrorKind::EventTooLarge,
        ErrorKind::Check,
    ];

    /// The kind's name in reports and JSON.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Closed => "closed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Tls => "tls",
            ErrorKind::Reset => "reset",
            ErrorKind::Goaway => "goaway",
            ErrorKind::Refused => "refused",
            ErrorKind::StreamReset => "stream_reset",
            ErrorKind::TooManyOpenFiles => "too_many_open_files",
            ErrorKind::Proxy => "proxy",
            ErrorKind::Check => "check",
            ErrorKind::GrpcStatusMissing => "grpc_status_missing",
            ErrorKind::GrpcFraming => "grpc_framing",
            ErrorKind::GrpcTooLarge => "grpc_too_large",
            ErrorKind::GrpcCompressed => "grpc_compressed",
            ErrorKind::GrpcInput => "grpc_input",
            ErrorKind::EventTooLarge => "event_too_large",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// What one failure says about the server or the URL, beyond how it is counted: each names a
/// mistake a user can fix, so the report leads with it when the run failed (`report::cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Symptom {
    /// The server answered the HTTP/2 preface (h2c by prior knowledge) in HTTP/1.1.
    Http1Only,
    /// The server answered a cleartext request with a TLS record: the port speaks TLS.
    TlsPort,
    /// Nothing listens at the address: the connection was refused.
    Refused,
    /// The server's certificate did not verify (the message says why, in words).
    Certificate,
}

/// Why a connection or a request could not go on: how it is counted, and what to tell the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// How the failure is counted.
    pub(crate) kind: ErrorKind,
    /// What happened, worded for the user.
    pub(crate) message: String,
    /// What it says about the server or the URL, when it says something a user can fix.
    pub(crate) symptom: Option<Symptom>,
}

impl Failure {
    /// A failure of `kind`, explained by `message`.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Failure {
            kind,
            message: message.into(),
            symptom: None,
        }
    }

    /// The same failure, known to show `symptom`.
    pub(crate) fn showing(self, symptom: Symptom) -> Self {
        Failure {
            symptom: Some(symptom),
            ..self
        }
    }

    /// The server broke the protocol.
    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Failure::new(ErrorKind::Protocol, message)
    }
}
