//! The gRPC flags: which method to call, what message to send and how to read the answer.
//! `plan::grpc` checks them together and compiles the `.proto` files.

use std::path::PathBuf;

use clap::Args;

use crate::units::parse_size;

/// Arguments that make a run call a gRPC method instead of sending plain HTTP requests.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct GrpcArgs {
    /// Call this gRPC method on the URL's server (h2c for http://, h2 for https://):
    /// /package.Service/Method (also package.Service.Method). The URL's path is ignored.
    #[arg(long = "grpc", value_name = "METHOD")]
    pub(crate) grpc_method: Option<String>,

    /// A .proto file declaring the method (repeatable), compiled at run time: the message can
    /// then be given as JSON (--grpc-data), and the method's shape is checked.
    #[arg(long = "grpc-proto", value_name = "FILE", requires = "grpc_method")]
    pub(crate) grpc_protos: Vec<PathBuf>,

    /// Ask the server's reflection service (grpc.reflection.v1, else v1alpha) for the method's
    /// schema before the run, instead of --grpc-proto.
    #[arg(
        long = "grpc-reflect",
        requires = "grpc_method",
        conflicts_with = "grpc_protos"
    )]
    pub(crate) grpc_reflect: bool,

    /// A directory the .proto files' imports are looked up in (repeatable; default: each
    /// file's own directory).
    #[arg(
        long = "grpc-import-path",
        value_name = "DIR",
        requires = "grpc_protos"
    )]
    pub(crate) grpc_import_paths: Vec<PathBuf>,

    /// The request message as JSON (proto3's JSON mapping), or @FILE to read it from a file;
    /// needs --grpc-proto or --grpc-reflect. Placeholders ({seq}, {rand:N}, {uuid}, ...) are rendered per call,
    /// then the message is encoded; without any, it is encoded once.
    #[arg(
        long = "grpc-data",
        value_name = "JSON|@FILE",
        requires = "grpc_method",
        conflicts_with = "grpc_binary_file"
    )]
    pub(crate) grpc_data: Option<String>,

    /// The request message as raw protobuf bytes, sent as they are (no .proto needed).
    #[arg(
        long = "grpc-binary-file",
        value_name = "FILE",
        requires = "grpc_method"
    )]
    pub(crate) grpc_binary_file: Option<PathBuf>,

    /// The method's shape, when no --grpc-proto tells it: unary, server (server-streaming),
    /// client (client-streaming) or bidi.
    #[arg(long = "grpc-shape", value_name = "SHAPE", requires = "grpc_method")]
    pub(crate) grpc_shape: Option<GrpcShapeArg>,

    /// Messages each client-streaming or bidirectional call sends (the same message each time),
    /// then it half-closes. A bidirectional call sends the next once the reply to the last has
    /// arrived, unless --grpc-stream-interval paces them. 1..=1000000; default 1.
    #[arg(long = "grpc-stream-messages", value_name = "N", default_value_t = 1,
          value_parser = crate::cli::values::count::<u32>(1, 1_000_000), requires = "grpc_method")]
    pub(crate) grpc_stream_messages: u32,

    /// Send a streaming call's messages this far apart (a rate per stream) instead of as fast
    /// as flow control (client-streaming) or the replies (bidirectional) allow; 0 sends a
    /// bidirectional call's messages back to back, replies or not.
    #[arg(long = "grpc-stream-interval", value_name = "DURATION",
          value_parser = crate::units::parse_duration, requires = "grpc_method")]
    pub(crate) grpc_stream_interval: Option<std::time::Duration>,

    /// The longest response message accepted; a longer one fails its call (grpc_too_large)
    /// before its bytes arrive. Default 4M, as grpc-go and grpc-java clients.
    #[arg(long = "grpc-max-message", value_name = "SIZE", default_value = "4M",
          value_parser = parse_message_limit, requires = "grpc_method")]
    pub(crate) grpc_max_message: u32,
}

fn parse_message_limit(text: &str) -> Result<u32, String> {
    let size = parse_size(text)?;
    u32::try_from(size)
        .ok()
        .filter(|size| *size > 0)
        .ok_or_else(|| format!("'{text}': expected 1 byte to 4G - 1"))
}

/// Values of `--grpc-shape`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GrpcShapeArg {
    /// One message each way.
    Unary,
    /// One message sent, a stream of them received.
    Server,
    /// A stream of messages sent, one received.
    Client,
    /// Streams both ways.
    Bidi,
}
