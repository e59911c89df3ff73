//! The one way a client slot connects: a [`Connector`] per thread, over byte streams (TCP, unix
//! sockets, a proxy's tunnel, TLS; [`net::establish`], on the thread's io_uring when it has one)
//! or over QUIC (the thread's endpoint, [`QuicContext::connect`]). A slot asks it for a
//! connection and gets one [`Connection`], whatever it travels on: the slot's loop (reserve,
//! connect, record, drive, replace) is written once.

use std::rc::Rc;
use std::time::Duration;

use crate::io::net::{self, Established};
use crate::io::quic::QuicContext;
use crate::io::uring::Uring;
use crate::plan::route::Route;
use crate::plan::TlsPlan;
use crate::recorder::Failure;

/// How a thread's connections are made.
pub(crate) enum Connector {
    /// Byte streams by the plan's route, with TLS when the plan has it; on the thread's
    /// io_uring when there is one.
    Stream(Option<Rc<Uring>>),
    /// QUIC connections on the thread's endpoint (HTTP/3).
    Quic(Rc<QuicContext>),
}

/// A connection made by a [`Connector`], handshakes done.
pub(crate) enum Connection {
    /// A byte stream, with what its TLS handshake negotiated.
    Stream(Established),
    /// A QUIC connection.
    Quic(quinn::Connection),
}

impl Connector {
    /// The connector for a thread: QUIC when it has an endpoint, else byte streams (on `ring`).
    pub(crate) fn new(quic: Option<Rc<QuicContext>>, ring: Option<Rc<Uring>>) -> Connector {
        match quic {
            Some(quic) => Connector::Quic(quic),
            None => Connector::Stream(ring),
        }
    }

    /// Connects, handshakes included, within `timeout`: by `route` with `tls` for a stream (a
    /// QUIC endpoint knows its server and its TLS configuration).
    pub(crate) async fn connect(
        &self,
        route: &Route,
        tls: Option<&TlsPlan>,
        timeout: Option<Duration>,
    ) -> Result<Connection, Failure> {
        match self {
            Connector::Stream(ring) => net::establish(route, tls, timeout, ring.as_ref())
                .await
                .map(Connection::Stream),
            Connector::Quic(quic) => quic.connect(timeout).await.map(Connection::Quic),
        }
    }
}
