//! The target's routes and response bodies.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;

use super::echo::{Echo, EchoBudget};
use super::events::{EventStream, Framing, Schedule};
use super::grpc_last::LastMessage;
use super::GrpcReply;
use crate::plan::template::Rng;
use crate::time::sleep_precisely;

/// The header of every delayed response: the delay the target applied, in whole microseconds
/// (`--delay` and `/delay/MS` together, as measured around the sleeps), so tests need not trust
/// the timer.
const DELAY_APPLIED: HeaderName = HeaderName::from_static("x-delay-applied-us");

/// Bytes served by `/bytes/N`, sliced without copying.
static FILLER: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// How the target misbehaves on purpose.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// Every response waits this long.
    pub delay: Option<Duration>,
    /// Periodic stalls: nothing is answered during them.
    pub stall: Option<Stall>,
    /// Periodic slow spells: every other period, every response waits longer.
    pub slow: Option<Slow>,
    /// Keep every delayed request's timing here (tests pair them with the client's log).
    pub applied: Option<Arc<AppliedDelays>>,
    /// How a gRPC call is answered.
    pub grpc_reply: GrpcReply,
}

/// How the target timed one delayed request.
#[derive(Debug, Clone, Copy)]
pub struct Applied {
    /// When its answer began to be decided: the request had been read.
    pub received: SystemTime,
    /// The delay applied, as measured around the sleeps.
    pub slept: Duration,
    /// When its answer was decided, right before it is written.
    pub answered: SystemTime,
}

/// The delayed requests' timings, in the order their answers were decided: with one connection,
/// the order of its requests.
#[derive(Debug, Default)]
pub struct AppliedDelays(Mutex<Vec<Applied>>);

impl AppliedDelays {
    /// The timings so far.
    pub fn taken(&self) -> Vec<Applied> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn push(&self, applied: Applied) {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(applied);
    }
}

/// A stall of `length` at the end of every `every`, counted from `epoch` (the target's start):
/// requests that arrive during one are answered when it ends.
#[derive(Debug, Clone, Copy)]
pub struct Stall {
    /// Period of the stalls.
    pub every: Duration,
    /// Length of each stall.
    pub length: Duration,
    /// When the first period began.
    pub epoch: Instant,
}

impl Stall {
    /// How much of the current stall is left at `now`, if one is on.
    fn remaining(&self, now: Instant) -> Option<Duration> {
        let period = self.every.as_nanos().max(1);
        let phase = now.saturating_duration_since(self.epoch).as_nanos() % period;
        let stall_from = period.saturating_sub(self.length.as_nanos());
        (phase >= stall_from).then(|| Duration::from_nanos((period - phase) as u64))
    }
}

/// Every other `every` counted from `epoch` (the second, the fourth, …), every response waits `by`
/// longer: a server whose service time changes over time (a noisy neighbour, a collector), so
/// its capacity alternates between two values.
#[derive(Debug, Clone, Copy)]
pub struct Slow {
    /// Length of each spell, slow or not.
    pub(crate) every: Duration,
    /// The extra wait of a response decided during a slow spell.
    pub(crate) by: Duration,
    /// When the first (fast) spell began.
    pub(crate) epoch: Instant,
}

impl Slow {
    /// The extra wait of a response decided at `now`: `by` in a slow spell, none otherwise.
    fn extra(&self, now: Instant) -> Option<Duration> {
        let spell =
            now.saturating_duration_since(self.epoch).as_nanos() / self.every.as_nanos().max(1);
        (spell % 2 == 1).then_some(self.by)
    }
}

