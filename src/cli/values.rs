//! Value syntax of the flags that only the flags have: h2load's `-p` spellings ([`NoTlsProto`],
//! which `app` turns into the plan's protocol) and the count parser with SI suffixes and a
//! range. The value types that mean something below (`--proto`, `--io`, `--arrival`, `--color`,
//! ...) live in the layer that reads them.

use clap::ValueEnum;

use crate::units::parse_count;

/// Values of h2load's `-p/--no-tls-proto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum NoTlsProto {
    /// HTTP/2 by prior knowledge.
    H2c,
    /// HTTP/1.1.
    #[value(name = "http/1.1", alias = "h1")]
    Http11,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
