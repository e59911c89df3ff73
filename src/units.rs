//! Parsing and formatting of durations and byte sizes, in the notation h2load uses.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parses a duration such as `500ms`, `2s`, `1.5m`, `1h` or `30` (bare numbers are seconds, as in h2load).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
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
    if !seconds.is_finite() || seconds > 1e9 {
        return Err(format!("'{text}' is too long a duration"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses a positive duration; zero is rejected because every duration flag means "a limit".
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration.is_zero() {
        return Err(format!("'{text}' must be greater than zero"));
    }
    Ok(duration)
}

/// Parses a byte size such as `16K`, `1M`, `2G` or `4096` (binary multiples, as in h2load).
pub fn parse_size(text: &str) -> Result<u64, String> {
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

/// Parses an RFC 3339 time such as `2026-11-21T10:00:00Z` or `2026-11-21T11:00:00.250+01:00`.
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let invalid = || format!("'{text}' is not an RFC 3339 time (example: 2026-11-21T10:00:00Z)");
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let part = text.get(range).ok_or_else(invalid)?;
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().map_err(|_| invalid())
        } else {
            Err(invalid())
        }
    };
    let separators_ok = bytes.len() >= 20
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && matches!(bytes[10], b'T' | b't' | b' ')
        && bytes[13] == b':'
        && bytes[16] == b':';
    if !separators_ok {
        return Err(invalid());
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(invalid());
    }
    let mut rest = &text[19..];
    let mut fraction = Duration::ZERO;
    if let Some(after_dot) = rest.strip_prefix('.') {
        let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(invalid());
        }
        fraction = Duration::from_secs_f64(
            format!("0.{}", &after_dot[..digits])
                .parse::<f64>()
                .map_err(|_| invalid())?,
        );
        rest = &after_dot[digits..];
    }
    let offset_seconds = match rest {
        "Z" | "z" => 0,
        zone if zone.len() == 6
            && matches!(zone.as_bytes()[0], b'+' | b'-')
            && zone.as_bytes()[3] == b':' =>
        {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let hours: i64 = zone[1..3].parse().map_err(|_| invalid())?;
            let minutes: i64 = zone[4..6].parse().map_err(|_| invalid())?;
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return Err(invalid()),
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_seconds;
    let seconds = u64::try_from(seconds).map_err(|_| invalid())?;
    Ok(UNIX_EPOCH + Duration::from_secs(seconds) + fraction)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Formats microseconds like h2load: `185us`, `1.93ms`, `2.00s`.
pub fn format_micros(micros: f64) -> String {
    if micros >= 1e6 {
        format!("{:.2}s", micros / 1e6)
    } else if micros >= 1e3 {
        format!("{:.2}ms", micros / 1e3)
    } else {
        format!("{}us", micros as u64)
    }
}

/// Formats a byte count with binary units like h2load: `105.00KB`, `1.42MB`.
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2}{}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(format_bytes(107_517.0), "105.00KB");
        assert_eq!(format_bytes(10.0), "10.00B");
    }
}