/// Answers one HTTP/1.1 or HTTP/2 request (hyper), after the target's delay and any stall in
/// progress; `/echo` within `echo`'s budget.
pub(super) async fn route(
    request: Request<Incoming>,
    behaviour: Behaviour,
    echo: &EchoBudget,
) -> Result<Response<TargetBody>, Infallible> {
    // A gRPC call, whatever its method's path, is answered as `POST /echo` (the delay and
    // stalls included): every message comes back as it arrives, or only the last once the call
    // has ended (`--grpc-reply last`), then `grpc-status: 0`.
    let grpc = request.method() == Method::POST
        && request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"));
    let path = if grpc { "/echo" } else { request.uri().path() };
    let Answer { head, reply } = decide(request.method(), path, &behaviour).await;
    let content_type = match &reply {
        Reply::Events(stream) => Some(stream.content_type()),
        _ => None,
    };
    let body = match reply {
        Reply::Events(stream) => TargetBody::Events(Box::new(stream.schedule(Instant::now()))),
        Reply::Static(bytes) => TargetBody::Static(bytes),
        Reply::Filler(left) => TargetBody::Filler { left },
        Reply::Echo if grpc => match behaviour.grpc_reply {
            GrpcReply::Echo => TargetBody::GrpcEcho {
                echo: Echo::new(request.into_body(), echo),
                trailers: true,
            },
            GrpcReply::Last => TargetBody::GrpcLast(Box::new(LastMessage::new(Echo::new(
                request.into_body(),
                echo,
            )))),
        },
        Reply::Echo => TargetBody::Echo(Echo::new(request.into_body(), echo)),
    };
    let mut response = head.response(body);
    let content_type = content_type.or(grpc.then(|| HeaderValue::from_static("application/grpc")));
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, content_type);
    }
    Ok(response)
}

/// What the target answers to a request, decided once for every front end (hyper for HTTP/1.1
/// and HTTP/2, h3 for HTTP/3), which then send the body their own way.
pub(super) struct Answer {
    /// The status and headers.
    pub(super) head: Head,
    /// The body to send.
    pub(super) reply: Reply,
}

/// The status and headers of an [`Answer`].
pub(super) struct Head {
    status: StatusCode,
    /// The delay applied (`--delay` and `/delay/MS`), for the `x-delay-applied-us` header.
    applied: Option<Duration>,
}

/// The body of an [`Answer`].
pub(super) enum Reply {
    /// A fixed body (or none).
    Static(Option<Bytes>),
    /// This many filler bytes ([`filler_chunk`]).
    Filler(u64),
    /// The request's own body.
    Echo,
    /// Events on a schedule (`/sse/…`, `/ndjson/…`).
    Events(EventStream),
}

impl Head {
    /// The response with `body`: the status and the `x-delay-applied-us` header.
    pub(super) fn response<B>(&self, body: B) -> Response<B> {
        let mut response = Response::new(body);
        *response.status_mut() = self.status;
        if let Some(applied) = self.applied {
            let micros = u64::try_from(applied.as_micros()).unwrap_or(u64::MAX);
            response
                .headers_mut()
                .insert(DELAY_APPLIED, HeaderValue::from(micros));
        }
        response
    }
}

/// The next slice of a filler body with `left` bytes to go (at most 64 KiB, never copied).
pub(super) fn filler_chunk(left: u64) -> Bytes {
    let take = left.min(FILLER.len() as u64) as usize;
    Bytes::from_static(&FILLER[..take])
}

/// Decides the answer to `method` on `path`, after the target's delay, a slow spell's extra wait
/// and any stall in progress (all slept here, so every front end behaves alike).
pub(super) async fn decide(method: &Method, path: &str, behaviour: &Behaviour) -> Answer {
    // Read only when kept: the target serves benchmarks too.
    let received = behaviour.applied.as_ref().map(|_| SystemTime::now());
    let mut applied = match behaviour.delay {
        Some(delay) => Some(sleep_precisely(delay).await),
        None => None,
    };
    if let Some(extra) = behaviour.slow.and_then(|slow| slow.extra(Instant::now())) {
        applied = Some(applied.unwrap_or_default() + sleep_precisely(extra).await);
    }
    if let Some(left) = behaviour
        .stall
        .and_then(|stall| stall.remaining(Instant::now()))
    {
        tokio::time::sleep(left).await;
    }
    let answer = answer(method, path, applied).await;
    if let (Some(record), Some(received), Some(slept)) =
        (&behaviour.applied, received, answer.head.applied)
    {
        record.push(Applied {
            received,
            slept,
            answered: SystemTime::now(),
        });
    }
    answer
}

