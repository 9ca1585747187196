//! Whether a key both sides hold is sent again: by size and time as `aws s3 sync` decides,
//! by size alone, by exact time, or by content. Pure but for the clock, which says what
//! time is still to come.

use std::time::{SystemTime, UNIX_EPOCH};

/// How `sync` tells that a key both sides hold is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncCompare {
    /// Sent when the sizes differ or the source is newer (to the second), as `aws s3 sync`,
    /// except that a source dated in the future shows nothing by its date: the store dates
    /// what it writes with the moment of writing, so such a file would be newer on every
    /// run. It goes again when its size differs, or on the first run after its date.
    #[default]
    SizeAndTime,
    /// Sent only when the sizes differ.
    SizeOnly,
    /// Downloads: sent when the sizes or the times (to the second) differ at all, as
    /// `aws s3 sync --exact-timestamps`. Uploads and copies compare as by default: the
    /// store gives every object it writes its own time.
    ExactTimestamps,
    /// Sent when the sizes or the contents differ: CRC64NVME against the store's checksum.
    Checksum,
}

/// What a listing says of one side of a key, before anything is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Side {
    pub size: u64,
    pub modified: Option<SystemTime>,
}

/// The verdict on a key both sides hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Same,
    Differs,
    /// Equal sizes, and the contents decide (one HEAD or a cached CRC).
    CompareContents,
}

/// Decide a key both sides hold; `download` when the destination is local files. A time
/// either side lacks cannot show the key unchanged.
pub(crate) fn compare(rule: SyncCompare, download: bool, source: Side, dest: Side) -> Verdict {
    compare_at(SystemTime::now(), rule, download, source, dest)
}

/// [`compare`] with the clock read at `now`.
fn compare_at(
    now: SystemTime,
    rule: SyncCompare,
    download: bool,
    source: Side,
    dest: Side,
) -> Verdict {
    if source.size != dest.size {
        return Verdict::Differs;
    }
    let seconds = |side: Side| side.modified.map(unix_seconds);
    let (Some(source_time), Some(dest_time)) = (seconds(source), seconds(dest)) else {
        return match rule {
            SyncCompare::SizeOnly => Verdict::Same,
            SyncCompare::Checksum => Verdict::CompareContents,
            SyncCompare::SizeAndTime | SyncCompare::ExactTimestamps => Verdict::Differs,
        };
    };
    let changed = match rule {
        SyncCompare::SizeOnly => false,
        SyncCompare::Checksum => return Verdict::CompareContents,
        SyncCompare::ExactTimestamps if download => source_time != dest_time,
        SyncCompare::SizeAndTime | SyncCompare::ExactTimestamps => {
            source_time > dest_time && source_time <= unix_seconds(now)
        }
    };
    match changed {
        true => Verdict::Differs,
        false => Verdict::Same,
    }
}

/// Whole seconds since the epoch, rounded down (before 1970 too): S3 keeps times to the
/// second.
fn unix_seconds(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => {
            let before = before.duration();
            let whole = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
            -whole - i64::from(before.subsec_nanos() > 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn side(size: u64, seconds: Option<u64>) -> Side {
        Side {
            size,
            modified: seconds.map(|s| UNIX_EPOCH + Duration::from_millis(s * 1000 + 400)),
        }
    }

    #[test]
    fn by_default_a_newer_source_or_another_size_is_sent() {
        let rule = SyncCompare::SizeAndTime;
        for download in [false, true] {
            let decide = |s, d| compare(rule, download, s, d);
            assert_eq!(decide(side(5, Some(10)), side(5, Some(10))), Verdict::Same);
            assert_eq!(decide(side(5, Some(9)), side(5, Some(10))), Verdict::Same);
            assert_eq!(
                decide(side(5, Some(11)), side(5, Some(10))),
                Verdict::Differs
            );
            assert_eq!(
                decide(side(6, Some(9)), side(5, Some(10))),
                Verdict::Differs
            );
            assert_eq!(decide(side(5, None), side(5, Some(10))), Verdict::Differs);
        }
    }

    #[test]
    fn exact_timestamps_send_an_older_source_on_download_only() {
        let rule = SyncCompare::ExactTimestamps;
        let older = (side(5, Some(9)), side(5, Some(10)));
        assert_eq!(compare(rule, true, older.0, older.1), Verdict::Differs);
        assert_eq!(compare(rule, false, older.0, older.1), Verdict::Same);
        let same = side(5, Some(10));
        assert_eq!(compare(rule, true, same, same), Verdict::Same);
    }

    #[test]
    fn size_only_and_checksum_ignore_time() {
        let (newer, older) = (side(5, Some(11)), side(5, Some(10)));
        let size_only = SyncCompare::SizeOnly;
        assert_eq!(compare(size_only, true, newer, older), Verdict::Same);
        assert_eq!(
            compare(size_only, true, side(4, None), older),
            Verdict::Differs
        );
        let checksum = SyncCompare::Checksum;
        assert_eq!(
            compare(checksum, false, newer, older),
            Verdict::CompareContents
        );
        assert_eq!(
            compare(checksum, false, side(4, None), older),
            Verdict::Differs
        );
    }

    #[test]
    fn a_source_dated_in_the_future_is_not_newer_until_its_date() {
        let now = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        let at = |seconds: u64| Side {
            size: 5,
            modified: Some(UNIX_EPOCH + Duration::from_secs(seconds)),
        };
        let uploaded = at(1_999_999_000);
        for rule in [SyncCompare::SizeAndTime, SyncCompare::ExactTimestamps] {
            let decide = |source| compare_at(now, rule, false, source, uploaded);
            assert_eq!(decide(at(2_100_000_000)), Verdict::Same, "still to come");
            assert_eq!(
                decide(at(2_000_000_000)),
                Verdict::Differs,
                "its date is here"
            );
            assert_eq!(decide(at(1_999_999_500)), Verdict::Differs, "edited since");
        }
        let resized = Side {
            size: 6,
            ..at(2_100_000_000)
        };
        assert_eq!(
            compare_at(now, SyncCompare::SizeAndTime, false, resized, uploaded),
            Verdict::Differs
        );
    }

    #[test]
    fn a_source_from_before_1970_is_older_than_any_upload() {
        let before = |millis: u64| Side {
            size: 5,
            modified: UNIX_EPOCH.checked_sub(Duration::from_millis(millis)),
        };
        let uploaded = side(5, Some(1_700_000_000));
        let rule = SyncCompare::SizeAndTime;
        assert_eq!(compare(rule, false, before(1_500), uploaded), Verdict::Same);
        assert_eq!(unix_seconds(before(1_000).modified.unwrap()), -1);
        assert_eq!(unix_seconds(before(1_500).modified.unwrap()), -2);
        // A file given its time back by a download is as old as the object it came from.
        let downloaded = before(86_400_000);
        assert_eq!(compare(rule, true, downloaded, downloaded), Verdict::Same);
    }
}
