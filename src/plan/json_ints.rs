//! Integers of a `--grpc-data` message that the JSON decoding would clamp or round. serde_json
//! reads a number written with a fraction or an exponent, or an integer past 64 bits, as an
//! `f64`; prost-reflect then casts it into a 64-bit field with `as`, which saturates (2^64 in a
//! `uint64` becomes 2^64 − 1, −2^63 − 1 in an `int64` becomes −2^63) and rounds past 2^53. The
//! 32-bit kinds and enums are range-checked there already. Here such a number in a field of an
//! integer kind is refused when it is 2^53 or more in magnitude, where an `f64` is no longer
//! exact (9007199254740993.0 reads as 2^53): the message a call sends is the one asked for, or
//! none.
//!
//! A scan of the text, which allocates nothing, finds whether the JSON holds such a number at all
//! (rare: per call, a rendered message is scanned once); only then is it read again with the
//! message's schema, to tell an integer field from a `double`.

use prost_reflect::{Kind, MessageDescriptor};
use serde_json::Value;

/// From this magnitude on, an `f64` does not hold every integer (2^53 + 1 reads as 2^53).
const EXACT: f64 = (1u64 << 53) as f64;

/// The first number of `json` (a message of type `message`) refused in an integer field, in
/// words; `None` when none is (or when `json` is not valid JSON, which the decoding reports).
pub(super) fn inexact_integer(json: &[u8], message: &MessageDescriptor) -> Option<String> {
    if !has_inexact_number(json) {
        return None;
    }
    let value: Value = serde_json::from_slice(json).ok()?;
    check_message(&value, message).err()
}

/// Whether `json` holds a number outside its strings that serde_json reads as an `f64` of
/// [`EXACT`] or more.
fn has_inexact_number(json: &[u8]) -> bool {
    let mut at = 0;
    let mut in_string = false;
    while let Some(&byte) = json.get(at) {
        at += 1;
        match byte {
            b'\\' if in_string => at += 1,
            b'"' => in_string = !in_string,
            b'-' | b'0'..=b'9' if !in_string => {
                let start = at - 1;
                while json.get(at).is_some_and(|byte| {
                    matches!(byte, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                }) {
                    at += 1;
                }
                if read_as_inexact_float(&json[start..at]) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// Whether a number token is read as an `f64` (a fraction, an exponent, or an integer past
/// 64 bits) of [`EXACT`] or more.
fn read_as_inexact_float(token: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(token) else {
        return false;
    };
    let integer = text.parse::<u64>().is_ok() || text.parse::<i64>().is_ok();
    !integer && text.parse::<f64>().is_ok_and(|value| value.abs() >= EXACT)
}

fn check_message(value: &Value, message: &MessageDescriptor) -> Result<(), String> {
    let Value::Object(fields) = value else {
        return Ok(());
    };
    for (key, value) in fields {
        let Some(field) = message
            .get_field_by_json_name(key)
            .or_else(|| message.get_field_by_name(key))
        else {
            continue;
        };
        let kind = field.kind();
        let name = field.name();
        match value {
            Value::Object(entries) if field.is_map() => {
                let Kind::Message(entry) = &kind else {
                    continue;
                };
                let value_kind = entry.map_entry_value_field().kind();
                for value in entries.values() {
                    check_value(value, &value_kind, name)?;
                }
            }
            Value::Array(items) if field.is_list() => {
                for item in items {
                    check_value(item, &kind, name)?;
                }
            }
            value => check_value(value, &kind, name)?,
        }
    }
    Ok(())
}

fn check_value(value: &Value, kind: &Kind, field: &str) -> Result<(), String> {
    match (kind, value) {
        (Kind::Message(message), Value::Object(_)) => check_message(value, message),
        // The wrappers of google/protobuf/wrappers.proto are written as their bare value.
        (Kind::Message(message), Value::Number(_)) => match message.get_field_by_name("value") {
            Some(wrapped) if message.package_name() == "google.protobuf" => {
                check_value(value, &wrapped.kind(), field)
            }
            _ => Ok(()),
        },
        (kind, Value::Number(number)) => match (integer_kind(kind), number.as_f64()) {
            (Some(kind), Some(float)) if number.is_f64() && float.abs() >= EXACT => Err(format!(
                "field {field} ({kind}): {number} is out of its range or not exact (an integer is refused, never clamped; past 2^53 write it with digits only, or as a string)"
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// The name of an integer kind; `None` for the others.
fn integer_kind(kind: &Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::Int32 => "int32",
        Kind::Sint32 => "sint32",
        Kind::Sfixed32 => "sfixed32",
        Kind::Uint32 => "uint32",
        Kind::Fixed32 => "fixed32",
        Kind::Int64 => "int64",
        Kind::Sint64 => "sint64",
        Kind::Sfixed64 => "sfixed64",
        Kind::Uint64 => "uint64",
        Kind::Fixed64 => "fixed64",
        Kind::Enum(_) => "enum",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_numbers_read_as_inexact_floats_are_found() {
        for (json, found) in [
            (
                &br#"{"a": 18446744073709551615, "b": -9223372036854775808}"#[..],
                false,
            ),
            (br#"{"a": 1.5, "b": 1e15, "c": 9007199254740991.0}"#, false),
            (br#"{"a": "18446744073709551616", "b\"": "1e300"}"#, false),
            (br#"{"a": 18446744073709551616}"#, true),
            (br#"{"a": -9223372036854775809}"#, true),
            (br#"{"a": [1, 1.8446744073709552e19]}"#, true),
            (br#"{"a": 9007199254740993.0}"#, true),
            (br#"{"d": 1e300}"#, true),
        ] {
            assert_eq!(has_inexact_number(json), found, "{}", json.escape_ascii());
        }
    }
}
