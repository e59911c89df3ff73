//! `--grpc-reflect`: a service's schema asked of the server itself, through its reflection service
//! (`grpc.reflection.v1`, else `v1alpha`, which older servers such as grpcio's serve alone), once,
//! before the run. It connects as the cell would (`net::establish`: TCP, unix socket, proxy, TLS)
//! and speaks HTTP/2 with hyper's client: this is one exchange of setup, not load, so the engine's
//! sessions are not needed. The files come back as `FileDescriptorProto`s, which the plan builds
//! its descriptor pool from.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use prost::Message;
use prost_reflect::DescriptorPool;

use super::net;
use crate::plan::RunPlan;
use crate::proto::grpc::{write_prefix, PREFIX_LEN};

/// The most a reflection answer may hold (a service's files and their imports).
const MAX_ANSWER: usize = 64 << 20;
/// Files asked for, at most (a service and everything it imports).
const MAX_FILES: usize = 1000;
/// How long the whole exchange may take, on top of connecting.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// `grpc.reflection.v1.ServerReflectionRequest`, the two questions asked.
#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "3")]
    file_by_filename: Option<String>,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
}

/// `ServerReflectionResponse`, the two answers read.
#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<FileDescriptors>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ReflectionError>,
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptors {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ReflectionError {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// The descriptors of `service` and every file it needs, from the server `plan` connects to.
pub fn fetch(plan: &RunPlan, service: &str) -> Result<DescriptorPool> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime for --grpc-reflect")?;
    // The connection is this thread's own (`net::Transport` is not `Send`): a local task set.
    tokio::task::LocalSet::new()
        .block_on(&runtime, async {
            tokio::time::timeout(EXCHANGE_TIMEOUT + plan.timeouts.connect.unwrap_or_default(), ask(plan, service))
                .await
                .map_err(|_| anyhow!("no answer within {} s", EXCHANGE_TIMEOUT.as_secs()))?
        })
        .with_context(|| {
            format!(
                "--grpc-reflect: cannot read {service}'s schema from the server's reflection service"
            )
        })
}

async fn ask(plan: &RunPlan, service: &str) -> Result<DescriptorPool> {
    let established = net::establish(
        &plan.destination.route,
        plan.tls.as_ref(),
        plan.timeouts.connect,
        None,
    )
    .await
    .map_err(|failure| anyhow!("{}", failure.message))?;
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(Local, TokioIo::new(established.transport))
            .await
            .context("the HTTP/2 handshake failed")?;
    tokio::task::spawn_local(connection);
    let scheme = if plan.tls.is_some() { "https" } else { "http" };
    let authority = &plan.destination.authority;
    let mut version = "v1";
    let mut files: Vec<Vec<u8>> = Vec::new();
    let mut known: Vec<String> = Vec::new();
    let mut wanted = vec![Question::Symbol(service.to_owned())];
    while let Some(question) = wanted.pop() {
        if files.len() >= MAX_FILES {
            bail!("more than {MAX_FILES} files");
        }
        let answer = match call(&mut sender, scheme, authority, version, &question).await {
            Err(Unimplemented) if version == "v1" => {
                version = "v1alpha";
                call(&mut sender, scheme, authority, version, &question).await
            }
            other => other,
        };
        let answer = answer.map_err(|Unimplemented| {
            anyhow!("the server has no reflection service (UNIMPLEMENTED)")
        })??;
        for file in answer {
            let descriptor = prost_reflect::prost_types::FileDescriptorProto::decode(&file[..])
                .context("a file descriptor that does not decode")?;
            let name = descriptor.name().to_owned();
            if known.contains(&name) {
                continue;
            }
            for dependency in &descriptor.dependency {
                if !known.contains(dependency)
                    && !wanted
                        .iter()
                        .any(|asked| matches!(asked, Question::File(file) if file == dependency))
                {
                    wanted.push(Question::File(dependency.clone()));
                }
            }
            known.push(name);
            files.push(file);
        }
        wanted.retain(|asked| !matches!(asked, Question::File(file) if known.contains(file)));
    }
    let mut pool = DescriptorPool::new();
    let descriptors = files
        .iter()
        .map(|file| prost_reflect::prost_types::FileDescriptorProto::decode(&file[..]))
        .collect::<Result<Vec<_>, _>>()
        .context("a file descriptor that does not decode")?;
    pool.add_file_descriptor_protos(descriptors)
        .context("the server's files do not make a schema")?;
    Ok(pool)
}

/// Runs hyper's connection tasks on the thread's local task set.
#[derive(Clone, Copy)]
struct Local;

impl<F: std::future::Future + 'static> hyper::rt::Executor<F> for Local {
    fn execute(&self, future: F) {
        tokio::task::spawn_local(future);
    }
}

