//! `--grpc`: the method called ([`GrpcInputs`] say what was asked), its shape (read from
//! `--grpc-proto` when given) and the message each call sends, framed with its 5-byte prefix. A
//! JSON message is compiled against the `.proto` files once (protox, prost-reflect); one with
//! placeholders is rendered and encoded per call by [`JsonMessage`], which the engine's renderer
//! calls.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use bytes::Bytes;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};

use super::json_ints::inexact_integer;
use super::proto_files::{compile, one_line};
use super::template::{Draw, Rng, Template};
use crate::error::quoted;
use crate::input;
use crate::limits::MAX_BODY_FILE;
use crate::proto::grpc::write_prefix;
use crate::usage_bail;

/// What a gRPC cell calls; `RunPlan::grpc`.
#[derive(Debug, Clone)]
pub(crate) struct GrpcPlan {
    /// The method's path: `/package.Service/Method`.
    pub(crate) path: String,
    /// The longest response message accepted.
    pub(crate) max_message: u32,
    /// Whether each side streams.
    pub(crate) shape: CallShape,
    /// Messages a call sends: 1, or `--grpc-stream-messages` for client-streaming and
    /// bidirectional calls.
    pub(crate) messages: u32,
    /// `--grpc-stream-interval`: the gap between a streaming call's messages.
    pub(crate) interval: Option<std::time::Duration>,
}

/// Which sides of a call stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallShape {
    /// One request message, one response message.
    Unary,
    /// One request message, a stream of responses.
    ServerStream,
    /// A stream of requests, one response message.
    ClientStream,
    /// Streams both ways.
    Bidi,
}

impl CallShape {
    /// Whether the client sends a stream of messages.
    pub(crate) fn client_streams(self) -> bool {
        matches!(self, CallShape::ClientStream | CallShape::Bidi)
    }

    /// Whether the server answers with exactly one message (when the call ends OK).
    pub(crate) fn one_response(self) -> bool {
        matches!(self, CallShape::Unary | CallShape::ClientStream)
    }

    /// Its name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CallShape::Unary => "unary",
            CallShape::ServerStream => "server-streaming",
            CallShape::ClientStream => "client-streaming",
            CallShape::Bidi => "bidirectional",
        }
    }
}

/// The message every call sends.
pub(super) enum GrpcBody {
    /// The same bytes every call, prefix included.
    Fixed(Bytes),
    /// JSON with placeholders, rendered then encoded per call.
    Templated {
        /// The JSON text, as given.
        json: Bytes,
        /// Its encoder.
        encoder: Arc<JsonMessage>,
    },
}

/// Encodes a rendered JSON message into a framed protobuf message.
#[derive(Debug)]
pub(crate) struct JsonMessage {
    descriptor: MessageDescriptor,
}

impl JsonMessage {
    /// Appends `json` as a prefixed protobuf message to `out`; an integer out of its field's
    /// range is refused, never clamped (see [`inexact_integer`]).
    pub(crate) fn encode(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        if let Some(problem) = inexact_integer(json, &self.descriptor) {
            return Err(problem);
        }
        let mut deserializer = serde_json::Deserializer::from_slice(json);
        let message = DynamicMessage::deserialize(self.descriptor.clone(), &mut deserializer)
            .and_then(|message| deserializer.end().map(|()| message))
            .map_err(|error| error.to_string())?;
        write_prefix(out, message.encoded_len());
        message
            .encode(out)
            .map_err(|error| format!("the message cannot be encoded: {error}"))
    }
}

/// The gRPC method to call and its message, as the inputs give them (`Inputs::grpc`).
#[derive(Debug, Clone, Default)]
pub(crate) struct GrpcInputs {
    /// `--grpc`: the method (`None`: no gRPC).
    pub(crate) method: Option<String>,
    /// `--grpc-shape`, if given.
    pub(crate) shape: Option<CallShape>,
    /// `--grpc-proto`.
    pub(crate) protos: Vec<PathBuf>,
    /// `--grpc-import-path`.
    pub(crate) import_paths: Vec<PathBuf>,
    /// `--grpc-reflect`: the schema is asked of the server.
    pub(crate) reflect: bool,
    /// The schema the server's reflection service gave, once fetched.
    pub(crate) reflected: Option<prost_reflect::DescriptorPool>,
    /// `--grpc-data`.
    pub(crate) data: Option<String>,
    /// `--grpc-binary-file`.
    pub(crate) binary_file: Option<PathBuf>,
    /// `--grpc-stream-messages`.
    pub(crate) stream_messages: u32,
    /// `--grpc-stream-interval`.
    pub(crate) stream_interval: Option<Duration>,
    /// `--grpc-max-message`.
    pub(crate) max_message: u32,
}

