//! HdrHistogram conventions shared by recording, reports and merging: microsecond histograms with
//! 3 significant digits up to an hour, and their V2 + deflate encoding (base64 in JSON).

use std::io::Read;

use anyhow::{Context, Result};
use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Largest latency a histogram holds exactly (one hour, in microseconds); larger values saturate.
pub(crate) const MAX_MICROS: u64 = 3_600_000_000;

/// Creates an empty latency histogram: microseconds, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    let fresh =
        || Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("static histogram bounds are valid");
    if !cfg!(debug_assertions) {
        // The crate zeroes a new counts array with one memset here; a template kept to copy would
        // stay resident (about 180 KB) for the whole run.
        return fresh();
    }
    // A debug build zeroes the counts value by value, which `merge` of a long timeline did for
    // every interval (a fifth of its time): there, a copy of one built once is one memcpy.
    static EMPTY: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(fresh).clone()
}

/// V2 + deflate bytes, the encoding HdrHistogram's tools exchange.
pub(crate) fn encode(histogram: &Histogram<u64>) -> Vec<u8> {
    // One serializer per thread: each holds a buffer sized for the widest counts array (about
    // 200 KB for ours), which a new one allocated and freed at every interval a timeline closed,
    // a hundred times a second, cycling that memory through the allocator and the kernel.
    thread_local! {
        static SERIALIZER: std::cell::RefCell<V2DeflateSerializer> =
            std::cell::RefCell::new(V2DeflateSerializer::new());
    }
    // The encoding's header names the histogram's bounds: a [`fitted_histogram`] goes out as
    // one of the standard bounds, so that the same values always encode to the same bytes (a
    // merged report's `hdr` is the run's own).
    let standard;
    let histogram = if !histogram.is_auto_resize() {
        histogram
    } else {
        let mut copy = new_histogram();
        copy.add(histogram)
            .expect("a fitted histogram holds only values the standard bounds keep");
        standard = copy;
        &standard
    };
    let mut bytes = Vec::new();
    SERIALIZER.with_borrow_mut(|serializer| {
        serializer
            .serialize(histogram, &mut bytes)
            .expect("serializing into memory cannot fail")
    });
    bytes
}

/// [`encode`], then base64: how histograms travel in JSON.
pub(crate) fn to_base64(histogram: &Histogram<u64>) -> String {
    base64::engine::general_purpose::STANDARD.encode(encode(histogram))
}

/// The most significant digits a decoded histogram may have: ours have 3. More would let a few
/// bytes of a report ask for a counts array of megabytes, and its decoding and adding for as
/// many steps (2000 such histograms kept `diff` busy for minutes).
const MAX_DECODED_DIGITS: u32 = 3;

/// The longest payload of counts a decoded histogram may declare: a varint (at most 9 bytes) for
/// each bucket of the widest histogram of [`MAX_DECODED_DIGITS`] digits, 65,536 of them. The
/// decoder allocates what the payload declares before it reads it.
const MAX_PAYLOAD: u32 = 9 << 16;

/// HdrHistogram's V2 cookie, and that of its deflated form.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;

/// The fixed part of a V2 encoding before its counts: cookie, payload length, normalizing offset,
/// digits, lowest and highest value, integer to double ratio.
const V2_HEADER: usize = 40;

/// Where HdrHistogram keeps each value in its counts array (its bucket scheme), so the values of
/// an encoding can be read without building the histogram it describes.
struct Layout {
    /// log2 of the lowest value told apart from 0.
    unit_magnitude: u32,
    /// log2 of half the sub-buckets of a bucket.
    half_magnitude: u32,
    /// The largest value the counts array holds: values at higher indexes cannot be.
    top: u64,
}

