//! TLS handshakes by kind, for `--tls-resume` and `--tls-early-data`: how many resumed a session
//! and how many were full, the handshake time of each kind, and what became of early data.
//!
//! "Handshake time" runs from the start of the TCP connect to the end of the TLS handshake, so it
//! equals the connect time of a TLS connection, except with early data: there the connection is
//! usable (its requests leave) before the handshake ends, and the handshake ends later.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::hdr::new_histogram;
use super::micros;

/// What the TLS handshake of one connection came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handshake {
    /// It resumed a session (a ticket or a TLS 1.2 session id) instead of a full handshake.
    pub(crate) resumed: bool,
    /// Whether the server accepted the early data sent (`None`: none was sent).
    pub(crate) early_data: Option<bool>,
    /// TCP connect start to TLS established.
    pub(crate) time: Duration,
}

/// The TLS handshakes of the connections begun in the measured period.
#[derive(Debug, Clone)]
pub(crate) struct Handshakes {
    /// Handshake times of full handshakes (µs).
    pub(crate) full: Histogram<u64>,
    /// Handshake times of resumed handshakes (µs).
    pub(crate) resumed: Histogram<u64>,
    /// Connections whose early data the server accepted.
    pub(crate) early_data_accepted: u64,
    /// Connections whose early data the server rejected (their requests went again after the
    /// handshake, once each).
    pub(crate) early_data_rejected: u64,
}

impl Default for Handshakes {
    fn default() -> Self {
        Handshakes {
            full: new_histogram(),
            resumed: new_histogram(),
            early_data_accepted: 0,
            early_data_rejected: 0,
        }
    }
}

impl Handshakes {
    /// Counts one connection's handshake.
    pub(crate) fn record(&mut self, handshake: Handshake) {
        let histogram = if handshake.resumed {
            &mut self.resumed
        } else {
            &mut self.full
        };
        histogram.saturating_record(micros(handshake.time));
        match handshake.early_data {
            Some(true) => self.early_data_accepted += 1,
            Some(false) => self.early_data_rejected += 1,
            None => {}
        }
    }

    /// Adds another thread's handshakes.
    pub(crate) fn merge(&mut self, other: &Handshakes) {
        self.full.add(&other.full).expect("histograms share bounds");
        self.resumed
            .add(&other.resumed)
            .expect("histograms share bounds");
        self.early_data_accepted += other.early_data_accepted;
        self.early_data_rejected += other.early_data_rejected;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshakes_split_by_kind_and_merge() {
        let mut a = Handshakes::default();
        a.record(Handshake {
            resumed: false,
            early_data: None,
            time: Duration::from_micros(900),
        });
        a.record(Handshake {
            resumed: true,
            early_data: Some(true),
            time: Duration::from_micros(300),
        });
        let mut b = Handshakes::default();
        b.record(Handshake {
            resumed: true,
            early_data: Some(false),
            time: Duration::from_micros(500),
        });
        a.merge(&b);
        assert_eq!((a.full.len(), a.resumed.len()), (1, 2));
        assert_eq!(a.full.max(), 900);
        assert_eq!(a.resumed.min(), 300);
        assert_eq!((a.early_data_accepted, a.early_data_rejected), (1, 1));
    }
}
