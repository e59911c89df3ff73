//! Why a run failed, in plain words with the fix: the cause the text report leads with (right
//! after the banner) and the JSON carries as the cell's `cause`.
//!
//! A run *failed* when no request succeeded, or when most of its requests did not (more than half
//! of `requests.total` failed). Its cause is the first of these that holds:
//!
//! 1. a failure that alone tells what is wrong (a [`Symptom`]): an HTTP/1.1 answer to the h2c
//!    preface, a TLS record in answer to cleartext, a refused connection, a certificate that did
//!    not verify;
//! 2. 4xx/5xx statuses on most requests: the first such status and the first bytes of its body;
//! 3. errors: the kind most requests failed with, what it means, and the first error's words.
//!
//! The busy-generator verdict is gated here too ([`generator_fair`]): a run that spent its time
//! failing says nothing about the generator's limit.

use super::{counted, Cause, Summary};
use crate::recorder::{ErrorKind, ErrorResponse, Symptom};

/// A share of finished requests that succeeded at or above which the busy-generator verdict may
/// be given: below it, the threads were busy failing (connecting again, parsing what the server
/// should not have sent), not measuring the server.
pub(crate) const GENERATOR_VERDICT_SUCCESS: f64 = 0.5;

/// What the run saw that a cause is built from, beyond the summary's counts.
pub(crate) struct Evidence<'a> {
    /// The first failure that showed a symptom, with its message.
    pub(crate) symptom: Option<&'a (Symptom, String)>,
    /// The first 4xx/5xx response and the first bytes of its body.
    pub(crate) error_response: Option<&'a ErrorResponse>,
}

/// Whether the busy-generator verdict may be given for a run of these counts: at least
/// [`GENERATOR_VERDICT_SUCCESS`] of its finished requests succeeded.
pub(crate) fn generator_fair(done: u64, succeeded: u64) -> bool {
    done > 0 && succeeded as f64 >= GENERATOR_VERDICT_SUCCESS * done as f64
}

/// The requests a cause counts against: `requests.total`, or more if more finished (a timed run).
fn total(summary: &Summary) -> u64 {
    let counters = &summary.requests.counters;
    summary
        .requests
        .total
        .max(counters.failed + counters.succeeded)
}

/// Whether the cell failed: none of its requests succeeded (a timed run that never connected
/// has none), or most of them failed.
pub(crate) fn failed(summary: &Summary) -> bool {
    let counters = &summary.requests.counters;
    let total = total(summary);
    let tried = total > 0 || summary.connections.failed > 0;
    tried && (counters.succeeded == 0 || 2 * counters.failed > total)
}

/// The cell's cause, `None` when it did not fail.
pub(crate) fn of(summary: &Summary, evidence: &Evidence<'_>) -> Option<Cause> {
    if !failed(summary) {
        return None;
    }
    let counters = &summary.requests.counters;
    let total = total(summary);
    if let Some((symptom, message)) = evidence.symptom {
        return Some(from_symptom(*symptom, message, summary));
    }
    let statuses = summary.status_codes.client_error + summary.status_codes.server_error;
    if 2 * statuses > total || (counters.succeeded == 0 && statuses >= counters.errored) {
        return Some(error_status(
            summary,
            statuses,
            total,
            evidence.error_response,
        ));
    }
    Some(errors(summary, total))
}

fn cause(kind: &str, text: String) -> Cause {
    Cause {
        kind: kind.to_owned(),
        text,
    }
}

fn from_symptom(symptom: Symptom, message: &str, summary: &Summary) -> Cause {
    match symptom {
        Symptom::Http1Only => cause(
            "http1_only",
            "the server speaks HTTP/1.1 only: use --h1 (or --proto h1), or --proto h2c-upgrade to offer h2c and fall back; it answered the HTTP/2 preface (h2c by prior knowledge, the default for http://) in HTTP/1.1".to_owned(),
        ),
        Symptom::TlsPort => {
            let url = summary.settings.urls.first().map_or(String::new(), |url| {
                format!(", as in {}", url.replacen("http://", "https://", 1))
            });
            cause(
                "tls_port",
                format!("this port speaks TLS: use https://{url} (it answered the cleartext request with a TLS record)"),
            )
        }
        Symptom::Refused => cause(
            "refused",
            format!("the server is down, or not on this port: nothing accepted the connection ({message}); start it, or check the URL's host and port"),
        ),
        Symptom::Certificate => cause(
            "certificate",
            format!("the server's certificate was refused: {message}"),
        ),
    }
}

fn error_status(
    summary: &Summary,
    statuses: u64,
    total: u64,
    first: Option<&ErrorResponse>,
) -> Cause {
    let how_many = match statuses >= total {
        true => "every request".to_owned(),
        false => format!(
            "{statuses} of {} ({:.1}%)",
            counted(total, "request"),
            percent(statuses, total)
        ),
    };
    let text = match first {
        Some(response) => {
            let codes = &summary.status_codes;
            let one_class = codes.client_error == 0 || codes.server_error == 0;
            let status = match one_class && statuses >= total {
                true => format!("status {}", response.status),
                false => format!("a 4xx/5xx status (the first: {})", response.status),
            };
            format!(
                "the server answered {how_many} with {status} ({})",
                body_words(&response.body)
            )
        }
        None => format!("the server answered {how_many} with a 4xx/5xx status"),
    };
    cause(
        "error_status",
        format!("{text}: check the URL, method, headers and body, or the server's log"),
    )
}

