//! Wire byte counts: the per-thread [`WireMeter`] the socket taps and engines write to, and the
//! [`WireTotals`] read from it.

use std::cell::Cell;

use serde::Serialize;

/// Bytes received, as plain numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct WireTotals {
    /// Every byte read from sockets (after TLS, before HTTP framing is removed).
    pub(crate) total: u64,
    /// Response header bytes as sent (HPACK-compressed for HTTP/2).
    pub(crate) headers: u64,
    /// Response header bytes uncompressed (name + value lengths for HTTP/2).
    pub(crate) headers_uncompressed: u64,
    /// Response body bytes.
    pub(crate) data: u64,
}

impl WireTotals {
    /// The bytes counted since `earlier` was taken.
    pub(crate) fn since(self, earlier: WireTotals) -> WireTotals {
        WireTotals {
            total: self.total - earlier.total,
            headers: self.headers - earlier.headers,
            headers_uncompressed: self.headers_uncompressed - earlier.headers_uncompressed,
            data: self.data - earlier.data,
        }
    }

    /// Adds another thread's totals.
    pub(crate) fn add(&mut self, other: WireTotals) {
        self.total += other.total;
        self.headers += other.headers;
        self.headers_uncompressed += other.headers_uncompressed;
        self.data += other.data;
    }
}

/// One thread's running byte counts, written by socket taps and engines.
#[derive(Debug, Default)]
pub(crate) struct WireMeter {
    total: Cell<u64>,
    headers: Cell<u64>,
    headers_uncompressed: Cell<u64>,
    data: Cell<u64>,
}

impl WireMeter {
    /// Bytes read from a socket.
    pub(crate) fn add_total(&self, bytes: u64) {
        self.total.set(self.total.get() + bytes);
    }

    /// Header bytes as sent, and their uncompressed size.
    pub(crate) fn add_headers(&self, wire: u64, uncompressed: u64) {
        self.headers.set(self.headers.get() + wire);
        self.headers_uncompressed
            .set(self.headers_uncompressed.get() + uncompressed);
    }

    /// Response body bytes.
    pub(crate) fn add_data(&self, bytes: u64) {
        self.data.set(self.data.get() + bytes);
    }

    /// The counts so far.
    pub(crate) fn totals(&self) -> WireTotals {
        WireTotals {
            total: self.total.get(),
            headers: self.headers.get(),
            headers_uncompressed: self.headers_uncompressed.get(),
            data: self.data.get(),
        }
    }
}
