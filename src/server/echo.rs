//! `POST /echo` within a memory budget shared by every connection of the target: each chunk read
//! from a client takes its size from the budget until it has been sent (dropped by the protocol's
//! send buffer, or with the stream). An echo that finds no room waits with the one chunk it read
//! (at most 16 KiB on HTTP/2), and leaves the rest of its upload in the protocol's receive window
//! (flow control stops the client there). Taking the room before reading would bound that chunk
//! too, but stalls: the streams holding room need not be those whose data has arrived, and the
//! others' data fills the connection's window.
//!
//! One connection holds at most [`ECHO_SHARE`] of the budget, so a client that uploads on many
//! streams and never reads its answers cannot stall the other connections' echoes; it takes four
//! such connections to fill the budget, and each is closed after `--idle-timeout` without a byte
//! moving, which gives its share back.

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

/// The most of [`ECHO_BUDGET`] one connection may hold at once.
pub(crate) const ECHO_SHARE: usize = ECHO_BUDGET / 4;

/// The budget of one target, shared by its connections, and one connection's share of it.
#[derive(Debug, Clone)]
pub(super) struct EchoBudget {
    total: Arc<Semaphore>,
    share: Arc<Semaphore>,
}

impl EchoBudget {
    pub(super) fn new() -> EchoBudget {
        EchoBudget {
            total: Arc::new(Semaphore::new(ECHO_BUDGET)),
            share: Arc::new(Semaphore::new(ECHO_SHARE)),
        }
    }

    /// The budget for a new connection: the same total, a share of its own.
    pub(super) fn for_connection(&self) -> EchoBudget {
        EchoBudget {
            total: self.total.clone(),
            share: Arc::new(Semaphore::new(ECHO_SHARE)),
        }
    }

    /// What one echo takes its room with.
    pub(super) fn reserver(&self) -> Reserver {
        Reserver {
            share: PollSemaphore::new(self.share.clone()),
            total: PollSemaphore::new(self.total.clone()),
            room: None,
            share_taken: None,
        }
    }
}

/// The same room in a connection's share and in the total.
struct Room {
    share: OwnedSemaphorePermit,
    total: OwnedSemaphorePermit,
}

impl Room {
    fn size(&self) -> usize {
        self.share.num_permits()
    }

    fn merge(&mut self, other: Room) {
        self.share.merge(other.share);
        self.total.merge(other.total);
    }

    /// `size` of this room as a room of its own, if there is that much.
    fn split(&mut self, size: usize) -> Option<Room> {
        Some(Room {
            share: self.share.split(size)?,
            total: self.total.split(size)?,
        })
    }
}

/// Takes room for one echo's chunks: the chunk's size once read ([`Reserver::poll_room`]), then
/// gives the chunk its room ([`Reserver::hold`]).
pub(super) struct Reserver {
    share: PollSemaphore,
    total: PollSemaphore,
    /// Room taken, not yet given to a chunk.
    room: Option<Room>,
    /// Room in the share taken while the total's is awaited.
    share_taken: Option<OwnedSemaphorePermit>,
}

impl Reserver {
    /// Ready once the room taken is at least `size` bytes (a share at most).
    pub(super) fn poll_room(&mut self, cx: &mut Context<'_>, size: usize) -> Poll<()> {
        let size = size.min(ECHO_SHARE);
        let have = self.room.as_ref().map_or(0, Room::size);
        if have >= size {
            return Poll::Ready(());
        }
        if self.share_taken.is_none() {
            self.share_taken = ready!(self.share.poll_acquire_many(cx, (size - have) as u32));
        }
        let Some(share) = self.share_taken.take() else {
            return Poll::Ready(()); // never closed: unbudgeted then, rather than stuck
        };
        let total = match self.total.poll_acquire_many(cx, share.num_permits() as u32) {
            Poll::Ready(total) => total,
            Poll::Pending => {
                self.share_taken = Some(share);
                return Poll::Pending;
            }
        };
        if let Some(total) = total {
            let more = Room { share, total };
            match &mut self.room {
                Some(room) => room.merge(more),
                None => self.room = Some(more),
            }
        }
        Poll::Ready(())
    }

    /// Waits until the room taken is at least `size` bytes (a share at most).
    pub(super) async fn room(&mut self, size: usize) {
        std::future::poll_fn(|cx| self.poll_room(cx, size)).await
    }

