//! Parsing and formatting of durations, byte sizes, percentages, counts and rates with SI
//! suffixes (`10k`, `1.5M`) and times, in the notation h2load uses, and `counted` (`2 requests`):
//! below every layer that reads or prints them.

use std::time::{Duration, SystemTime};

/// Every duration flag (`-D`, timeouts, `--interval`, ...), also after `--scale`: a limit like
/// those of src/limits.rs, kept here because [`parse_duration`] bounds by it.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);

/// Parses a duration such as `500ms`, `2s`, `1.5m`, `1h` or `30` (bare numbers are seconds, as in
/// h2load), up to [`MAX_DURATION`] (longer is a typo, and products with `--scale` stay far from
/// `Duration`'s range).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (examples: 500ms, 2s, 1m, 1h)"))?;
    let seconds_per_unit = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "'{text}' has an unknown unit '{unit}' (use us, ms, s, m or h)"
            ))
        }
    };
    let seconds = value * seconds_per_unit;
    if !seconds.is_finite() || seconds > MAX_DURATION.as_secs_f64() {
        return Err(format!(
            "'{text}' is longer than 30 days (720h), the longest duration accepted"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses a positive duration; zero is rejected because every duration flag means "a limit".
pub(crate) fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration.is_zero() {
        return Err(format!("'{text}' must be greater than zero"));
    }
    Ok(duration)
}

/// Parses a percentage such as `10%`, `2.5%` or `10` (the sign is optional), from 0 to 1000.
pub(crate) fn parse_percent(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let number = trimmed.strip_suffix('%').unwrap_or(trimmed).trim_end();
    match number.parse::<f64>() {
        Ok(value) if (0.0..=1000.0).contains(&value) => Ok(value),
        Ok(_) => Err(format!("'{text}' must be from 0% to 1000%")),
        Err(_) => Err(format!(
            "'{text}' is not a percentage (examples: 10%, 2.5%)"
        )),
    }
}

/// Parses a byte size such as `16K`, `1M`, `2G` or `4096` (binary multiples, as in h2load).
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, multiplier) = match text.char_indices().last() {
        Some((at, 'K' | 'k')) => (&text[..at], 1u64 << 10),
        Some((at, 'M' | 'm')) => (&text[..at], 1 << 20),
        Some((at, 'G' | 'g')) => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (examples: 4096, 16K, 1M, 1G)"))?;
    value
        .checked_mul(multiplier)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// What an SI suffix multiplies a count or a rate by: `k` or `K` 10^3, `M` 10^6, `G` 10^9 —
/// decimal, as oha, wrk and k6 read `10k` (sizes such as `-f 16K` stay binary: they count
/// bytes). Case matters for `M` and `G` only: a lowercase `m` is SI's milli (and `-D`'s
/// minutes), so `10m` is refused rather than guessed.
const SI_SUFFIXES: [(char, u64); 4] = [
    ('k', 1_000),
    ('K', 1_000),
    ('M', 1_000_000),
    ('G', 1_000_000_000),
];

/// Splits `1.5k` into its number, `1.5`, and what the suffix multiplies it by (1 without one).
fn split_si(text: &str) -> Result<(&str, u64), String> {
    if text.ends_with('m') {
        return Err(format!(
            "'{text}': m is SI's milli; write M for millions (10M), or -D for a duration"
        ));
    }
    Ok(SI_SUFFIXES
        .iter()
        .find_map(|&(suffix, multiplier)| {
            text.strip_suffix(suffix).map(|number| (number, multiplier))
        })
        .unwrap_or((text, 1)))
}

/// A whole count in decimal with an optional SI suffix (`10000`, `10k`, `1.5k`, `2M`), computed
/// exactly (no float rounding): `1.5` or `1.0005k` is not whole and is refused, and so is a count
/// beyond `u64`.
pub(crate) fn parse_count(text: &str) -> Result<u64, String> {
    let (number, multiplier) = split_si(text)?;
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || number.ends_with('.') {
        return Err(format!(
            "'{text}' is not a count (examples: 500, 10k, 1.5k, 2M)"
        ));
    }
    let too_large = || format!("'{text}' is too large a count");
    // Trailing zeros of the fraction change nothing; what remains must be cancelled by the
    // multiplier, so it holds at most nine digits and cannot overflow below.
    let fraction = fraction.trim_end_matches('0');
    let scale = 10u128
        .checked_pow(u32::try_from(fraction.len()).map_err(|_| too_large())?)
        .filter(|scale| *scale <= 1_000_000_000);
    let exact = whole
        .parse::<u128>()
        .ok()
        .and_then(|whole| whole.checked_mul(u128::from(multiplier)));
    let (Some(scale), Some(exact)) = (scale, exact) else {
        return Err(match exact {
            None => too_large(),
            Some(_) => not_whole(text),
        });
    };
    let parts = match fraction {
        "" => 0,
        digits => digits.parse::<u128>().map_err(|_| not_whole(text))? * u128::from(multiplier),
    };
    if parts % scale != 0 {
        return Err(not_whole(text));
    }
    u64::try_from(exact + parts / scale).map_err(|_| too_large())
}

fn not_whole(text: &str) -> String {
    format!("'{text}' is not a whole number: a count has no fraction")
}

/// A rate, or any number of events, with an optional SI suffix (`1.5k` is 1500): the number
/// itself, checked for its range by its flag.
pub(crate) fn parse_si_number(text: &str) -> Result<f64, String> {
    let (number, multiplier) = split_si(text)?;
    // `inf` and `nan` parse, and go on to fail their flag's range check.
    number
        .parse::<f64>()
        .map(|value| value * multiplier as f64)
        .map_err(|_| format!("'{text}' is not a number (examples: 500, 1.5k, 2M)"))
}

/// Parses an RFC 3339 time such as `2026-11-21T10:00:00Z` or `2026-11-21T11:00:00.250+01:00`.
///
/// jiff checks the calendar (no 31 February) and does the arithmetic; it also reads the wider
/// ISO 8601 / RFC 9557 syntax (`+0100`, `[Europe/Paris]`), so the RFC 3339 shape is checked first:
/// machines that start together must agree on what the time means.
pub(crate) fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let invalid = || format!("'{text}' is not an RFC 3339 time (example: 2026-11-21T10:00:00Z)");
    if !has_rfc3339_shape(text) {
        return Err(invalid());
    }
    let timestamp: jiff::Timestamp = text
        .parse()
        .map_err(|error| format!("{}: {error}", invalid()))?;
    Ok(SystemTime::from(timestamp))
}

/// `8,450`: a rate or a count rounded to a whole number, its thousands grouped.
pub(crate) fn grouped(rate: f64) -> String {
    let digits = format!("{:.0}", rate.max(0.0));
    let mut out = String::new();
    for (position, digit) in digits.chars().enumerate() {
        if position > 0 && (digits.len() - position) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `time` in RFC 3339, UTC, to the millisecond (`2026-11-21T10:00:00.250Z`): what
/// [`parse_rfc3339`] reads back.
pub(crate) fn format_rfc3339(time: SystemTime) -> String {
    jiff::Timestamp::try_from(time)
        .and_then(|timestamp| timestamp.round(jiff::Unit::Millisecond))
        .map_or_else(
            |_| "1970-01-01T00:00:00Z".to_owned(),
            |timestamp| timestamp.to_string(),
        )
}

/// Whether `text` is `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)` (RFC 3339 §5.6, which
/// also allows a lower-case `t`/`z` and a space between date and time).
fn has_rfc3339_shape(text: &str) -> bool {
    let bytes = text.as_bytes();
    let matches = |template: &[u8], bytes: &[u8]| {
        template.len() == bytes.len()
            && template.iter().zip(bytes).all(|(&want, &got)| match want {
                b'd' => got.is_ascii_digit(),
                b'T' => matches!(got, b'T' | b't' | b' '),
                other => other == got,
            })
    };
    let Some((date_time, rest)) = bytes.split_at_checked(19) else {
        return false;
    };
    let digits = rest
        .iter()
        .skip(1)
        .take_while(|b| b.is_ascii_digit())
        .count();
    let zone = match rest.first() {
        Some(b'.') if digits > 0 => &rest[1 + digits..],
        _ => rest,
    };
    matches(b"dddd-dd-ddTdd:dd:dd", date_time)
        && (matches!(zone, b"Z" | b"z") || matches(b"+dd:dd", zone) || matches(b"-dd:dd", zone))
}

/// Formats microseconds like h2load: `185us`, `1.93ms`, `2.00s`.
pub(crate) fn format_micros(micros: f64) -> String {
    if micros >= 1e6 {
        format!("{:.2}s", micros / 1e6)
    } else if micros >= 1e3 {
        format!("{:.2}ms", micros / 1e3)
    } else {
        format!("{}us", micros as u64)
    }
}

/// Formats a byte count in decimal SI units, as network engineers and curl count (1 kB = 1000 B,
/// 1 MB = 10^6 B, 1 GB = 10^9 B): `107.52 kB`, `1.42 MB`, `84.00 B`. h2load divides by 1024 and
/// calls the result `KB`; one base for every size and rate the report prints keeps them
/// comparable with each other and with curl's and the network's figures.
pub(crate) fn format_bytes(bytes: f64) -> String {
    decimal(bytes, "B")
}

/// Formats a rate of bytes per second as bits per second in decimal SI units, the network's
/// unit: `2.62 Gbit/s`, `8.16 Mbit/s`.
pub(crate) fn format_bits_per_s(bytes_per_s: f64) -> String {
    decimal(bytes_per_s * 8.0, "bit/s")
}

/// A rate of bytes per second both ways: `2.62 Gbit/s (327.50 MB/s)`.
pub(crate) fn format_throughput(bytes_per_s: f64) -> String {
    format!(
        "{} ({}/s)",
        format_bits_per_s(bytes_per_s),
        format_bytes(bytes_per_s)
    )
}

/// `value` with two decimals under the largest decimal prefix (k, M, G, T) that leaves it at
/// least 1, then `unit`.
fn decimal(value: f64, unit: &str) -> String {
    const PREFIXES: [&str; 5] = ["", "k", "M", "G", "T"];
    let mut value = value;
    let mut prefix = 0;
    // 999.996 would print as `1000.00`: from there on it takes the next prefix.
    while value >= 999.995 && prefix + 1 < PREFIXES.len() {
        value /= 1000.0;
        prefix += 1;
    }
    format!("{value:.2} {}{unit}", PREFIXES[prefix])
}

/// `1 request`, `2 requests`: a count and its noun, singular or plural (nouns that take an `s`).
pub(crate) fn counted(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_si_suffixes_exactly() {
        for (text, value) in [
            ("0", 0),
            ("10000", 10_000),
            ("10k", 10_000),
            ("10K", 10_000),
            ("1.5k", 1_500),
            ("1.500k", 1_500),
            ("2M", 2_000_000),
            ("0.000001M", 1),
            ("1.000000001G", 1_000_000_001),
            ("3G", 3_000_000_000),
            ("18446744073709551615", u64::MAX),
        ] {
            assert_eq!(parse_count(text), Ok(value), "{text}");
        }
    }

    #[test]
    fn counts_that_are_not_whole_or_too_large_say_so() {
        for (text, says) in [
            ("1.5", "not a whole number"),
            ("1.0005k", "not a whole number"),
            ("0.0000000001G", "not a whole number"),
            ("10m", "m is SI's milli"),
            ("18446744073709551616", "too large"),
            ("18446744073709552k", "too large"),
            ("999999999999999999999999999999999999999999G", "too large"),
            ("", "is not a count"),
            ("k", "is not a count"),
            ("1.k", "is not a count"),
            ("-1", "is not a count"),
            ("+1", "is not a count"),
            ("1e3", "is not a count"),
            ("1kk", "is not a count"),
            ("1 k", "is not a count"),
        ] {
            let error = parse_count(text).expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn rates_take_si_suffixes() {
        assert_eq!(parse_si_number("1.5k"), Ok(1_500.0));
        assert_eq!(parse_si_number("2M"), Ok(2_000_000.0));
        assert_eq!(parse_si_number("0.5"), Ok(0.5));
        assert!(parse_si_number("5m").unwrap_err().contains("milli"));
        assert!(parse_si_number("fast").is_err());
    }
    use std::time::UNIX_EPOCH;

    #[test]
    fn percentages_take_an_optional_sign() {
        assert_eq!(parse_percent("10%"), Ok(10.0));
        assert_eq!(parse_percent("10"), Ok(10.0));
        assert_eq!(parse_percent(" 2.5 % "), Ok(2.5));
        assert_eq!(parse_percent("0"), Ok(0.0));
        for bad in ["-1%", "1001%", "ten", "%", "NaN", "inf"] {
            assert!(parse_percent(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_take_h2load_units() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("2x")
            .unwrap_err()
            .contains("unknown unit 'x'"));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_positive_duration("0s").is_err());
        assert_eq!(parse_duration("720h").unwrap(), MAX_DURATION);
        for huge in ["721h", "99999999999999999999999", "1e300", "inf", "NaN"] {
            assert!(parse_duration(huge).is_err(), "{huge}");
        }
    }

    #[test]
    fn sizes_take_binary_multiples() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("16K").unwrap(), 16384);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert!(parse_size("K").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }

    #[test]
    fn rfc3339_times_format_in_utc_and_read_back() {
        let time = UNIX_EPOCH + Duration::from_millis(1_795_773_600_250);
        let text = format_rfc3339(time);
        assert_eq!(text, "2026-11-27T10:00:00.25Z");
        assert_eq!(parse_rfc3339(&text), Ok(time));
    }

    #[test]
    fn rfc3339_times_parse() {
        let at = |text: &str| {
            parse_rfc3339(text).map(|time| time.duration_since(UNIX_EPOCH).unwrap().as_secs_f64())
        };
        assert_eq!(at("1970-01-01T00:00:00Z"), Ok(0.0));
        assert_eq!(at("2026-11-21T10:00:00Z"), Ok(1_795_255_200.0));
        assert_eq!(at("2026-11-21T11:00:00.5+01:00"), Ok(1_795_255_200.5));
        assert_eq!(at("2000-02-29T00:00:00-00:30"), Ok(951_784_200.0));
        for bad in [
            "2026-11-21",
            "2026-13-01T00:00:00Z",
            "2026-11-21T10:00:00",
            "2026-11-21T10:00:00+0100",
            "2026-11-21T10:00:00+01:00[Europe/Paris]",
            "2026-11-21T10:00:00.Z",
            "2026-02-31T00:00:00Z",
            "2026-11-21T24:00:00Z",
            "soon",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_match_h2load() {
        assert_eq!(format_micros(185.4), "185us");
        assert_eq!(format_micros(1930.0), "1.93ms");
        assert_eq!(format_micros(2_000_000.0), "2.00s");
    }

    #[test]
    fn sizes_and_rates_print_in_decimal_si_units() {
        assert_eq!(format_bytes(107_517.0), "107.52 kB");
        assert_eq!(format_bytes(10.0), "10.00 B");
        assert_eq!(format_bytes(0.0), "0.00 B");
        assert_eq!(format_bytes(999.0), "999.00 B");
        assert_eq!(format_bytes(999.996), "1.00 kB");
        assert_eq!(format_bytes(1_000.0), "1.00 kB");
        assert_eq!(format_bytes(1_048_576.0), "1.05 MB");
        assert_eq!(format_bytes(2_801_470.0), "2.80 MB");
        assert_eq!(format_bytes(1_073_741_824.0), "1.07 GB");
        assert_eq!(format_bytes(999_999_999.0), "1.00 GB");
        assert_eq!(format_bytes(2.5e12), "2.50 TB");
        assert_eq!(format_bytes(3e15), "3000.00 TB");
        assert_eq!(format_bits_per_s(1.0), "8.00 bit/s");
        assert_eq!(format_bits_per_s(125.0), "1.00 kbit/s");
        assert_eq!(format_bits_per_s(1_020_000.0), "8.16 Mbit/s");
        assert_eq!(format_bits_per_s(327_500_000.0), "2.62 Gbit/s");
        assert_eq!(
            format_throughput(327_500_000.0),
            "2.62 Gbit/s (327.50 MB/s)"
        );
        assert_eq!(format_throughput(0.0), "0.00 bit/s (0.00 B/s)");
    }
}
