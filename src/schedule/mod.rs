//! When requests may go: the run's request budget ([`budget`]), the `--rate`/`--stages`/steered
//! send times ([`pacer`]), and a churned slot's first request, taken before it connects
//! ([`reserve`]). Nothing here touches a socket or a protocol; what waits for a send time waits
//! on the caller's [`Timer`], which is also the clock it reads.

pub(crate) mod budget;
pub(crate) mod pacer;
pub(crate) mod reserve;

use std::future::Future;
use std::time::Instant;

/// What a driver or a waiting slot sleeps with until a deadline, and the clock it reads between
/// sleeps (a test's timer may script both).
pub(crate) trait Timer {
    /// Completes at `deadline` (at once if it has passed).
    fn sleep_until(&self, deadline: Instant) -> impl Future<Output = ()> + '_;

    /// The time now, as this timer's sleeps see it.
    fn now(&self) -> Instant {
        Instant::now()
    }
}