/// The first bytes of an error body as one readable line: control characters and runs of white
/// space become one space, and a body cut at [`crate::proto::ERROR_BODY_KEPT`] ends in `…`.
fn body_words(body: &[u8]) -> String {
    if body.is_empty() {
        return "its body was empty".to_owned();
    }
    let text = String::from_utf8_lossy(body);
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect();
    let cut = match body.len() >= crate::proto::ERROR_BODY_KEPT {
        true => "…",
        false => "",
    };
    // The words are the server's: what else could drive a terminal (a bidirectional override)
    // is escaped.
    let words = crate::error::peer_text(words.join(" ").as_bytes());
    format!("its body began \"{words}{cut}\"")
}

fn errors(summary: &Summary, total: u64) -> Cause {
    let requests = &summary.requests;
    // Requests never sent have no kind of their own: the connection attempts' failures are why.
    let by_requests = dominant(&summary.request_errors);
    let (mut kind, mut count) = match by_requests {
        Some((kind, count)) if count >= requests.never_sent => (kind, count),
        _ => match dominant(&summary.connection_errors) {
            Some((kind, _)) => (kind, requests.never_sent),
            None => (None, requests.never_sent),
        },
    };
    // Complete responses that failed a check are no request error, but may be most failures.
    let checks = summary
        .checks
        .as_ref()
        .filter(|checks| checks.failed > count);
    let mut first = summary.first_error.as_deref();
    if let Some(checks) = checks {
        (kind, count) = (Some(ErrorKind::Check), checks.failed);
        first = checks.first_mismatch.as_deref().or(first);
    }
    let failed = requests.counters.failed;
    let prefix = match requests.counters.succeeded {
        0 => "no request succeeded: ",
        _ => "",
    };
    let share = match total {
        // A timed run that never connected started no request: its connection attempts failed.
        0 => {
            let attempts = summary.connections.failed;
            (kind, count) = (
                dominant(&summary.connection_errors).and_then(|(kind, _)| kind),
                attempts,
            );
            format!(
                "no request was sent: {} failed",
                counted(attempts, "connection attempt")
            )
        }
        _ => format!(
            "{prefix}{failed} of {} ({:.1}%) failed",
            counted(total, "request"),
            percent(failed, total)
        ),
    };
    let failed = failed.max(count);
    let most = match kind {
        Some(kind) if count >= failed => {
            format!(" with {}, meaning {}", kind.name(), meaning(kind))
        }
        Some(kind) => format!(", {count} with {}, meaning {}", kind.name(), meaning(kind)),
        None if requests.in_flight_at_stop > 0 => {
            ", most still in flight when the run stopped".to_owned()
        }
        None => String::new(),
    };
    let first = first.map_or(String::new(), |first| {
        format!(" (the first error: {first})")
    });
    cause("errors", format!("{share}{most}{first}"))
}

/// The kind with the highest count, by name (`None` when none is above 0).
fn dominant(counts: &std::collections::BTreeMap<String, u64>) -> Option<(Option<ErrorKind>, u64)> {
    counts
        .iter()
        .filter(|(_, count)| **count > 0)
        .max_by_key(|(_, count)| **count)
        .map(|(name, count)| {
            let kind = ErrorKind::ALL.into_iter().find(|kind| kind.name() == name);
            (kind, *count)
        })
}

/// What an error kind means for the server, and what to look at.
fn meaning(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Connect => "no connection could be made (is the server up, and on this address?)",
        ErrorKind::ConnectTimeout => "connecting took longer than --connect-timeout (a server too busy to accept, or a firewall dropping the packets)",
        ErrorKind::TooManyOpenFiles => "h2load-rs ran out of file descriptors (raise `ulimit -n`, or use fewer connections)",
        ErrorKind::Proxy => "the --proxy refused the tunnel or answered badly",
        ErrorKind::Tls => "the TLS handshake failed",
        ErrorKind::Timeout => "no complete answer within the timeouts (a server too slow or stuck; see --request-timeout)",
        ErrorKind::Closed => "the server closed connections before answering (it may limit connections or requests per connection)",
        ErrorKind::Reset => "the server reset the connections (TCP RST; it crashed, is overloaded, or refuses the load)",
        ErrorKind::Goaway => "the server sent GOAWAY before processing them",
        ErrorKind::Refused => "the server refused the streams (REFUSED_STREAM) on every attempt, as an overloaded server does",
        ErrorKind::StreamReset => "the server reset the streams (RST_STREAM)",
        ErrorKind::Protocol => "the server's answers broke the protocol (or it speaks another one)",
        ErrorKind::Check => "the responses failed an --expect-* check",
        ErrorKind::GrpcStatusMissing => "the gRPC responses carried no grpc-status (is it a gRPC server, and the method's path right?)",
        ErrorKind::GrpcFraming => "the gRPC response bodies were not well-framed messages",
        ErrorKind::GrpcTooLarge => "a gRPC message was larger than --grpc-max-message",
        ErrorKind::GrpcCompressed => "a gRPC message was compressed with no grpc-encoding named",
        ErrorKind::GrpcInput => "some calls' --grpc-data did not encode as the method's input message, and were not sent (see the first error)",
        ErrorKind::EventTooLarge => "an event stream sent a line or an event longer than --max-event-size (a stream that never ends a line, or events larger than expected: raise the limit)",
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_verdict_needs_half_the_finished_requests_to_succeed() {
        assert!(!generator_fair(0, 0));
        assert!(!generator_fair(100, 49));
        assert!(generator_fair(100, 50));
        assert!(generator_fair(3, 3));
    }

    #[test]
    fn an_error_body_is_one_line_marked_when_cut() {
        assert_eq!(body_words(b""), "its body was empty");
        assert_eq!(
            body_words(b"<html>\r\n  <title>503</title>\n</html>"),
            "its body began \"<html> <title>503</title> </html>\""
        );
        let long = vec![b'x'; crate::proto::ERROR_BODY_KEPT];
        assert!(body_words(&long).ends_with("x…\""));
    }
}