impl Layout {
    /// The layout of a histogram of values `low..=high` at `digits` significant digits, as
    /// `Histogram::new_with_bounds` makes it (even its float logarithm of `low`).
    fn new(low: u64, high: u64, digits: u32) -> Result<Layout> {
        if low == 0 || low > u64::MAX / 2 || high < 2 * low {
            anyhow::bail!("a histogram has impossible bounds {low}..{high}");
        }
        let unit_magnitude = (low as f64).log2().floor() as u32;
        // Unit resolution up to 2 × 10^digits, in a power of two of sub-buckets.
        let count_magnitude = (2 * 10u64.pow(digits)).next_power_of_two().trailing_zeros();
        if unit_magnitude + count_magnitude > 63 {
            anyhow::bail!("a histogram has impossible bounds {low}..{high}");
        }
        // Buckets double until one holds `high`; the array ends with the last.
        let mut untracked = 1u64 << (count_magnitude + unit_magnitude);
        while untracked <= high && untracked <= u64::MAX / 2 {
            untracked <<= 1;
        }
        let top = if untracked <= high {
            u64::MAX
        } else {
            untracked - 1
        };
        Ok(Layout {
            unit_magnitude,
            half_magnitude: count_magnitude - 1,
            top,
        })
    }

    /// The highest of the values counted at `index` (what the histogram's iterators report for
    /// it), or `None` past the end of the array.
    fn value(&self, index: u64) -> Option<u64> {
        let half = 1u64 << self.half_magnitude;
        let (bucket, sub_bucket) = match (index >> self.half_magnitude).checked_sub(1) {
            Some(bucket) => (bucket, (index & (half - 1)) + half),
            None => (0, index),
        };
        let shift = u32::try_from(bucket)
            .ok()?
            .checked_add(self.unit_magnitude)?;
        let lowest = sub_bucket.checked_shl(shift)?;
        let highest = lowest.checked_add((1u64 << shift) - 1)?;
        (lowest >> shift == sub_bucket && highest <= self.top).then_some(highest)
    }
}

/// The V2 header and counts payload of `bytes` (deflated or not), checked before anything is
/// sized by them: the payload length and the significant digits decide what reading costs.
fn payload(bytes: &[u8]) -> Result<(Layout, Vec<u8>)> {
    let word = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 4)
            .map(|word| u32::from_be_bytes(word.try_into().expect("four bytes")))
    };
    let mut inflated;
    let mut reader: Box<dyn Read + '_> = match word(bytes, 0) {
        Some(V2_COOKIE) => Box::new(bytes),
        Some(V2_DEFLATE_COOKIE) => {
            let deflated = bytes.get(8..).unwrap_or_default();
            inflated = flate2::read::ZlibDecoder::new(deflated);
            Box::new(&mut inflated)
        }
        _ => anyhow::bail!("not an HdrHistogram V2 encoding"),
    };
    let mut header = [0u8; V2_HEADER];
    reader
        .read_exact(&mut header)
        .context("a histogram header is cut short")?;
    let field = |at| word(&header, at).expect("inside the header");
    let long = |at: usize| u64::from_be_bytes(header[at..at + 8].try_into().expect("eight bytes"));
    let (cookie, length, offset, digits) = (field(0), field(4), field(8), field(12));
    if cookie != V2_COOKIE {
        anyhow::bail!("not an HdrHistogram V2 encoding");
    }
    if length > MAX_PAYLOAD {
        anyhow::bail!("a histogram declares {length} bytes of counts, more than {MAX_PAYLOAD}");
    }
    if digits > MAX_DECODED_DIGITS {
        anyhow::bail!(
            "a histogram has {digits} significant digits, more than {MAX_DECODED_DIGITS}"
        );
    }
    if offset != 0 || f64::from_be_bytes(header[32..40].try_into().expect("eight bytes")) != 1.0 {
        anyhow::bail!("a histogram uses an HdrHistogram feature this tool does not read");
    }
    let layout = Layout::new(long(16), long(24), digits)?;
    let mut counts = Vec::with_capacity(length as usize);
    reader
        .take(u64::from(length))
        .read_to_end(&mut counts)
        .context("a histogram's counts are not deflated")?;
    if counts.len() != length as usize {
        anyhow::bail!("a histogram's counts are cut short");
    }
    Ok((layout, counts))
}

