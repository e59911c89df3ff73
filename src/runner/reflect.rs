//! `--grpc-reflect`: a service's schema asked of the server itself, through its reflection service
//! (`grpc.reflection.v1`, else `v1alpha`, which older servers such as grpcio's serve alone), once,
//! before the run. It connects as the cell would (`net::establish`, the byte-stream arm of
//! `io::connect::Connector`: TCP, unix socket, proxy, TLS) and speaks HTTP/2 with hyper's client:
//! this is one exchange of setup, not load, so the engine's sessions are not needed. The files
//! come back as `FileDescriptorProto`s, which the plan builds its descriptor pool from.
//!
//! What a server answers is bounded as a file read is: [`MAX_ANSWER`] bytes in all the answers
//! together, [`MAX_FILES`] files, [`MAX_DEPENDENCIES`] imports named; the files are gathered in
//! time linear in their size (sets, not searches of lists), and the whole exchange ends at its
//! deadline whatever the server sends (bytes trickled, answers without end).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::rt::TokioIo;
use prost::Message;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::DescriptorPool;

use crate::io::net;
use crate::plan::RunPlan;
use crate::proto::grpc::{write_prefix, PREFIX_LEN};

/// The most the reflection answers may hold together (a service's files and their imports: the
/// largest public schemas take a few MiB).
pub(crate) const MAX_ANSWER: usize = 16 << 20;
/// Files gathered, at most (a service and everything it imports).
pub(crate) const MAX_FILES: usize = 1000;
/// Imports the files may name, all together.
pub(crate) const MAX_DEPENDENCIES: usize = 10_000;
/// How long the whole exchange may take, on top of connecting, without `--request-timeout`.
pub(crate) const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

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
pub(crate) fn fetch(plan: &RunPlan, service: &str) -> Result<DescriptorPool> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime for --grpc-reflect")?;
    let limit = plan.timeouts.connect.unwrap_or_default()
        + plan.timeouts.request.unwrap_or(EXCHANGE_TIMEOUT);
    let started = Instant::now();
    // The connection is this thread's own (`net::Transport` is not `Send`): a local task set.
    tokio::task::LocalSet::new()
        .block_on(&runtime, async {
            tokio::time::timeout(limit, ask(plan, service))
                .await
                .map_err(|_| {
                    anyhow!(
                        "no complete answer within {:.1} s",
                        started.elapsed().as_secs_f64()
                    )
                })?
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
    // Windows above the cap: a server never waits on them, and the cap stops it first.
    let window = 2 * MAX_ANSWER as u32;
    let (mut sender, connection) = hyper::client::conn::http2::Builder::new(Local)
        .initial_stream_window_size(window)
        .initial_connection_window_size(window)
        .handshake(TokioIo::new(established.transport))
        .await
        .context("the HTTP/2 handshake failed")?;
    tokio::task::spawn_local(connection);
    let scheme = if plan.tls.is_some() { "https" } else { "http" };
    let authority = &plan.destination.authority;
    let mut version = "v1";
    let mut gathered = Gathered::new(service);
    while let Some(question) = gathered.next_question() {
        let room = gathered.room();
        let answer = match call(&mut sender, scheme, authority, version, &question, room).await {
            Err(Unimplemented) if version == "v1" => {
                version = "v1alpha";
                call(&mut sender, scheme, authority, version, &question, room).await
            }
            other => other,
        };
        let answer = answer.map_err(|Unimplemented| {
            anyhow!("the server has no reflection service (UNIMPLEMENTED)")
        })??;
        gathered.take(&answer)?;
    }
    gathered.pool()
}

/// The files answered so far and the questions still to ask: each file's imports are asked for
/// until every file named is known.
pub(crate) struct Gathered {
    descriptors: Vec<FileDescriptorProto>,
    /// The names of the files gathered.
    known: HashSet<String>,
    /// The names of the files asked for or to ask for.
    asked: HashSet<String>,
    wanted: Vec<Question>,
    /// The bytes of the answers so far.
    bytes: usize,
    dependencies: usize,
}

impl Gathered {
    /// Before the first question: the file that declares `service`.
    pub(crate) fn new(service: &str) -> Gathered {
        Gathered {
            descriptors: Vec::new(),
            known: HashSet::new(),
            asked: HashSet::new(),
            wanted: vec![Question::Symbol(service.to_owned())],
            bytes: 0,
            dependencies: 0,
        }
    }

    /// The next question, skipping files an earlier answer brought.
    fn next_question(&mut self) -> Option<Question> {
        while let Some(question) = self.wanted.pop() {
            match &question {
                Question::File(file) if self.known.contains(file) => {}
                _ => return Some(question),
            }
        }
        None
    }

    /// The bytes the next answer may hold.
    fn room(&self) -> usize {
        MAX_ANSWER - self.bytes
    }

    /// Takes the body of one answer (its messages, each with its prefix).
    pub(crate) fn take(&mut self, body: &[u8]) -> Result<()> {
        self.bytes += body.len();
        if self.bytes > MAX_ANSWER {
            bail!("the answers hold more than {} MiB", MAX_ANSWER >> 20);
        }
        for file in files_of(body)? {
            // Counted before decoding: a million names decoded hold several times their bytes.
            self.dependencies += imports_in(&file)?;
            if self.dependencies > MAX_DEPENDENCIES {
                bail!("the files name more than {MAX_DEPENDENCIES} imports");
            }
            let descriptor = FileDescriptorProto::decode(&file[..])
                .context("a file descriptor that does not decode")?;
            refuse_unknown_syntax(&descriptor)?;
            if self.known.contains(descriptor.name()) {
                continue;
            }
            if self.known.len() >= MAX_FILES {
                bail!("more than {MAX_FILES} files");
            }
            for dependency in &descriptor.dependency {
                if !self.known.contains(dependency) && self.asked.insert(dependency.clone()) {
                    self.wanted.push(Question::File(dependency.clone()));
                }
            }
            self.known.insert(descriptor.name().to_owned());
            self.descriptors.push(descriptor);
        }
        Ok(())
    }

    /// The schema the files make.
    pub(crate) fn pool(self) -> Result<DescriptorPool> {
        refuse_import_cycles(&self.descriptors)?;
        let mut pool = DescriptorPool::new();
        pool.add_file_descriptor_protos(self.descriptors)
            .context("the server's files do not make a schema")?;
        Ok(pool)
    }
}

/// Refuses a file whose `syntax` is neither proto2 nor proto3 (protobuf editions declare
/// "editions"): prost-reflect reads no other, and names the error by indexing a file it has not
/// yet stored, which panics (a 12-byte answer did, found by fuzzing).
fn refuse_unknown_syntax(descriptor: &FileDescriptorProto) -> Result<()> {
    match descriptor.syntax.as_deref() {
        None | Some("proto2" | "proto3") => Ok(()),
        Some(syntax) => bail!(
            "the server's file '{}' declares syntax '{}': only proto2 and proto3 files can be read",
            crate::error::peer_text(descriptor.name().as_bytes()),
            crate::error::peer_text(syntax.as_bytes())
        ),
    }
}

/// Refuses files that import themselves, directly or through others: prost-reflect follows a
/// file's imports by recursion and would overflow the stack on a cycle (a server's answer of 21
/// bytes did, found by fuzzing). Imports of files not among them are left to prost-reflect to
/// name. Kahn's order, in time linear in the files and imports.
fn refuse_import_cycles(descriptors: &[FileDescriptorProto]) -> Result<()> {
    let index: HashMap<&str, usize> = descriptors
        .iter()
        .enumerate()
        .map(|(at, file)| (file.name(), at))
        .collect();
    let mut waiting_on = vec![0usize; descriptors.len()];
    let mut importers: Vec<Vec<usize>> = vec![Vec::new(); descriptors.len()];
    for (at, file) in descriptors.iter().enumerate() {
        for imported in file
            .dependency
            .iter()
            .filter_map(|name| index.get(name.as_str()))
        {
            waiting_on[at] += 1;
            importers[*imported].push(at);
        }
    }
    let mut ready: Vec<usize> = (0..descriptors.len())
        .filter(|&at| waiting_on[at] == 0)
        .collect();
    let mut ordered = 0;
    while let Some(at) = ready.pop() {
        ordered += 1;
        for &importer in &importers[at] {
            waiting_on[importer] -= 1;
            if waiting_on[importer] == 0 {
                ready.push(importer);
            }
        }
    }
    if let Some(at) = (0..descriptors.len()).find(|&at| waiting_on[at] > 0) {
        bail!(
            "the server's files import each other in a cycle ('{}' is in one or needs one)",
            crate::error::peer_text(descriptors[at].name().as_bytes())
        );
    }
    debug_assert_eq!(ordered, descriptors.len());
    Ok(())
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
    room: usize,
) -> Result<Result<Bytes>, Unimplemented> {
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
    let collected = match Limited::new(response.into_body(), room).collect().await {
        Ok(collected) => collected,
        Err(error) if error.is::<LengthLimitError>() => {
            return Ok(Err(anyhow!(
                "the answers hold more than {} MiB",
                MAX_ANSWER >> 20
            )))
        }
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
    Ok(Ok(bytes))
}

/// The imports (`dependency`, field 3) an encoded `FileDescriptorProto` names, read from the
/// wire format's top level without decoding.
fn imports_in(mut file: &[u8]) -> Result<usize> {
    let mut imports = 0;
    while !file.is_empty() {
        let key = prost::encoding::decode_varint(&mut file)
            .context("a file descriptor that does not decode")?;
        let skip = match key & 7 {
            0 => {
                prost::encoding::decode_varint(&mut file)
                    .context("a file descriptor that does not decode")?;
                0
            }
            1 => 8,
            2 => {
                imports += usize::from(key >> 3 == 3);
                let len = prost::encoding::decode_varint(&mut file)
                    .context("a file descriptor that does not decode")?;
                usize::try_from(len).unwrap_or(usize::MAX)
            }
            5 => 4,
            _ => bail!("a file descriptor that does not decode"),
        };
        if skip > file.len() {
            bail!("a file descriptor that does not decode");
        }
        file = &file[skip..];
    }
    Ok(imports)
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
            // Counted before decoding: 200,000 files in one answer must not be decoded first.
            if files.len() > MAX_FILES {
                bail!("more than {MAX_FILES} files");
            }
        }
        body = &body[PREFIX_LEN + len..];
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer (one message) holding `files`.
    fn answer(files: Vec<FileDescriptorProto>) -> Vec<u8> {
        let response = ReflectionResponse {
            file_descriptor_response: Some(FileDescriptors {
                file_descriptor_proto: files.iter().map(Message::encode_to_vec).collect(),
            }),
            error_response: None,
        };
        let mut body = Vec::new();
        write_prefix(&mut body, response.encoded_len());
        response.encode(&mut body).unwrap();
        body
    }

    fn file(name: &str, dependency: Vec<String>) -> FileDescriptorProto {
        FileDescriptorProto {
            name: Some(name.to_owned()),
            dependency,
            ..FileDescriptorProto::default()
        }
    }

    #[test]
    fn a_chain_of_imports_is_asked_for_file_by_file() {
        let mut gathered = Gathered::new("t.S");
        let mut asked = 0;
        while let Some(question) = gathered.next_question() {
            asked += 1;
            let index = match question {
                Question::Symbol(_) => 0,
                Question::File(name) => name[1..].parse::<usize>().unwrap(),
            };
            let imports = (index + 1 < MAX_FILES)
                .then(|| format!("f{}", index + 1))
                .into_iter()
                .collect();
            gathered
                .take(&answer(vec![file(&format!("f{index}"), imports)]))
                .unwrap();
        }
        assert_eq!(asked, MAX_FILES);
        assert_eq!(gathered.pool().unwrap().files().len(), MAX_FILES);
    }

    /// Files that import themselves, or each other in a ring, are refused before prost-reflect
    /// sees them: it would recurse forever. The first case is the fuzzer's (a file named "" that
    /// imports "").
    #[test]
    fn files_that_import_each_other_in_a_cycle_are_refused() {
        let fuzzed = [
            0x0, 0x0, 0x0, 0x0, 0x10, 0x18, 0x18, 0x18, 0xfc, 0xe7, 0xe7, 0xe7, 0x18, 0x22, 0x6,
            0xa, 0x4, 0x1a, 0x0, 0x50, 0x0,
        ];
        let ring = answer(vec![
            file("a", vec!["b".into()]),
            file("b", vec!["c".into()]),
            file("c", vec!["a".into()]),
            file("d", vec![]),
        ]);
        for body in [&fuzzed[..], &ring] {
            let mut gathered = Gathered::new("t.S");
            gathered.take(body).unwrap();
            let error = gathered.pool().unwrap_err().to_string();
            assert!(
                error.starts_with("the server's files import each other in a cycle"),
                "{error}"
            );
        }
        let diamond = answer(vec![
            file("top", vec!["left".into(), "right".into()]),
            file("left", vec!["base".into()]),
            file("right", vec!["base".into()]),
            file("base", vec![]),
        ]);
        let mut gathered = Gathered::new("t.S");
        gathered.take(&diamond).unwrap();
        assert_eq!(gathered.pool().unwrap().files().len(), 4);
    }

    #[test]
    fn files_of_a_syntax_other_than_proto2_or_proto3_are_refused() {
        // A file named "" of syntax "": prost-reflect's error for it panicked.
        let fuzzed = [0, 0, 0, 0, 7, 0xa2, 0, 4, 0xa, 2, 0x62, 0];
        let editions = answer(vec![FileDescriptorProto {
            syntax: Some("editions".into()),
            ..file("e.proto", vec![])
        }]);
        for (body, named) in [
            (&fuzzed[..], "'' declares syntax ''"),
            (&editions, "'e.proto' declares syntax 'editions'"),
        ] {
            let error = Gathered::new("t.S").take(body).unwrap_err().to_string();
            assert_eq!(
                error,
                format!("the server's file {named}: only proto2 and proto3 files can be read")
            );
        }
        for syntax in [None, Some("proto2"), Some("proto3")] {
            let body = answer(vec![FileDescriptorProto {
                syntax: syntax.map(str::to_owned),
                ..file("ok.proto", vec![])
            }]);
            let mut gathered = Gathered::new("t.S");
            gathered.take(&body).unwrap();
            assert_eq!(gathered.pool().unwrap().files().len(), 1, "{syntax:?}");
        }
    }

    #[test]
    fn huge_answers_are_refused_in_linear_time() {
        let started = Instant::now();
        let many_files = answer(
            (0..200_000)
                .map(|i| file(&format!("f{i}"), vec![]))
                .collect(),
        );
        let error = Gathered::new("t.S").take(&many_files).unwrap_err();
        assert_eq!(error.to_string(), format!("more than {MAX_FILES} files"));
        let imports = (0..1_000_000).map(|i| format!("d{i}")).collect();
        let many_imports = answer(vec![file("a", imports)]);
        let error = Gathered::new("t.S").take(&many_imports).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("the files name more than {MAX_DEPENDENCIES} imports")
        );
        let mut gathered = Gathered::new("t.S");
        let padded = answer(vec![FileDescriptorProto {
            package: Some("p".repeat(MAX_ANSWER / 2)),
            ..file("a", vec![])
        }]);
        gathered.take(&padded).unwrap();
        let error = gathered.take(&padded).unwrap_err();
        assert_eq!(error.to_string(), "the answers hold more than 16 MiB");
        // Quadratic work on these would take minutes; linear takes well under a second, even
        // unoptimized on a busy machine.
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }
}
