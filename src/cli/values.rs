//! The value enums of the flags (`--proto`, `--io`, `-p`, `--color`): their spellings and help
//! texts; what each value means is given by their readers (plan, report).

use clap::ValueEnum;

/// The protocol spoken to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtoArg {
    /// HTTP/1.1 (keep-alive pool; pipelined when -m > 1).
    #[value(name = "h1", alias = "http/1.1")]
    H1,
    /// HTTP/2 over cleartext TCP by prior knowledge.
    H2c,
    /// HTTP/2 over TLS (ALPN h2); fails if the server selects anything else.
    H2,
    /// HTTP/1.1 request with `Upgrade: h2c`, HTTP/2 on the same connection after `101`.
    #[value(name = "h2c-upgrade")]
    H2cUpgrade,
    /// Over TLS: whatever ALPN selects (h2 or http/1.1).
    Auto,
    /// HTTP/3 over QUIC (UDP, the URL's port); https:// URLs only.
    H3,
}

/// Values of `--io`: how TCP and unix-socket connections do their I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum IoArg {
    /// io_uring where the kernel allows it, else epoll (said once on stderr with the reason).
    Auto,
    /// io_uring, one ring per thread; the run fails (status 1) if the kernel refuses it.
    Uring,
    /// Readiness-based I/O on epoll.
    #[default]
    Epoll,
}

/// How `--rate`, `--stages` and `--find-max` space their send times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Arrival {
    /// Evenly: one every 1/rate (h2load's and wrk2's schedule).
    #[default]
    Uniform,
    /// A Poisson process: exponential gaps of mean 1/rate, as independent users arrive; drawn
    /// from --seed, so a run with the same seed repeats its send times exactly.
    Poisson,
}

impl Arrival {
    /// Its name in the report and in `--arrival`.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Uniform => "uniform",
            Arrival::Poisson => "poisson",
        }
    }
}

/// Values of h2load's `-p/--no-tls-proto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NoTlsProto {
    /// HTTP/2 by prior knowledge.
    H2c,
    /// HTTP/1.1.
    #[value(name = "http/1.1", alias = "h1")]
    Http11,
}

/// Values of `--round-order`: how the cells of a round after the first are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum RoundOrder {
    /// The reverse of the round before: a drift over the run hits every cell alike.
    #[default]
    Alternate,
    /// A new order each round, drawn from --seed.
    Shuffle,
}

impl RoundOrder {
    /// Its name in the report and in `--round-order`.
    pub fn name(self) -> &'static str {
        match self {
            RoundOrder::Alternate => "alternate",
            RoundOrder::Shuffle => "shuffle",
        }
    }
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

/// The value parser of a count flag within `low..=high`, SI suffixes allowed (see
/// [`parse_count`]), as the type `T` the flag keeps (`u64`, `usize`, `u32`, `u8`):
/// `value_parser = count::<usize>(2, 100)`.
pub(crate) fn count<T>(
    low: u64,
    high: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |text: &str| {
        let value = parse_count(text)?;
        if !(low..=high).contains(&value) {
            let shown = match value.to_string() == text {
                true => String::new(),
                false => format!(" ({value})"),
            };
            return Err(format!("'{text}'{shown} is not in {low}..={high}"));
        }
        // Within `low..=high`, which the caller chose to fit `T`.
        T::try_from(value).map_err(|_| format!("'{text}' is too large"))
    }
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
    fn a_count_flag_checks_its_range_after_the_suffix() {
        let clients = count::<u64>(1, 1_000_000);
        assert_eq!(clients("1k"), Ok(1_000));
        assert_eq!(clients("1M"), Ok(1_000_000));
        assert_eq!(
            clients("2M"),
            Err("'2M' (2000000) is not in 1..=1000000".to_owned())
        );
        assert_eq!(clients("0"), Err("'0' is not in 1..=1000000".to_owned()));
        let retries = count::<u8>(0, 100);
        assert_eq!(retries("0.1k"), Ok(100));
        assert!(retries("1k").is_err());
    }

    #[test]
    fn rates_take_si_suffixes() {
        assert_eq!(parse_si_number("1.5k"), Ok(1_500.0));
        assert_eq!(parse_si_number("2M"), Ok(2_000_000.0));
        assert_eq!(parse_si_number("0.5"), Ok(0.5));
        assert!(parse_si_number("5m").unwrap_err().contains("milli"));
        assert!(parse_si_number("fast").is_err());
    }
}
