//! S3 timestamps, parsed as the one fixed ISO-8601 form S3 sends
//! (`2024-02-29T23:59:58.123Z`) rather than with a general date parser: listing thousands
//! of keys should not spend its time guessing date formats. Also the file time an upload
//! keeps in an object's metadata (`x-amz-meta-mtime`, seconds since the epoch).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};

/// Milliseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    pub fn unix_millis(self) -> i64 {
        self.0
    }

    /// The time `millis` milliseconds after 1970-01-01T00:00:00Z.
    pub fn from_unix_millis(millis: i64) -> Timestamp {
        Timestamp(millis)
    }

    /// Parse `YYYY-MM-DDTHH:MM:SS[.fff]Z`; anything else gives `None`.
    pub fn parse_iso8601(text: &str) -> Option<Timestamp> {
        let bytes = text.as_bytes();
        if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[10] != b'T' {
            return None;
        }
        if bytes[13] != b':' || bytes[16] != b':' || *bytes.last()? != b'Z' {
            return None;
        }
        let number = |range: std::ops::Range<usize>| -> Option<i64> {
            let digits = bytes.get(range)?;
            digits.iter().try_fold(0i64, |acc, &d| {
                d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0'))
            })
        };
        let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
        let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let millis = match &bytes[19..bytes.len() - 1] {
            [] => 0,
            [b'.', fraction @ ..] if !fraction.is_empty() => {
                let first_three = number(20..20 + fraction.len().min(3))?;
                // ".5" is 500 ms, ".05" is 50 ms.
                first_three * 10i64.pow(3 - fraction.len().min(3) as u32)
            }
            _ => return None,
        };
        let days = days_from_civil(year, month, day);
        Some(Timestamp(
            ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis,
        ))
    }
}

/// The last second of 9999: a stored file time past it is not a time anyone wrote.
const LATEST_FILE_TIME: u64 = 253_402_300_799;
/// The first second of year 1, as far before the epoch as a stored file time goes.
const EARLIEST_FILE_TIME: u64 = 62_135_596_800;

/// A file's modification time as parabyte and rclone store it in `x-amz-meta-mtime`:
/// seconds since the epoch with an optional fraction of up to 9 digits (`1700000000` or
/// `1700000000.123456789`), a time before 1970 negative as a whole (`-1.5` is a second
/// and a half before the epoch). Anything else, or a time outside the years 1 to 9999, is
/// `None`: a value another writer put there is never trusted beyond that form.
pub(crate) fn parse_file_time(text: &str) -> Option<SystemTime> {
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let (before_epoch, text) = match text.strip_prefix('-') {
        Some(magnitude) => (true, magnitude),
        None => (false, text),
    };
    let (seconds, fraction) = text.split_once('.').unwrap_or((text, ""));
    if !digits(seconds) || seconds.len() > 12 || (text.contains('.') && !digits(fraction)) {
        return None;
    }
    if fraction.len() > 9 {
        return None;
    }
    let limit = match before_epoch {
        true => EARLIEST_FILE_TIME,
        false => LATEST_FILE_TIME,
    };
    let seconds: u64 = seconds.parse().ok().filter(|s| *s <= limit)?;
    let nanos = match fraction {
        "" => 0,
        _ => format!("{fraction:0<9}").parse::<u32>().ok()?,
    };
    let magnitude = Duration::new(seconds, nanos);
    match before_epoch {
        true => UNIX_EPOCH.checked_sub(magnitude),
        false => Some(UNIX_EPOCH + magnitude),
    }
}

/// `time` as [`parse_file_time`] reads it back, to the nanosecond, before 1970 too.
pub(crate) fn format_file_time(time: SystemTime) -> String {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => format!("{}.{:09}", after.as_secs(), after.subsec_nanos()),
        Err(before) => {
            let before = before.duration();
            format!("-{}.{:09}", before.as_secs(), before.subsec_nanos())
        }
    }
}