/// The method, shape and message `asked` for; `None` without `--grpc`. `last_seq`: the
/// largest `{seq}` of the run when it is known (`-n N`); a message some calls will not encode
/// adds a warning to `warnings`.
pub(super) fn grpc_plan(
    asked: &GrpcInputs,
    last_seq: Option<u64>,
    warnings: &mut Vec<String>,
) -> Result<Option<(GrpcPlan, GrpcBody)>> {
    let Some(given) = &asked.method else {
        return Ok(None);
    };
    let (service, method) = method_name(given)?;
    let path = format!("/{service}/{method}");
    let given_shape = asked.shape;
    let pool = match (&asked.reflected, asked.protos.is_empty()) {
        (Some(reflected), _) => Some(reflected.clone()),
        (None, false) => Some(compile(&asked.protos, &asked.import_paths)?),
        (None, true) => None,
    };
    let (input, shape) = if let Some(pool) = pool {
        let descriptor = find_method(&pool, &service, &method, given)?;
        let shape = match (
            descriptor.is_client_streaming(),
            descriptor.is_server_streaming(),
        ) {
            (false, false) => CallShape::Unary,
            (false, true) => CallShape::ServerStream,
            (true, false) => CallShape::ClientStream,
            (true, true) => CallShape::Bidi,
        };
        if given_shape.is_some_and(|given_shape| given_shape != shape) {
            usage_bail!(
                "--grpc-shape says otherwise than the .proto, where {} is {}",
                quoted(given),
                shape.name()
            );
        }
        (Some(descriptor.input()), shape)
    } else {
        (None, given_shape.unwrap_or(CallShape::Unary))
    };
    // Before --grpc-reflect has brought the schema, the shape is not known yet.
    let shape_known = !(asked.reflect && asked.reflected.is_none());
    if shape_known
        && !shape.client_streams()
        && (asked.stream_messages > 1 || asked.stream_interval.is_some())
    {
        usage_bail!(
            "--grpc-stream-messages and --grpc-stream-interval are for client-streaming and bidirectional calls; {} is {}",
            quoted(given),
            shape.name()
        );
    }
    let body = match (&asked.data, &asked.binary_file, input) {
        (Some(data), _, Some(input)) => json_body(data, input, last_seq, warnings)?,
        (None, Some(file), _) => {
            let message = input::read(file, "--grpc-binary-file", MAX_BODY_FILE)?;
            GrpcBody::Fixed(framed(&message))
        }
        // No message given: the empty message, every field at its default.
        (None, None, _) => GrpcBody::Fixed(framed(&[])),
        // With --grpc-reflect the schema comes after a first plan, made to connect with.
        (Some(_), _, None) if asked.reflect => GrpcBody::Fixed(framed(&[])),
        (Some(_), _, None) => {
            usage_bail!("--grpc-data needs --grpc-proto or --grpc-reflect, to encode the JSON")
        }
    };
    Ok(Some((
        GrpcPlan {
            path,
            max_message: asked.max_message,
            shape,
            messages: if shape.client_streams() {
                asked.stream_messages
            } else {
                1
            },
            interval: asked.stream_interval,
        },
        body,
    )))
}

/// `/package.Service/Method`, `package.Service/Method` or `package.Service.Method`, split.
fn method_name(given: &str) -> Result<(String, String)> {
    let trimmed = given.strip_prefix('/').unwrap_or(given);
    let split = trimmed.split_once('/').or_else(|| trimmed.rsplit_once('.'));
    let valid = |part: &str, dots: bool| {
        !part.is_empty()
            && part
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || (dots && byte == b'.'))
            && !part.starts_with('.')
            && !part.ends_with('.')
    };
    match split {
        Some((service, method)) if valid(service, true) && valid(method, false) => {
            Ok((service.to_owned(), method.to_owned()))
        }
        _ => usage_bail!(
            "--grpc '{}': expected /package.Service/Method (or package.Service.Method)",
            quoted(given)
        ),
    }
}

