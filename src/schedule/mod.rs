//! When requests may go: the run's request budget ([`budget`]), the `--rate`/`--stages`/steered
//! send times ([`pacer`]), and a churned slot's first request, taken before it connects
//! ([`reserve`]). Nothing here touches a socket or a protocol.

pub(crate) mod budget;
pub(crate) mod pacer;
pub(crate) mod reserve;
