//! HdrHistogram conventions shared by recording, reports and merging: microsecond histograms with
//! 3 significant digits up to an hour, and their V2 + deflate encoding (base64 in JSON).

use std::io::Read;

use anyhow::{Context, Result};
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Largest latency a histogram holds exactly (one hour, in microseconds); larger values saturate.
pub const MAX_MICROS: u64 = 3_600_000_000;

/// Creates an empty latency histogram: microseconds, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 3).expect("static histogram bounds are valid")
}

/// V2 + deflate bytes, the encoding HdrHistogram's tools exchange.
pub fn encode(histogram: &Histogram<u64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        .expect("serializing into memory cannot fail");
    bytes
}

/// [`encode`], then base64: how histograms travel in JSON.
pub fn to_base64(histogram: &Histogram<u64>) -> String {
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

/// Checks the V2 header of `bytes` (deflated or not) before the decoder sizes anything by it:
/// the payload length and the significant digits, which decide what decoding allocates.
fn check_header(bytes: &[u8]) -> Result<()> {
    let word = |bytes: &[u8], at: usize| {
        bytes
            .get(at..at + 4)
            .map(|word| u32::from_be_bytes(word.try_into().expect("four bytes")))
    };
    let mut header = [0u8; 16];
    match word(bytes, 0) {
        Some(V2_COOKIE) => match bytes.get(..16) {
            Some(head) => header.copy_from_slice(head),
            None => anyhow::bail!("a histogram header is cut short"),
        },
        Some(V2_DEFLATE_COOKIE) => {
            let deflated = bytes.get(8..).unwrap_or_default();
            flate2::read::ZlibDecoder::new(deflated)
                .read_exact(&mut header)
                .context("a histogram header is not deflated")?;
        }
        _ => anyhow::bail!("not an HdrHistogram V2 encoding"),
    }
    let field = |at| word(&header, at).expect("the header holds 16 bytes");
    let (payload, digits) = (field(4), field(12));
    if payload > MAX_PAYLOAD {
        anyhow::bail!("a histogram declares {payload} bytes of counts, more than {MAX_PAYLOAD}");
    }
    if digits > MAX_DECODED_DIGITS {
        anyhow::bail!(
            "a histogram has {digits} significant digits, more than {MAX_DECODED_DIGITS}"
        );
    }
    Ok(())
}

/// The number of values `histogram` holds, or an error when they pass 2^64 (its own count then
/// wraps, and its percentiles read 0).
pub fn checked_len(histogram: &Histogram<u64>) -> Result<u64> {
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

/// Decodes [`encode`]d bytes.
pub fn decode(bytes: &[u8]) -> Result<Histogram<u64>> {
    check_header(bytes)?;
    let decoded: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|error| anyhow::anyhow!("{error:?}"))
        .context("not an HdrHistogram V2 encoding")?;
    if (decoded.low(), decoded.high(), decoded.sigfig()) == (1, MAX_MICROS, 3) {
        checked_len(&decoded)?;
        return Ok(decoded);
    }
    // Re-home the values in the standard bounds so histograms from anywhere add up.
    let mut histogram = new_histogram();
    histogram
        .add(&decoded)
        .context("histogram values out of range")?;
    checked_len(&histogram)?;
    Ok(histogram)
}

/// Decodes a [`to_base64`] string.
pub fn from_base64(text: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .context("a histogram is not valid base64")?;
    decode(&bytes)
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
