//! `POST /echo` within a memory budget shared by every connection of the target: each chunk read
//! from a client takes its size from the budget until it has been sent (dropped by the protocol's
//! send buffer, or with the stream). A client that uploads and never reads its answer holds at
//! most the budget; the others' echoes wait for room, and the waiting ones leave their uploads
//! in the protocol's receive window (flow control stops the client there).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::PollSemaphore;

/// The bytes `/echo` may hold at once, read and not yet sent, over the whole target.
pub(crate) const ECHO_BUDGET: usize = 64 << 20;

/// The budget of one target, shared by its connections.
#[derive(Debug, Clone)]
pub(super) struct EchoBudget(Arc<Semaphore>);

impl EchoBudget {
    pub(super) fn new() -> EchoBudget {
        EchoBudget(Arc::new(Semaphore::new(ECHO_BUDGET)))
    }

    /// `chunk`, once the budget has room for it; the room is given back when the returned bytes
    /// (and every slice of them) are dropped.
    pub(super) async fn hold(&self, chunk: Bytes) -> Bytes {
        match self.0.clone().acquire_many_owned(permits(&chunk)).await {
            Ok(permit) => held(chunk, permit),
            // Never closed: unbudgeted then, rather than lost.
            Err(_) => chunk,
        }
    }
}

/// The budget a chunk takes (a chunk larger than the whole budget takes all of it).
fn permits(chunk: &Bytes) -> u32 {
    chunk.len().min(ECHO_BUDGET) as u32
}

/// `chunk` owning `permit`, so the room goes back when the bytes are freed.
fn held(chunk: Bytes, permit: OwnedSemaphorePermit) -> Bytes {
    Bytes::from_owner(Held {
        chunk,
        _permit: permit,
    })
}

struct Held {
    chunk: Bytes,
    _permit: OwnedSemaphorePermit,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.chunk
    }
}

/// The body of an `/echo` response (HTTP/1.1 and HTTP/2): the request's body, each chunk once the
/// budget has room for it.
pub struct Echo {
    incoming: Incoming,
    budget: PollSemaphore,
    /// A chunk read, waiting for room.
    waiting: Option<Bytes>,
}

impl Echo {
    pub(super) fn new(incoming: Incoming, budget: &EchoBudget) -> Echo {
        Echo {
            incoming,
            budget: PollSemaphore::new(budget.0.clone()),
            waiting: None,
        }
    }
}

impl Body for Echo {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        if this.waiting.is_none() {
            let frame = match ready!(Pin::new(&mut this.incoming).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                other => return Poll::Ready(other),
            };
            match frame.into_data() {
                Ok(chunk) => this.waiting = Some(chunk),
                Err(trailers) => return Poll::Ready(Some(Ok(trailers))),
            }
        }
        let chunk = this.waiting.as_ref().expect("a chunk waits");
        let permit = ready!(this.budget.poll_acquire_many(cx, permits(chunk)));
        let chunk = this.waiting.take().expect("a chunk waits");
        Poll::Ready(Some(Ok(Frame::data(match permit {
            Some(permit) => held(chunk, permit),
            None => chunk,
        }))))
    }

    fn is_end_stream(&self) -> bool {
        self.waiting.is_none() && self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let waiting = self.waiting.as_ref().map_or(0, |chunk| chunk.len() as u64);
        let incoming = self.incoming.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(incoming.lower() + waiting);
        if let Some(upper) = incoming.upper() {
            hint.set_upper(upper + waiting);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn room_comes_back_when_the_bytes_and_their_slices_are_dropped() {
        let budget = EchoBudget::new();
        let available = || budget.0.available_permits();
        let chunk = budget.hold(Bytes::from(vec![7u8; 1000])).await;
        assert_eq!(available(), ECHO_BUDGET - 1000);
        let slice = chunk.slice(10..20);
        drop(chunk);
        assert_eq!(available(), ECHO_BUDGET - 1000);
        assert_eq!(&slice[..], &[7u8; 10]);
        drop(slice);
        assert_eq!(available(), ECHO_BUDGET);
    }

    #[tokio::test]
    async fn a_full_budget_makes_the_next_chunk_wait() {
        let budget = EchoBudget::new();
        let all = budget.hold(Bytes::from(vec![0u8; ECHO_BUDGET])).await;
        let next = budget.hold(Bytes::from_static(b"x"));
        tokio::pin!(next);
        let pending = std::future::poll_fn(|cx| {
            Poll::Ready(std::future::Future::poll(next.as_mut(), cx).is_pending())
        });
        assert!(pending.await);
        drop(all);
        assert_eq!(&next.await[..], b"x");
    }
}