/// Reads the values of an [`encode`]d histogram straight from its bytes, without building it (a
/// histogram's counts array is 180 KB however little it holds): `visit` gets each value with its
/// count, in increasing order, the value being the highest its bucket holds (as the histogram's
/// own iterators report it). Returns how many values there are, refused past 2^64 - 1 (the
/// histogram's own count would stop there and its percentiles read 0).
pub(crate) fn scan(bytes: &[u8], mut visit: impl FnMut(u64, u64) -> Result<()>) -> Result<u64> {
    let (layout, counts) = payload(bytes)?;
    let (mut at, mut index, mut total) = (0, 0u64, 0u64);
    while at < counts.len() {
        // LEB128 of up to 9 bytes (the ninth taken whole), zig-zag encoded: a negative number is
        // a run of empty buckets.
        let mut encoded = 0u64;
        for byte in 0..9 {
            let Some(&next) = counts.get(at) else {
                anyhow::bail!("a histogram's counts are cut short");
            };
            at += 1;
            if byte == 8 {
                encoded |= u64::from(next) << 56;
                break;
            }
            encoded |= u64::from(next & 0x7f) << (7 * byte);
            if next & 0x80 == 0 {
                break;
            }
        }
        let number = ((encoded >> 1) as i64) ^ -((encoded & 1) as i64);
        if number < 0 {
            index = index.saturating_add(number.unsigned_abs());
            continue;
        }
        if number > 0 {
            let Some(value) = layout.value(index) else {
                anyhow::bail!("a histogram has counts past its highest value");
            };
            let count = number as u64;
            total = total
                .checked_add(count)
                .context("a histogram holds more than 2^64 values")?;
            visit(value, count)?;
        }
        index = index.saturating_add(1);
    }
    Ok(total)
}

/// The number of values `histogram` holds, or an error when they pass 2^64 (its own count then
/// wraps, and its percentiles read 0).
pub(crate) fn checked_len(histogram: &Histogram<u64>) -> Result<u64> {
    // The count saturates: below the top it is exact, and only the top needs the buckets summed.
    if histogram.len() < u64::MAX {
        return Ok(histogram.len());
    }
    histogram
        .iter_recorded()
        .try_fold(0u64, |total, value| {
            total.checked_add(value.count_at_value())
        })
        .context("a histogram holds more than 2^64 values")
}

/// Adds the values of [`encode`]d `bytes` to `histogram` (of the standard bounds, or
/// [`fitted_histogram`]): values from a histogram of other bounds or precision land where the
/// standard one keeps them, and none may be beyond what the standard one keeps.
pub(crate) fn add_encoded(histogram: &mut Histogram<u64>, bytes: &[u8]) -> Result<u64> {
    scan(bytes, |value, count| {
        // What a histogram of the standard bounds keeps: its buckets double up to the power of
        // two past MAX_MICROS (2^32 - 1 µs).
        anyhow::ensure!(
            value < MAX_MICROS.next_power_of_two(),
            "histogram values out of range"
        );
        histogram
            .record_n(value, count)
            .context("histogram values out of range")
    })
}

/// An empty histogram of the standard precision that grows to hold the largest value put in it
/// (up to [`MAX_MICROS`] from [`add_encoded`]): what a report read from a file holds. One of the
/// standard bounds is about 180 KB whatever it holds; this one is as large as its values need
/// (about 40 KB for latencies up to 10 ms), so `merge` and `diff` of reports of many cells hold
/// what their latencies need, not an hour's worth of buckets in each of a cell's histograms.
pub(crate) fn fitted_histogram() -> Histogram<u64> {
    let mut histogram =
        Histogram::new_with_bounds(1, 2, 3).expect("static histogram bounds are valid");
    histogram.auto(true);
    histogram
}

