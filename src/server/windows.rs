//! The receive windows of the target's connections within one budget over the whole target:
//! what clients may send that the target has not read yet. Each connection reserves its full
//! windows ([`super::CONNECTION_WINDOW`]) from the budget while it lives; once the budget is
//! spent, further connections get the smallest windows HTTP/2 allows ([`FLOOR_WINDOW`], also
//! used for HTTP/3), so many connections uploading without being read hold at most the budget
//! plus the floor per connection, instead of the full window times `--max-connections`.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{CONNECTION_WINDOW, STREAM_WINDOW};

/// The receive windows, in bytes, that connections may hold at once in full: 32 connections at
/// 4 MiB; benchmarks rarely upload on more connections at once.
pub(crate) const WINDOW_BUDGET: usize = 128 << 20;

/// The windows of a connection beyond the budget: HTTP/2's initial connection window, which a
/// receiver cannot lower (RFC 9113 §6.9.2).
pub(crate) const FLOOR_WINDOW: u32 = 65_535;

/// The budget of one target, shared by its listeners.
#[derive(Debug, Clone)]
pub(super) struct Windows(Arc<Semaphore>);

impl Windows {
    pub(super) fn new() -> Windows {
        Windows(Arc::new(Semaphore::new(WINDOW_BUDGET)))
    }

    /// The windows of a connection just admitted: full while the budget has room, else the floor.
    pub(super) fn reserve(&self) -> Window {
        Window(
            self.0
                .clone()
                .try_acquire_many_owned(CONNECTION_WINDOW)
                .ok(),
        )
    }
}

/// The windows of one connection; its share of the budget goes back when dropped.
#[derive(Debug)]
pub(super) struct Window(Option<OwnedSemaphorePermit>);

impl Window {
    /// The receive windows of the connection and of each of its streams, in bytes.
    pub(super) fn sizes(&self) -> Sizes {
        match self.0 {
            Some(_) => Sizes::FULL,
            None => Sizes::FLOOR,
        }
    }
}

/// Receive window sizes, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sizes {
    pub(super) connection: u32,
    pub(super) stream: u32,
}

impl Sizes {
    /// The windows of a connection within the budget.
    pub(super) const FULL: Sizes = Sizes {
        connection: CONNECTION_WINDOW,
        stream: STREAM_WINDOW,
    };
    /// The windows of a connection beyond it.
    pub(super) const FLOOR: Sizes = Sizes {
        connection: FLOOR_WINDOW,
        stream: FLOOR_WINDOW,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_past_the_budget_get_the_floor_until_one_goes() {
        let windows = Windows::new();
        let full = WINDOW_BUDGET / CONNECTION_WINDOW as usize;
        let mut held: Vec<Window> = (0..full).map(|_| windows.reserve()).collect();
        assert!(held.iter().all(|w| w.sizes() == Sizes::FULL));
        let floor = windows.reserve();
        assert_eq!(floor.sizes(), Sizes::FLOOR);
        drop(floor);
        assert_eq!(windows.reserve().sizes(), Sizes::FLOOR);
        held.pop();
        assert_eq!(windows.reserve().sizes(), Sizes::FULL);
    }
}