/// The route's answer; `applied` is the delay already slept for `--delay`.
async fn answer(method: &Method, path: &str, mut applied: Option<Duration>) -> Answer {
    let mut segments = path.trim_start_matches('/').splitn(2, '/');
    let (status, reply) = match (method, segments.next(), segments.next()) {
        (_, Some("" | "ping"), None) => text(StatusCode::OK, "pong"),
        (_, Some("bytes"), Some(count)) => match count.parse::<u64>() {
            Ok(count) => (StatusCode::OK, Reply::Filler(count)),
            Err(_) => text(StatusCode::BAD_REQUEST, "/bytes/N takes a byte count"),
        },
        (_, Some("delay"), Some(millis)) => match parse_millis(millis) {
            Some(delay) => {
                let slept = sleep_precisely(delay).await;
                applied = Some(applied.unwrap_or_default() + slept);
                text(StatusCode::OK, "pong")
            }
            None => text(
                StatusCode::BAD_REQUEST,
                "/delay/MS takes milliseconds, at most 2592000000 (30 days; decimals allowed: /delay/0.25)",
            ),
        },
        (_, Some("exp"), Some(millis)) => match parse_millis(millis) {
            Some(mean) => {
                let slept = sleep_precisely(exponential_delay(mean)).await;
                applied = Some(applied.unwrap_or_default() + slept);
                text(StatusCode::OK, "pong")
            }
            None => text(
                StatusCode::BAD_REQUEST,
                "/exp/MS takes the mean delay in milliseconds, at most 2592000000 (decimals allowed: /exp/0.5)",
            ),
        },
        (_, Some("status"), Some(code)) => match code
            .parse::<u16>()
            .ok()
            .filter(|code| (200..600).contains(code))
        {
            Some(code) => (
                StatusCode::from_u16(code).expect("range checked"),
                Reply::Static(None),
            ),
            None => text(
                StatusCode::BAD_REQUEST,
                "/status/CODE takes a status from 200 to 599",
            ),
        },
        (_, Some(route @ ("sse" | "ndjson")), Some(rest)) => {
            let framing = match route {
                "sse" => Framing::Sse,
                _ => Framing::Ndjson,
            };
            match EventStream::parse(framing, rest) {
                Ok(stream) => (StatusCode::OK, Reply::Events(stream)),
                Err(usage) => text(StatusCode::BAD_REQUEST, usage),
            }
        }
        (&Method::POST, Some("echo"), None) => (StatusCode::OK, Reply::Echo),
        (_, Some("echo"), None) => text(StatusCode::METHOD_NOT_ALLOWED, "POST a body to /echo"),
        _ => text(StatusCode::NOT_FOUND, "not found"),
    };
    Answer {
        head: Head { status, applied },
        reply,
    }
}

/// The longest `/delay/MS`: 30 days, as `serve --delay` (a deadline further away would overflow
/// the clock's `Instant`, and no benchmark waits longer).
const MAX_DELAY: Duration = Duration::from_secs(30 * 86_400);

/// The `/exp/MS` requests answered so far: the k-th draws the k-th delay of one seeded sequence,
/// so a fresh target gives the same delays in the same order.
static EXP_DRAWS: AtomicU64 = AtomicU64::new(0);