impl From<Timestamp> for SystemTime {
    fn from(time: Timestamp) -> SystemTime {
        let millis = Duration::from_millis(time.0.unsigned_abs());
        if time.0 >= 0 {
            UNIX_EPOCH + millis
        } else {
            UNIX_EPOCH - millis
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, millis_of_day) = (self.0.div_euclid(86_400_000), self.0.rem_euclid(86_400_000));
        let (year, month, day) = civil_from_days(days);
        let seconds = millis_of_day / 1000;
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60,
            millis_of_day % 1000
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_file_times_in_parabytes_and_rclones_forms() {
        let at = |s, n| Some(UNIX_EPOCH + Duration::new(s, n));
        assert_eq!(parse_file_time("1700000000"), at(1_700_000_000, 0));
        assert_eq!(
            parse_file_time("1700000000.123456789"),
            at(1_700_000_000, 123_456_789)
        );
        assert_eq!(
            parse_file_time("1700000000.5"),
            at(1_700_000_000, 500_000_000)
        );
        assert_eq!(parse_file_time("0"), at(0, 0));
        assert_eq!(
            parse_file_time("253402300799.999999999"),
            at(253_402_300_799, 999_999_999)
        );
        assert_eq!(
            parse_file_time("-1.5"),
            UNIX_EPOCH.checked_sub(Duration::new(1, 500_000_000))
        );
        assert_eq!(
            parse_file_time("-62135596800"),
            UNIX_EPOCH.checked_sub(Duration::from_secs(62_135_596_800))
        );
        for garbage in [
            "",
            "-",
            "--1",
            "-.5",
            "-62135596801",
            "1700000000.",
            ".5",
            "1e9",
            " 1700000000",
            "1700000000.1234567891",
            "253402300800",
            "99999999999999999999",
            "2023-11-14T22:13:20Z",
            "1700000000.12a",
            "+1700000000",
        ] {
            assert_eq!(parse_file_time(garbage), None, "{garbage:?}");
        }
    }

    #[test]
    fn stored_file_times_round_trip_before_1970_and_far_ahead() {
        let before = |s, n| UNIX_EPOCH - Duration::new(s, n);
        let after = |s, n| UNIX_EPOCH + Duration::new(s, n);
        for time in [
            before(86_400, 250_000_000),
            before(1, 0),
            before(0, 1),
            UNIX_EPOCH,
            after(1_700_000_000, 123_456_789),
            after(4_102_444_800, 0),
            after(253_402_300_799, 999_999_999),
        ] {
            let stored = format_file_time(time);
            assert_eq!(parse_file_time(&stored), Some(time), "{stored}");
        }
        assert_eq!(format_file_time(before(1, 500_000_000)), "-1.500000000");
    }

    #[test]
    fn known_instants() {
        assert_eq!(
            Timestamp::parse_iso8601("1970-01-01T00:00:00.000Z")
                .unwrap()
                .unix_millis(),
            0
        );
        assert_eq!(
            Timestamp::parse_iso8601("2013-05-24T00:00:00Z")
                .unwrap()
                .unix_millis(),
            1_369_353_600_000
        );
        assert_eq!(
            Timestamp::parse_iso8601("2024-02-29T23:59:58.5Z")
                .unwrap()
                .unix_millis(),
            1_709_251_198_500
        );
    }

    #[test]
    fn round_trips_through_display() {
        for text in [
            "2024-02-29T23:59:58.123Z",
            "1999-12-31T00:00:01.000Z",
            "2100-03-01T12:30:00.007Z",
        ] {
            assert_eq!(Timestamp::parse_iso8601(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn other_forms_are_refused() {
        for bad in [
            "",
            "2024-02-29",
            "2024-02-29 23:59:58Z",
            "2024-13-01T00:00:00Z",
            "2024-02-29T23:59:58+01:00",
            "2024-02-29T23:59:58.Z",
        ] {
            assert_eq!(Timestamp::parse_iso8601(bad), None, "{bad}");
        }
    }
}
