//! Every transport: connecting, by one [`connect::Connector`] (TCP, unix sockets, the proxy's
//! CONNECT, TLS: [`net`]; QUIC: [`quic`]), the byte-stream driver that runs a session over the
//! connection ([`driver`]), the HTTP/3 driver on quinn's streams ([`h3`]), io_uring ([`uring`],
//! the only `unsafe` code), and the timer the drivers wait with ([`clock`]).

pub(crate) mod clock;
pub(crate) mod connect;
pub(crate) mod driver;
pub(crate) mod h3;
pub(crate) mod net;
pub(crate) mod proxy;
pub(crate) mod quic;
pub(crate) mod stamped;
pub(crate) mod tls_resume;
pub(crate) mod uring;
