//! Whether a key both sides hold is sent again: by size and time as `aws s3 sync` decides,
//! by size alone, by exact time, or by content. Pure: the property tests drive it.

use std::time::{SystemTime, UNIX_EPOCH};

/// How `sync` tells that a key both sides hold is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncCompare {
    /// Sent when the sizes differ or the source is newer (to the second), as `aws s3 sync`.
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
        SyncCompare::SizeAndTime | SyncCompare::ExactTimestamps => source_time > dest_time,
    };
    match changed {
        true => Verdict::Differs,
        false => Verdict::Same,
    }
}

/// Whole seconds since the epoch: S3 keeps times to the second.
fn unix_seconds(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX) - 1,
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
}