/// The next `/exp/MS` delay: exponential with mean `mean` (its p-quantile is −mean·ln(1 − p)),
/// at most [`MAX_DELAY`].
fn exponential_delay(mean: Duration) -> Duration {
    let draw = EXP_DRAWS.fetch_add(1, Ordering::Relaxed);
    let word = Rng::for_request(EXP_SEED, draw, 0).next_u64();
    // A uniform in (0, 1]: never 0, whose logarithm is infinite.
    let uniform = ((word >> 11) + 1) as f64 / (1u64 << 53) as f64;
    Duration::try_from_secs_f64(-mean.as_secs_f64() * uniform.ln())
        .map_or(MAX_DELAY, |delay| delay.min(MAX_DELAY))
}

/// The seed of `/exp/MS`'s delays.
const EXP_SEED: u64 = 0x6578_705f_6465_6c61;

/// A `/delay/MS` argument: milliseconds, decimals allowed (sub-millisecond delays are precise),
/// at most [`MAX_DELAY`].
fn parse_millis(text: &str) -> Option<Duration> {
    let millis = text.parse::<f64>().ok()?;
    Duration::try_from_secs_f64(millis / 1000.0)
        .ok()
        .filter(|delay| *delay <= MAX_DELAY)
}

fn text(status: StatusCode, body: &'static str) -> (StatusCode, Reply) {
    (
        status,
        Reply::Static(Some(Bytes::from_static(body.as_bytes()))),
    )
}

/// Response bodies of the target, without boxing.
pub(super) enum TargetBody {
    /// A fixed body (or none).
    Static(Option<Bytes>),
    /// `left` filler bytes, sent in 64 KiB slices of a static buffer.
    Filler { left: u64 },
    /// The request's own body.
    Echo(Echo),
    /// A gRPC call's messages echoed, then its trailers (`trailers`: not sent yet).
    GrpcEcho { echo: Echo, trailers: bool },
    /// A gRPC call's last message once it has ended, then its trailers.
    GrpcLast(Box<LastMessage>),
    /// Events, each when its time comes.
    Events(Box<Schedule>),
}