/// What is asked of the reflection service.
enum Question {
    Symbol(String),
    File(String),
}

/// The reflection service is not there (at this version).
struct Unimplemented;

/// One ServerReflectionInfo call with one question: the files of the answer, or why none came.
async fn call(
    sender: &mut hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    scheme: &str,
    authority: &str,
    version: &str,
    question: &Question,
) -> Result<Result<Vec<Vec<u8>>>, Unimplemented> {
    let request = match question {
        Question::Symbol(symbol) => ReflectionRequest {
            file_containing_symbol: Some(symbol.clone()),
            ..ReflectionRequest::default()
        },
        Question::File(file) => ReflectionRequest {
            file_by_filename: Some(file.clone()),
            ..ReflectionRequest::default()
        },
    };
    let mut body = Vec::new();
    write_prefix(&mut body, request.encoded_len());
    request.encode(&mut body).expect("a Vec grows");
    let uri = format!(
        "{scheme}://{authority}/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo"
    );
    let http_request = match hyper::Request::post(uri)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(Bytes::from(body)))
    {
        Ok(request) => request,
        Err(error) => return Ok(Err(anyhow!("cannot build the request: {error}"))),
    };
    let response = match sender.send_request(http_request).await {
        Ok(response) => response,
        Err(error) => return Ok(Err(anyhow!("the request failed: {error}"))),
    };
    let status = response.status();
    // A Trailers-Only answer (an error at once) has its status among the headers.
    let early_status = response
        .headers()
        .get("grpc-status")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let collected = match Limited::new(response.into_body(), MAX_ANSWER)
        .collect()
        .await
    {
        Ok(collected) => collected,
        Err(error) => return Ok(Err(anyhow!("the answer could not be read: {error}"))),
    };
    let grpc_status = collected
        .trailers()
        .and_then(|trailers| trailers.get("grpc-status"))
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .or(early_status);
    let bytes = collected.to_bytes();
    match grpc_status.as_deref() {
        Some("12") => return Err(Unimplemented),
        Some("0") if status == hyper::StatusCode::OK => {}
        other => {
            return Ok(Err(anyhow!(
                "HTTP status {status}, grpc-status {}",
                other.unwrap_or("none")
            )))
        }
    }
    Ok(files_of(&bytes))
}

/// The files in the messages of `body`.
fn files_of(mut body: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut files = Vec::new();
    while !body.is_empty() {
        let Some(prefix) = body.first_chunk::<PREFIX_LEN>() else {
            bail!("an answer cut inside a message prefix");
        };
        let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
        if prefix[0] != 0 || body.len() < PREFIX_LEN + len {
            bail!("an answer that is not a sequence of uncompressed messages");
        }
        let response = ReflectionResponse::decode(&body[PREFIX_LEN..PREFIX_LEN + len])
            .context("an answer that is not a ServerReflectionResponse")?;
        if let Some(error) = response.error_response {
            bail!(
                "the server answered error {}: {}",
                error.error_code,
                error.error_message
            );
        }
        if let Some(found) = response.file_descriptor_response {
            files.extend(found.file_descriptor_proto);
        }
        body = &body[PREFIX_LEN + len..];
    }
    Ok(files)
}
