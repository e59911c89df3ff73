//! HdrHistogram conventions shared by recording, reports and merging: microsecond histograms with
//! 3 significant digits up to an hour, and their V2 + deflate encoding (base64 in JSON).

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

/// Decodes [`encode`]d bytes.
pub fn decode(bytes: &[u8]) -> Result<Histogram<u64>> {
    let decoded: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|error| anyhow::anyhow!("{error:?}"))
        .context("not an HdrHistogram V2 encoding")?;
    // Re-home the values in the standard bounds so histograms from anywhere add up.
    let mut histogram = new_histogram();
    histogram
        .add(&decoded)
        .context("histogram values out of range")?;
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
}
