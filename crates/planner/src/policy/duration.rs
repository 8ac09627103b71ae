//! Go duration strings (`metav1.Duration`): `300ms`, `1.5h`, `2h45m`, `10s`.

/// Parses a Go duration into whole seconds (rounded down). Negative durations are rejected.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    // At most i64::MAX nanoseconds: the seconds fit.
    parse_go_duration(text).map(|d| d.as_secs() as i64)
}

/// Parses a Go duration, to the nanosecond. Negative durations are rejected.
pub fn parse_go_duration(text: &str) -> Result<std::time::Duration, String> {
    let s = text.trim();
    if s == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    if s.is_empty() {
        return Err("empty duration; use a Go duration such as 30m, 1h or 24h".into());
    }
    if s.starts_with('-') {
        return Err(format!(
            "{text:?} is negative; give a duration of 0 or more, such as 30s, 5m or 1h"
        ));
    }
    // Go's time.ParseDuration takes a leading `+`.
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.is_empty() {
        return Err(format!(
            "{text:?} is not a duration; use a Go duration such as 30m, 1h or 24h"
        ));
    }
    let mut rest = s;
    let mut total_nanos: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| {
                format!("{text:?} has a number without a unit; use units h, m, s, ms")
            })?;
        if num_len == 0 {
            return Err(format!(
                "{text:?} is not a duration; use a Go duration such as 30m, 1h or 24h"
            ));
        }
        let n: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("{text:?} has a bad number"))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => {
                return Err(format!(
                    "{text:?} has unknown unit {unit:?}; use h, m, s, ms, us or ns"
                ))
            }
        };
        total_nanos += n * scale;
    }
    // Go's durations are int64 nanoseconds: time.ParseDuration refuses longer ones.
    if total_nanos > i64::MAX as f64 {
        return Err(format!(
            "{text:?} is longer than the longest Go duration, 2562047h47m16.854775807s"
        ));
    }
    Ok(std::time::Duration::from_nanos(total_nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::{parse_duration, parse_go_duration};

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("5m").unwrap(), 300);
        assert_eq!(parse_duration("1h30m").unwrap(), 5400);
        assert_eq!(parse_duration("1.5h").unwrap(), 5400);
        assert_eq!(parse_duration("1500ms").unwrap(), 1);
        assert_eq!(parse_duration("0").unwrap(), 0);
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("-5m").is_err());
        assert!(parse_duration("").is_err());
        // Past int64 nanoseconds: refused, as Go refuses it, not saturated.
        assert_eq!(parse_duration("2562047h").unwrap(), 2_562_047 * 3600);
        assert!(parse_duration("2562048h").is_err());
        assert!(parse_duration(&format!("{}h", "9".repeat(400))).is_err());
        assert_eq!(
            parse_go_duration("1.5s").unwrap(),
            std::time::Duration::from_millis(1500)
        );
        assert_eq!(
            parse_go_duration("500ms").unwrap(),
            std::time::Duration::from_millis(500)
        );
    }

    #[test]
    fn negative_and_signed_durations() {
        let e = parse_go_duration("-5m").unwrap_err();
        assert_eq!(
            e,
            "\"-5m\" is negative; give a duration of 0 or more, such as 30s, 5m or 1h"
        );
        assert_eq!(parse_duration("+5m").unwrap(), 300);
        assert!(parse_go_duration("+").is_err());
        assert!(parse_go_duration("soon")
            .unwrap_err()
            .contains("not a duration"));
    }
}
