//! Closing idle and stuck connections (`serve --idle-timeout`). A connection goes after the
//! timeout when either
//! - no request was in progress and none began (idle: kept alive, PINGs only, a head that never
//!   completes), or
//! - no byte moved either way and no answer was being decided (stuck: a client that reads
//!   nothing, an upload that stopped); a request sleeping in `/delay` or a stall is not stuck.
//!
//! It is checked every quarter of the timeout, so a connection goes between 1 and 1.25 timeouts
//! after it fell quiet.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};

use super::watched::Watch;

/// Checks per timeout.
const TICKS: u32 = 4;

/// How long a connection told to close (GOAWAY for h2) may take to finish before it is dropped.
const GRACE: Duration = Duration::from_secs(1);

/// What one connection is doing, updated by its requests and its socket.
#[derive(Debug, Default)]
pub(super) struct Activity {
    /// Requests begun (monotonic).
    started: AtomicU64,
    /// Requests begun whose response body has not ended.
    in_progress: AtomicUsize,
    /// Requests whose answer is being decided (delays and stalls included).
    deciding: AtomicUsize,
    /// Reads and writes that moved bytes (monotonic).
    moved: AtomicU64,
}

/// A request in progress, until dropped (with the response body, or the request's task).
pub(super) struct InProgress(Arc<Activity>);

/// A request whose answer is being decided, until dropped.
pub(super) struct Deciding(Arc<Activity>);

impl Activity {
    /// Counts a request as begun and in progress until the guard goes.
    pub(super) fn begin(self: &Arc<Self>) -> InProgress {
        self.started.fetch_add(1, Ordering::Relaxed);
        self.in_progress.fetch_add(1, Ordering::Relaxed);
        InProgress(self.clone())
    }

    /// Counts a request as being decided until the guard goes.
    pub(super) fn deciding(self: &Arc<Self>) -> Deciding {
        self.deciding.fetch_add(1, Ordering::Relaxed);
        Deciding(self.clone())
    }

    /// Counts bytes moving on the connection.
    pub(super) fn moved(&self) {
        self.moved.fetch_add(1, Ordering::Relaxed);
    }

    fn reading(&self) -> Reading {
        Reading {
            started: self.started.load(Ordering::Relaxed),
            moved: self.moved.load(Ordering::Relaxed),
            in_progress: self.in_progress.load(Ordering::Relaxed),
            deciding: self.deciding.load(Ordering::Relaxed),
        }
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.in_progress.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for Deciding {
    fn drop(&mut self) {
        self.0.deciding.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One look at an [`Activity`].
#[derive(Clone, Copy)]
struct Reading {
    started: u64,
    moved: u64,
    in_progress: usize,
    deciding: usize,
}

/// Consecutive quiet checks of one connection.
#[derive(Default)]
struct Quiet {
    idle: u32,
    stuck: u32,
}

impl Quiet {
    /// Updates the counts with the check `now` after `before`; true once either has lasted a
    /// whole timeout.
    fn expired(&mut self, before: Reading, now: Reading) -> bool {
        let idle = now.in_progress == 0 && now.started == before.started;
        let stuck = now.deciding == 0 && now.moved == before.moved;
        self.idle = if idle { self.idle + 1 } else { 0 };
        self.stuck = if stuck { self.stuck + 1 } else { 0 };
        self.idle >= TICKS || self.stuck >= TICKS
    }
}

/// Waits until `activity` has been idle or stuck for `timeout` (forever if it never is).
pub(super) async fn quiet_for(activity: &Activity, timeout: Duration) {
    let mut quiet = Quiet::default();
    let mut before = activity.reading();
    loop {
        // A sleep from each look, not an interval: an interval keeps its schedule after a tick
        // up to 5 ms late, so the fourth tick after a late one that saw a request could come
        // under a whole timeout after that request (seen: an h3 connection closed 998.6 ms
        // after its request began, beside stress-ng).
        tokio::time::sleep(timeout / TICKS).await;
        let now = activity.reading();
        if quiet.expired(before, now) {
            return;
        }
        before = now;
    }
}

/// Drives `connection` until it ends, or until `activity` has been quiet for `timeout`: then
/// `shutdown` asks it to close (hyper's graceful shutdown: GOAWAY for h2) and it is dropped
/// after [`GRACE`] if it has not.
pub(super) async fn serve_until_quiet<C>(
    connection: C,
    activity: &Activity,
    timeout: Duration,
    shutdown: impl FnOnce(Pin<&mut C>),
) where
    C: Future,
{
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        () = quiet_for(activity, timeout) => {}
    }
    shutdown(connection.as_mut());
    let _ = tokio::time::timeout(GRACE, connection).await;
}

/// The socket's reads and writes are bytes moving (see [`super::watched::Watched`]).
impl Watch for Arc<Activity> {
    fn read(&mut self, _bytes: &[u8]) {
        self.moved();
    }

    fn written(&mut self, _bytes: &[u8]) {
        self.moved();
    }
}

/// A response body that keeps its request in progress until it ends.
pub(super) struct Tracked<B> {
    body: B,
    _in_progress: InProgress,
}

impl<B> Tracked<B> {
    pub(super) fn new(body: B, in_progress: InProgress) -> Self {
        Tracked {
            body,
            _in_progress: in_progress,
        }
    }
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(started: u64, moved: u64, in_progress: usize, deciding: usize) -> Reading {
        Reading {
            started,
            moved,
            in_progress,
            deciding,
        }
    }

    #[test]
    fn idle_or_stuck_for_a_whole_timeout_expires_busy_or_sleeping_does_not() {
        // Kept alive with PINGs: bytes move, no request.
        let mut quiet = Quiet::default();
        let expired: Vec<bool> = (0..TICKS as u64)
            .map(|tick| quiet.expired(reading(3, tick, 0, 0), reading(3, tick + 1, 0, 0)))
            .collect();
        assert_eq!(expired, [false, false, false, true]);

        // A download the client stopped reading: in progress, nothing moves.
        let mut quiet = Quiet::default();
        let still = reading(1, 9, 1, 0);
        let expired: Vec<bool> = (0..TICKS).map(|_| quiet.expired(still, still)).collect();
        assert_eq!(expired, [false, false, false, true]);

        // A request sleeping in /delay: nothing moves, but it is being decided.
        let mut quiet = Quiet::default();
        let sleeping = reading(1, 9, 1, 1);
        assert!((0..10 * TICKS).all(|_| !quiet.expired(sleeping, sleeping)));

        // Requests keep beginning and bytes keep moving: never.
        let mut quiet = Quiet::default();
        assert!((0..10 * TICKS as u64).all(
            |tick| !quiet.expired(reading(tick, tick, 0, 0), reading(tick + 1, tick + 1, 0, 0))
        ));

        // Quiet, then a request, then quiet again: the count starts over.
        let mut quiet = Quiet::default();
        let idle = reading(1, 1, 0, 0);
        for _ in 0..TICKS - 1 {
            assert!(!quiet.expired(idle, idle));
        }
        assert!(!quiet.expired(idle, reading(2, 2, 0, 0)));
        for _ in 0..TICKS - 1 {
            assert!(!quiet.expired(idle, idle));
        }
        assert!(quiet.expired(idle, idle));
    }
}
