//! The report's first line, `finished in …`: how long, how many requests a second, and how many
//! bytes — and which of these leads. A cell whose requests each moved a large body (a download or
//! an upload: [`TRANSFER_BYTES`]) is a *transfer*: its question is "how fast did the bytes go",
//! so its line leads with the throughput (`2.62 Gbit/s (327.50 MB/s)`) before the req/s. Rates
//! print in decimal SI units (`crate::units::format_throughput`), as curl and the network count.

use super::Summary;
use crate::units::{format_micros, format_throughput};

/// Body bytes per request sent, on average, from which a cell is a transfer: 1 MB (10^6
/// bytes). At 10 Gbit/s such a body takes 0.8 ms on the wire, longer than a request's own
/// round trip on a loopback or a LAN, and far longer than its head; below it the request rate is
/// the better summary of what the server did.
pub(crate) const TRANSFER_BYTES: f64 = 1e6;

/// The figures of the `finished in` line, read from a cell's summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Finished {
    /// The measured period, in seconds.
    pub(crate) elapsed_s: f64,
    /// Finished requests per second over it.
    pub(crate) requests_per_s: f64,
    /// Every byte received per second over it (`traffic.total_bytes` over the period).
    pub(crate) received_per_s: f64,
    /// Requests sent (`started`: finished or in flight when the run stopped).
    pub(crate) started: u64,
    /// Requests that got a complete response (`done − (errored − never_sent)`).
    pub(crate) responses: u64,
    /// Response body bytes received (`traffic.data_bytes`).
    pub(crate) data_bytes: u64,
    /// The request body each request sends (`settings.body_bytes`).
    pub(crate) body_bytes: usize,
}

/// Which way a transfer's bodies went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transfer {
    /// Response body bytes of [`TRANSFER_BYTES`] or more per request sent.
    Download,
    /// Request bodies of [`TRANSFER_BYTES`] or more, larger than the responses'.
    Upload,
}

impl Finished {
    /// The figures of `summary`.
    pub(crate) fn of(summary: &Summary) -> Finished {
        let counters = &summary.requests.counters;
        Finished {
            elapsed_s: summary.elapsed_s,
            requests_per_s: summary.requests_per_s,
            received_per_s: summary.bytes_per_s,
            started: counters.started,
            responses: (counters.done + summary.requests.never_sent)
                .saturating_sub(counters.errored),
            data_bytes: summary.traffic.data_bytes,
            body_bytes: summary.settings.body_bytes,
        }
    }

    /// Whether the cell is a transfer, and which way: `None` without a request sent. The body
    /// bytes received are shared among the requests sent, those in flight at the end included,
    /// so a download stopped halfway is one too.
    pub(crate) fn transfer(&self) -> Option<Transfer> {
        if self.started == 0 {
            return None;
        }
        let received = self.data_bytes as f64 / self.started as f64;
        let sent = self.body_bytes as f64;
        if received.max(sent) < TRANSFER_BYTES {
            None
        } else if received >= sent {
            Some(Transfer::Download)
        } else {
            Some(Transfer::Upload)
        }
    }

