//! Kubernetes resource quantities (`100m`, `1.5`, `128Mi`, `1e3`, `2G`), parsed exactly.
//!
//! A quantity is kept as an integer number of milli-units, which is exact for every
//! quantity the scheduler cares about (CPU in millicores, memory in bytes times 1000).
//! Conversions round up, as `resource.Quantity.MilliValue()` and `Value()` do.

use std::fmt;

/// A parse failure, with the text that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {text:?}: {why} (expected a number with an optional suffix such as 100m, 1.5, 512Mi, 2G or 1e3)")]
pub struct QuantityError {
    pub text: String,
    pub why: &'static str,
}

/// A parsed quantity, in milli-units (1 CPU = 1000, 1 byte of memory = 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Quantity {
    milli: i128,
}

impl Quantity {
    pub fn from_milli(milli: i128) -> Self {
        Quantity { milli }
    }

    /// The value in milli-units (`MilliValue()`), saturated to i64.
    pub fn milli_value(self) -> i64 {
        clamp_i64(self.milli)
    }

    /// The value in whole units, rounded up (`Value()`), saturated to i64.
    pub fn value(self) -> i64 {
        clamp_i64(div_ceil(self.milli, 1000))
    }

    /// The value in milli-units, or None when it does not fit an i64.
    pub fn checked_milli_value(self) -> Option<i64> {
        i64::try_from(self.milli).ok()
    }

    /// The value in whole units, rounded up, or None when it does not fit an i64.
    pub fn checked_value(self) -> Option<i64> {
        i64::try_from(div_ceil(self.milli, 1000)).ok()
    }

    pub fn is_negative(self) -> bool {
        self.milli < 0
    }

    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        parse(text)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.milli % 1000 == 0 {
            write!(f, "{}", self.milli / 1000)
        } else {
            write!(f, "{}m", self.milli)
        }
    }
}

fn clamp_i64(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

fn div_ceil(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && (a > 0) == (b > 0) {
        q + 1
    } else {
        q
    }
}

fn err(text: &str, why: &'static str) -> QuantityError {
    QuantityError {
        text: text.to_string(),
        why,
    }
}

fn parse(text: &str) -> Result<Quantity, QuantityError> {
    let s = text.trim();
    if s.is_empty() {
        return Err(err(text, "empty"));
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let negative = match bytes[0] {
        b'-' => {
            i += 1;
            true
        }
        b'+' => {
            i += 1;
            false
        }
        _ => false,
    };
    // digits and one optional decimal point
    let mut mantissa: i128 = 0;
    let mut frac_digits: i32 = 0;
    let mut seen_dot = false;
    let mut any_digit = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            any_digit = true;
            if mantissa > i128::MAX / 100 {
                return Err(err(text, "too many digits"));
            }
            mantissa = mantissa * 10 + i128::from(c - b'0');
            if seen_dot {
                frac_digits += 1;
            }
        } else if c == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if !any_digit {
        return Err(err(text, "no digits"));
    }
    let suffix = &s[i..];
    // (power of ten, binary multiplier)
    let (mut exp10, mult): (i32, i128) = match suffix {
        "" => (0, 1),
        "n" => (-9, 1),
        "u" => (-6, 1),
        "m" => (-3, 1),
        "k" => (3, 1),
        "M" => (6, 1),
        "G" => (9, 1),
        "T" => (12, 1),
        "P" => (15, 1),
        "E" => (18, 1),
        "Ki" => (0, 1 << 10),
        "Mi" => (0, 1 << 20),
        "Gi" => (0, 1 << 30),
        "Ti" => (0, 1 << 40),
        "Pi" => (0, 1 << 50),
        "Ei" => (0, 1 << 60),
        other if other.starts_with('e') || other.starts_with('E') => {
            let e: i32 = other[1..].parse().map_err(|_| err(text, "bad exponent"))?;
            if !(-30..=30).contains(&e) {
                return Err(err(text, "exponent out of range"));
            }
            (e, 1)
        }
        _ => return Err(err(text, "unknown suffix")),
    };
    exp10 -= frac_digits;
    // milli-units: multiply by 1000
    exp10 += 3;
    let mut v = mantissa
        .checked_mul(mult)
        .ok_or_else(|| err(text, "too large"))?;
    if exp10 >= 0 {
        for _ in 0..exp10 {
            v = v.checked_mul(10).ok_or_else(|| err(text, "too large"))?;
        }
    } else {
        let mut d: i128 = 1;
        for _ in 0..(-exp10) {
            d = d.checked_mul(10).ok_or_else(|| err(text, "too small"))?;
        }
        v = div_ceil(v, d);
    }
    Ok(Quantity {
        milli: if negative { -v } else { v },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_forms() {
        for (s, milli) in [
            ("100m", 100),
            ("1", 1000),
            ("1.5", 1500),
            ("0.1", 100),
            ("250000u", 250),
            ("500000000n", 500),
            ("1n", 1),
            ("2e3", 2_000_000),
            ("+3", 3000),
        ] {
            assert_eq!(Quantity::parse(s).unwrap().milli_value(), milli, "{s}");
        }
    }

    #[test]
    fn parses_memory_forms() {
        for (s, bytes) in [
            ("128Mi", 128 * 1024 * 1024),
            ("1Gi", 1 << 30),
            ("1G", 1_000_000_000),
            ("1k", 1000),
            ("1Ki", 1024),
            ("1.5Gi", 3 << 29),
            ("100", 100),
            ("0.5", 1),
        ] {
            assert_eq!(Quantity::parse(s).unwrap().value(), bytes, "{s}");
        }
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "abc", "1x", "--1", "1e", "Mi", "1.2.3"] {
            assert!(Quantity::parse(s).is_err(), "{s} should fail");
        }
    }

    #[test]
    fn rounds_up_like_kubernetes() {
        // Value() rounds up: 1500m -> 2
        assert_eq!(Quantity::parse("1500m").unwrap().value(), 2);
        assert_eq!(Quantity::parse("1.0001m").unwrap().milli_value(), 2);
        assert_eq!(Quantity::parse("-1500m").unwrap().value(), -1);
    }
}