fn find_method(
    pool: &DescriptorPool,
    service: &str,
    method: &str,
    given: &str,
) -> Result<MethodDescriptor> {
    let Some(found) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool
            .services()
            .map(|service| service.full_name().to_owned())
            .collect();
        usage_bail!(
            "--grpc '{}': no service {service} in the .proto files (they declare: {})",
            quoted(given),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        );
    };
    let descriptor = found.methods().find(|candidate| candidate.name() == method);
    match descriptor {
        Some(descriptor) => Ok(descriptor),
        None => {
            let known: Vec<String> = found.methods().map(|m| m.name().to_owned()).collect();
            usage_bail!(
                "--grpc '{}': {service} has no method {method} (it has: {})",
                quoted(given),
                known.join(", ")
            )
        }
    }
}

/// The message of `--grpc-data` (JSON, or `@FILE`): encoded once when it holds no placeholder,
/// else checked by encoding one rendering of it (a usage error if it does not encode), then the
/// renderings at the ends of its ranges (a warning if one does not: those calls will not be sent).
fn json_body(
    data: &str,
    input: MessageDescriptor,
    last_seq: Option<u64>,
    warnings: &mut Vec<String>,
) -> Result<GrpcBody> {
    let json = match data.strip_prefix('@') {
        Some(file) => input::read(Path::new(file), "--grpc-data file", MAX_BODY_FILE)?,
        None => data.as_bytes().to_vec(),
    };
    let encoder = JsonMessage { descriptor: input };
    let template = Template::parse_json(&json, "--grpc-data")?;
    let mut rendered = Vec::new();
    let sample = match &template {
        Some(template) => {
            template.render(
                &mut rendered,
                &mut Draw {
                    seq: 1,
                    conn: 0,
                    rng: Rng::for_request(0, 1, 0),
                },
            );
            &rendered[..]
        }
        None => &json[..],
    };
    let mut framed = Vec::new();
    if let Err(problem) = encoder.encode(sample, &mut framed) {
        usage_bail!(
            "--grpc-data is not a {} in JSON: {}",
            encoder.descriptor.full_name(),
            one_line(&problem)
        );
    }
    if let Some(template) = &template {
        warnings.extend(end_problem(template, &encoder, last_seq));
    }
    Ok(match template {
        None => GrpcBody::Fixed(Bytes::from(framed)),
        Some(_) => GrpcBody::Templated {
            json: Bytes::from(json),
            encoder: Arc::new(encoder),
        },
    })
}

/// What is wrong with the rendering of `template` at either end of its ranges, if one does not
/// encode: every `{rand:N}` at 0 with `{seq}` 1, then at N − 1 with the run's last `{seq}`
/// (when known). The warning says which calls will not be sent.
fn end_problem(
    template: &Template,
    encoder: &JsonMessage,
    last_seq: Option<u64>,
) -> Option<String> {
    let (mut rendered, mut encoded) = (Vec::new(), Vec::new());
    [(false, 1), (true, last_seq.unwrap_or(1))]
        .into_iter()
        .find_map(|(top, seq)| {
            rendered.clear();
            let mut draw = Draw {
                seq,
                conn: 0,
                rng: Rng::for_request(0, seq, 0),
            };
            template.render_at_end(&mut rendered, &mut draw, top);
            let problem = encoder.encode(&rendered, &mut encoded).err()?;
            let end = if top {
                format!("every {{rand:N}} at N - 1 and {{seq}} at {seq}")
            } else {
                "every {rand:N} at 0 and {seq} at 1".to_owned()
            };
            Some(format!(
                "--grpc-data does not encode as a {} for every call (with {end}: {}); such calls are not sent, and count as grpc_input errors",
                encoder.descriptor.full_name(),
                one_line(&problem)
            ))
        })
}

fn framed(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + crate::proto::grpc::PREFIX_LEN);
    write_prefix(&mut out, message.len());
    out.extend_from_slice(message);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_take_three_spellings() {
        for given in ["/a.b.Svc/Do", "a.b.Svc/Do", "a.b.Svc.Do"] {
            assert_eq!(
                method_name(given).unwrap(),
                ("a.b.Svc".to_owned(), "Do".to_owned()),
                "{given}"
            );
        }
        for bad in ["", "/", "Svc", "/Svc/", "a b/C", "/.x/Y", "a/b/c"] {
            assert!(method_name(bad).is_err(), "{bad}");
        }
    }
}
