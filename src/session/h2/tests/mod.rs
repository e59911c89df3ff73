//! The HTTP/2 session's tests, by the job of the file they test: sessions fed a server's bytes
//! with no socket and no runtime (see `engine/testing.rs`).

mod control;
mod grpc;
mod recv;
mod send;
mod session;