impl Body for TargetBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            TargetBody::Static(bytes) => {
                Poll::Ready(bytes.take().map(|bytes| Ok(Frame::data(bytes))))
            }
            TargetBody::Filler { left } => {
                if *left == 0 {
                    return Poll::Ready(None);
                }
                let chunk = filler_chunk(*left);
                *left -= chunk.len() as u64;
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
            TargetBody::Echo(incoming) => Pin::new(incoming).poll_frame(cx),
            TargetBody::GrpcEcho { echo, trailers } => {
                match std::task::ready!(Pin::new(echo).poll_frame(cx)) {
                    None if std::mem::take(trailers) => {
                        let mut fields = http::HeaderMap::new();
                        fields.insert("grpc-status", HeaderValue::from_static("0"));
                        Poll::Ready(Some(Ok(Frame::trailers(fields))))
                    }
                    other => Poll::Ready(other),
                }
            }
            TargetBody::GrpcLast(last) => Pin::new(last.as_mut()).poll_frame(cx),
            TargetBody::Events(schedule) => schedule
                .poll_next(cx)
                .map(|event| event.map(|bytes| Ok(Frame::data(bytes)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            TargetBody::Static(bytes) => bytes.is_none(),
            TargetBody::Filler { left } => *left == 0,
            TargetBody::Echo(incoming) => incoming.is_end_stream(),
            TargetBody::GrpcEcho { trailers, .. } => !trailers,
            TargetBody::GrpcLast(last) => last.is_end_stream(),
            TargetBody::Events(schedule) => schedule.left() == 0,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            TargetBody::Static(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            TargetBody::Filler { left } => SizeHint::with_exact(*left),
            TargetBody::Echo(incoming) => incoming.size_hint(),
            TargetBody::GrpcEcho { echo, .. } => echo.size_hint(),
            TargetBody::GrpcLast(_) | TargetBody::Events(_) => SizeHint::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_beyond_30_days_or_not_a_duration_are_refused() {
        assert_eq!(parse_millis("0.25"), Some(Duration::from_micros(250)));
        assert_eq!(parse_millis("2592000000"), Some(MAX_DELAY));
        for text in ["2592000001", "1e22", "-1", "inf", "NaN", ""] {
            assert_eq!(parse_millis(text), None, "{text}");
        }
    }

    #[test]
    fn exponential_delays_have_their_mean_and_quantiles() {
        let mean = Duration::from_millis(10);
        let mut delays: Vec<f64> = (0..100_000)
            .map(|_| exponential_delay(mean).as_secs_f64() * 1e3)
            .collect();
        delays.sort_by(f64::total_cmp);
        let average = delays.iter().sum::<f64>() / delays.len() as f64;
        // The mean of 100,000 draws has an sd of 10 ms / √100,000 = 0.03 ms.
        assert!((average - 10.0).abs() < 0.15, "mean {average} ms");
        // p50 = 10 ln 2, p99 = 10 ln 100: rank sds of 158 and 31 draws.
        let p50 = delays[50_000];
        let p99 = delays[99_000];
        assert!((p50 - 6.931).abs() < 0.1, "p50 {p50} ms");
        assert!((p99 - 46.05).abs() < 1.6, "p99 {p99} ms");
    }

    #[test]
    fn every_other_spell_is_slow() {
        let epoch = Instant::now();
        let slow = Slow {
            every: Duration::from_secs(1),
            by: Duration::from_millis(5),
            epoch,
        };
        let at = |ms: u64| slow.extra(epoch + Duration::from_millis(ms));
        for fast in [0, 999, 2_000, 2_999, 4_500] {
            assert_eq!(at(fast), None, "{fast} ms");
        }
        for slowed in [1_000, 1_999, 3_000, 5_250] {
            assert_eq!(at(slowed), Some(Duration::from_millis(5)), "{slowed} ms");
        }
    }

    #[test]
    fn a_route_answered_in_a_slow_spell_waits_longer_and_says_so() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let spell = Duration::from_secs(3600);
        let behaviour = |epoch: Instant| Behaviour {
            delay: Some(Duration::from_millis(1)),
            slow: Some(Slow {
                every: spell,
                by: Duration::from_millis(20),
                epoch,
            }),
            ..Behaviour::default()
        };
        let now = Instant::now();
        // Within the first (fast) hour: the --delay alone; within the second: 20 ms more, on
        // `/delay/MS` too, and the header counts both.
        let applied = |epoch: Instant, path: &str| {
            let answer = runtime.block_on(decide(&Method::GET, path, &behaviour(epoch)));
            assert_eq!(answer.head.status, StatusCode::OK);
            answer.head.applied.unwrap()
        };
        let fast = applied(now, "/ping");
        assert!(
            (Duration::from_millis(1)..Duration::from_millis(15)).contains(&fast),
            "{fast:?}"
        );
        let slowed = applied(now - spell - Duration::from_secs(1), "/ping");
        assert!(
            (Duration::from_millis(21)..Duration::from_millis(40)).contains(&slowed),
            "{slowed:?}"
        );
        let delayed = applied(now - spell, "/delay/2");
        assert!(
            (Duration::from_millis(23)..Duration::from_millis(45)).contains(&delayed),
            "{delayed:?}"
        );
    }

    #[test]
    fn stalls_come_at_the_end_of_each_period() {
        let epoch = Instant::now();
        let stall = Stall {
            every: Duration::from_secs(5),
            length: Duration::from_secs(1),
            epoch,
        };
        let at = |ms: u64| stall.remaining(epoch + Duration::from_millis(ms));
        assert_eq!(at(0), None);
        assert_eq!(at(3_999), None);
        assert_eq!(at(4_000), Some(Duration::from_secs(1)));
        assert_eq!(at(4_750), Some(Duration::from_millis(250)));
        assert_eq!(at(5_000), None);
        assert_eq!(at(9_500), Some(Duration::from_millis(500)));
    }
}