    /// The request bodies of the requests that got a complete response, per second of the
    /// measured period: the bodies the server surely had (one it answered early, or that an
    /// error cut short, may not have been sent whole; the socket's count of bytes written would
    /// also hold heads and framing).
    pub(crate) fn sent_bodies_per_s(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.body_bytes as f64 * self.responses as f64 / self.elapsed_s
        } else {
            0.0
        }
    }

    /// What `--quiet`'s one line puts before the req/s: a transfer's throughput (an upload's
    /// request bodies, `… sent`) and a comma; nothing for other cells.
    pub(crate) fn quiet_lead(&self) -> String {
        match self.transfer() {
            None => String::new(),
            Some(Transfer::Download) => format!("{}, ", format_throughput(self.received_per_s)),
            Some(Transfer::Upload) => {
                format!("{} sent, ", format_throughput(self.sent_bodies_per_s()))
            }
        }
    }

    /// The line: `finished in 2.62s, 38132.82 req/s, 8.16 Mbit/s (1.02 MB/s)`; a download
    /// leads with its throughput, `finished in 410.00ms, 20.95 Gbit/s (2.62 GB/s), 2.44 req/s`,
    /// an upload with its request bodies' and the bytes received last. The period stays first and
    /// ends at the first comma, where h2load's readers look for it.
    pub(crate) fn line(&self) -> String {
        let period = format_micros(self.elapsed_s * 1e6);
        let requests = format!("{:.2} req/s", self.requests_per_s);
        let received = format_throughput(self.received_per_s);
        match self.transfer() {
            None => format!("finished in {period}, {requests}, {received}"),
            Some(Transfer::Download) => format!("finished in {period}, {received}, {requests}"),
            Some(Transfer::Upload) => format!(
                "finished in {period}, {} sent in request bodies, {requests}, {received} received",
                format_throughput(self.sent_bodies_per_s())
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell of `done` requests in `elapsed_s`, each answered with `data` body bytes after
    /// sending `body`, with `overhead` more bytes received per request (heads, framing).
    fn finished(done: u64, elapsed_s: f64, data: u64, body: usize, overhead: u64) -> Finished {
        Finished {
            elapsed_s,
            requests_per_s: done as f64 / elapsed_s,
            received_per_s: ((data + overhead) * done) as f64 / elapsed_s,
            started: done,
            responses: done,
            data_bytes: data * done,
            body_bytes: body,
        }
    }

    #[test]
    fn small_bodies_lead_with_the_request_rate() {
        // The reference's example: 100000 requests of 4 bytes, 28 bytes of head each, in 2.62 s.
        let cell = finished(100_000, 2.62, 4, 0, 24);
        assert_eq!(cell.transfer(), None);
        assert_eq!(
            cell.line(),
            "finished in 2.62s, 38167.94 req/s, 8.55 Mbit/s (1.07 MB/s)"
        );
        // Just under a megabyte a request both ways: still requests.
        let cell = finished(10, 1.0, 999_999, 999_999, 100);
        assert_eq!(cell.transfer(), None);
    }

    #[test]
    fn a_download_leads_with_its_throughput() {
        // One GiB in 410 ms: 1073741824 × 8 / 0.41 = 20.95 Gbit/s.
        let cell = finished(1, 0.41, 1 << 30, 0, 84);
        assert_eq!(cell.transfer(), Some(Transfer::Download));
        assert_eq!(
            cell.line(),
            "finished in 410.00ms, 20.95 Gbit/s (2.62 GB/s), 2.44 req/s"
        );
        // Exactly a megabyte a request is a transfer.
        let cell = finished(4, 2.0, 1_000_000, 0, 0);
        assert_eq!(cell.transfer(), Some(Transfer::Download));
        assert_eq!(
            cell.line(),
            "finished in 2.00s, 16.00 Mbit/s (2.00 MB/s), 2.00 req/s"
        );
    }

    #[test]
    fn an_upload_leads_with_its_request_bodies() {
        // 8 uploads of 5 MB in 2 s, each answered by 4 bytes and a 80-byte head.
        let cell = finished(8, 2.0, 4, 5_000_000, 80);
        assert_eq!(cell.transfer(), Some(Transfer::Upload));
        assert_eq!(cell.sent_bodies_per_s(), 20e6);
        assert_eq!(
            cell.line(),
            "finished in 2.00s, 160.00 Mbit/s (20.00 MB/s) sent in request bodies, 4.00 req/s, \
             2.69 kbit/s (336.00 B/s) received"
        );
        // An echo of large bodies receives as much as it sends: a download.
        let echo = finished(8, 2.0, 5_000_000, 5_000_000, 80);
        assert_eq!(echo.transfer(), Some(Transfer::Download));
    }

    #[test]
    fn a_download_stopped_halfway_is_a_transfer_and_errors_send_no_body() {
        // Half of a GiB received in 2 s when a signal stopped the run: nothing finished.
        let stopped = Finished {
            elapsed_s: 2.0,
            requests_per_s: 0.0,
            received_per_s: (1u64 << 29) as f64 / 2.0,
            started: 1,
            responses: 0,
            data_bytes: 1 << 29,
            body_bytes: 0,
        };
        assert_eq!(stopped.transfer(), Some(Transfer::Download));
        assert_eq!(
            stopped.line(),
            "finished in 2.00s, 2.15 Gbit/s (268.44 MB/s), 0.00 req/s"
        );
        // 4 uploads of 8 MB of which 2 got an answer, in 1 s: 16 MB of bodies the server had.
        let mut uploads = finished(4, 1.0, 4, 8_000_000, 80);
        uploads.responses = 2;
        assert_eq!(uploads.transfer(), Some(Transfer::Upload));
        assert_eq!(uploads.sent_bodies_per_s(), 16e6);
    }

    #[test]
    fn the_quiet_line_leads_with_a_transfer_s_throughput() {
        assert_eq!(finished(100_000, 2.62, 4, 0, 24).quiet_lead(), "");
        assert_eq!(
            finished(1, 0.41, 1 << 30, 0, 84).quiet_lead(),
            "20.95 Gbit/s (2.62 GB/s), "
        );
        assert_eq!(
            finished(8, 2.0, 4, 5_000_000, 80).quiet_lead(),
            "160.00 Mbit/s (20.00 MB/s) sent, "
        );
    }

    #[test]
    fn nothing_finished_is_no_transfer() {
        let cell = Finished {
            elapsed_s: 0.0,
            requests_per_s: 0.0,
            received_per_s: 0.0,
            started: 0,
            responses: 0,
            data_bytes: 0,
            body_bytes: 1 << 30,
        };
        assert_eq!(cell.transfer(), None);
        assert_eq!(cell.sent_bodies_per_s(), 0.0);
        assert_eq!(
            cell.line(),
            "finished in 0us, 0.00 req/s, 0.00 bit/s (0.00 B/s)"
        );
    }
}