    /// `chunk` owning its room from what was taken (after [`Reserver::poll_room`] for its size), so
    /// the room goes back when the bytes (and every slice of them) are freed.
    pub(super) fn hold(&mut self, chunk: Bytes) -> Bytes {
        let size = chunk.len().min(ECHO_SHARE);
        match self.room.as_mut().and_then(|room| room.split(size)) {
            Some(room) => Bytes::from_owner(Held { chunk, _room: room }),
            None => chunk,
        }
    }
}

struct Held {
    chunk: Bytes,
    _room: Room,
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        &self.chunk
    }
}

/// The body of an `/echo` response (HTTP/1.1 and HTTP/2): the request's body, each chunk read
/// once the budget has room for it.
pub(super) struct Echo {
    incoming: Incoming,
    reserver: Reserver,
    /// A chunk read, waiting for room.
    waiting: Option<Bytes>,
}

impl Echo {
    pub(super) fn new(incoming: Incoming, budget: &EchoBudget) -> Echo {
        Echo {
            incoming,
            reserver: budget.reserver(),
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
        let size = this.waiting.as_ref().map_or(0, Bytes::len);
        ready!(this.reserver.poll_room(cx, size));
        let chunk = this.waiting.take().expect("a chunk waits");
        Poll::Ready(Some(Ok(Frame::data(this.reserver.hold(chunk)))))
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

    /// `chunk` with its room from `reserver`.
    async fn hold(reserver: &mut Reserver, chunk: Bytes) -> Bytes {
        reserver.room(chunk.len()).await;
        reserver.hold(chunk)
    }

    /// Whether `future` is still pending when polled once.
    async fn is_pending<F: std::future::Future>(mut future: Pin<&mut F>) -> bool {
        std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx).is_pending())).await
    }

    #[tokio::test]
    async fn room_comes_back_when_the_bytes_and_their_slices_are_dropped() {
        let budget = EchoBudget::new();
        let available = || budget.total.available_permits();
        let mut reserver = budget.reserver();
        let chunk = hold(&mut reserver, Bytes::from(vec![7u8; 1000])).await;
        assert_eq!(available(), ECHO_BUDGET - 1000);
        let slice = chunk.slice(10..20);
        drop(chunk);
        assert_eq!(available(), ECHO_BUDGET - 1000);
        assert_eq!(&slice[..], &[7u8; 10]);
        drop(slice);
        assert_eq!(available(), ECHO_BUDGET);
        // Room taken and not given to a chunk goes back with the echo.
        reserver.room(100).await;
        assert_eq!(available(), ECHO_BUDGET - 100);
        let small = hold(&mut reserver, Bytes::from_static(b"abc")).await;
        assert_eq!(available(), ECHO_BUDGET - 100);
        drop(reserver);
        assert_eq!(available(), ECHO_BUDGET - 3);
        drop(small);
        assert_eq!(available(), ECHO_BUDGET);
    }

    #[tokio::test]
    async fn a_full_share_or_budget_makes_the_next_chunk_wait() {
        let budget = EchoBudget::new();
        // One connection's share is full: it waits, another connection does not.
        let share = hold(&mut budget.reserver(), Bytes::from(vec![0u8; ECHO_SHARE])).await;
        assert_eq!(budget.total.available_permits(), ECHO_BUDGET - ECHO_SHARE);
        let mut waiting = budget.reserver();
        let next = hold(&mut waiting, Bytes::from_static(b"x"));
        tokio::pin!(next);
        assert!(is_pending(next.as_mut()).await);
        let other = budget.for_connection();
        let y = hold(&mut other.reserver(), Bytes::from_static(b"y")).await;
        assert_eq!(&y[..], b"y");
        drop((share, y));
        assert_eq!(&next.await[..], b"x");
        // Every share full: the budget is, and a new connection waits too.
        let mut all = Vec::new();
        for _ in 0..ECHO_BUDGET / ECHO_SHARE {
            let connection = budget.for_connection();
            let chunk = Bytes::from(vec![0u8; ECHO_SHARE]);
            all.push(hold(&mut connection.reserver(), chunk).await);
        }
        let last = budget.for_connection();
        let mut reserver = last.reserver();
        let next = hold(&mut reserver, Bytes::from_static(b"z"));
        tokio::pin!(next);
        assert!(is_pending(next.as_mut()).await);
        drop(all);
        assert_eq!(&next.await[..], b"z");
    }
}