/// Decodes [`encode`]d bytes into a [`fitted_histogram`].
pub(crate) fn decode(bytes: &[u8]) -> Result<Histogram<u64>> {
    let mut histogram = fitted_histogram();
    add_encoded(&mut histogram, bytes)?;
    Ok(histogram)
}

/// The bytes of a [`to_base64`] string.
pub(crate) fn base64_bytes(text: &str) -> Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .context("a histogram is not valid base64")
}

/// Decodes a [`to_base64`] string.
pub fn from_base64(text: &str) -> Result<Histogram<u64>> {
    decode(&base64_bytes(text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exactly() {
        let mut histogram = new_histogram();
        for value in [1, 100, 200, 300, 50_000, 1_000_000] {
            histogram.record(value).unwrap();
        }
        let back = from_base64(&to_base64(&histogram)).unwrap();
        assert_eq!(back, histogram);
        assert!(to_base64(&histogram).starts_with("HISTF"));
    }

    #[test]
    fn a_fitted_histogram_encodes_as_one_of_the_standard_bounds() {
        let (mut standard, mut fitted) = (new_histogram(), fitted_histogram());
        for value in [1, 809, 976, 50_000] {
            standard.record(value).unwrap();
            fitted.record(value).unwrap();
        }
        assert_eq!(encode(&fitted), encode(&standard));
        assert_eq!(
            encode(&decode(&encode(&standard)).unwrap()),
            encode(&standard)
        );
    }

    #[test]
    fn a_scan_reads_the_values_hdrhistogram_iterates() {
        // Every bucket of histograms of several bounds and precisions: the scan sees the values
        // and counts the crate's own iterator reports, and decoding re-homes them exactly.
        for (low, high, digits) in [
            (1, MAX_MICROS, 3),
            (1, 1000, 0),
            (7, 1 << 40, 2),
            (1000, u64::MAX / 2, 1),
        ] {
            let mut histogram = Histogram::<u64>::new_with_bounds(low, high, digits).unwrap();
            let mut value = low;
            let mut count = 1;
            while value <= high.min(MAX_MICROS) {
                histogram.record_n(value, count).unwrap();
                value = histogram.next_non_equivalent(value);
                count = count % 7 + 1;
            }
            let expected: Vec<(u64, u64)> = histogram
                .iter_recorded()
                .map(|at| (at.value_iterated_to(), at.count_at_value()))
                .collect();
            let mut seen = Vec::new();
            let total = scan(&encode(&histogram), |value, count| {
                seen.push((value, count));
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, expected, "{low}..{high}, {digits} digits");
            assert_eq!(total, histogram.len());
            let mut rehomed = new_histogram();
            for &(value, count) in &expected {
                rehomed.record_n(value, count).unwrap();
            }
            assert_eq!(decode(&encode(&histogram)).unwrap(), rehomed);
        }
    }

    #[test]
    fn wide_histograms_and_counts_past_two_to_the_64_are_refused() {
        let wide = Histogram::<u64>::new_with_bounds(1, u64::MAX / 2, 5).unwrap();
        let message = format!("{:#}", decode(&encode(&wide)).unwrap_err());
        assert!(
            message.contains("5 significant digits, more than 3"),
            "{message}"
        );
        let mut full = new_histogram();
        // A count is encoded as at most 2^63 - 1: three of them pass 2^64.
        let most = i64::MAX as u64;
        full.record_n(10, most).unwrap();
        full.record_n(20_000, most).unwrap();
        full.record_n(30_000, 2).unwrap();
        let message = format!("{:#}", decode(&encode(&full)).unwrap_err());
        assert!(message.contains("more than 2^64 values"), "{message}");
        full.reset();
        full.record_n(10, most).unwrap();
        full.record_n(20_000, most).unwrap();
        assert_eq!(decode(&encode(&full)).unwrap().len(), u64::MAX - 1);
    }
}
