//! One object's parts: how it is cut into ranges, the version every range is pinned to, and
//! what a response must say before a byte of it is taken for a range.

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::ranges::ByteRange;
use crate::source::{Fetched, Shape};
use crate::validator::Validator;

/// Objects up to this size come in one request whatever the part size: a second
/// connection's set-up costs more than it saves on them (parallel byte serving gains
/// nothing on small files).
pub(super) const SINGLE_STREAM: u64 = 1024 * 1024;

/// The most parts one object's plan holds: a bound on its memory (16 bytes a part) that no
/// size from outside can lift. 5 TiB in 1 KiB parts would be five billion.
pub(super) const MAX_PLANNED_PARTS: u64 = 100_000;

/// Objects whose size is known before the first request (a listing, a manifest) come in
/// one request up to this many parts (16 MiB with the default 8 MiB parts): many of them
/// are fetched at once, so their connections are busy anyway, and a second request would
/// only add a round trip.
pub(super) const ONE_REQUEST_PARTS: u64 = 2;

/// The largest part: at 50 MB/s per connection and 20 ms per round trip, one request per
/// 64 MiB costs under 1% of the connection's time; larger parts would only make the last
/// one to finish longer.
pub(super) const MAX_PART: u64 = 64 * 1024 * 1024;

/// How the parts of one object are sized.
#[derive(Debug, Clone, Copy)]
pub(super) struct PartSizes {
    /// The smallest part, and the size of those that pay for being small: the first (its
    /// bytes come soonest) and those of a resumed object (a failure costs little).
    pub part_size: u64,
    /// How many ranges of one object are fetched at once.
    pub ranges: usize,
    /// Up to this size a stretch is one request.
    pub single_stream: u64,
    /// The largest part: [`MAX_PART`], smaller in tests.
    pub max_part: u64,
}

impl PartSizes {
    /// `whole` as the rest of an object after its first part: about `ranges` parts of
    /// equal size (a multiple of `part_size`) up to `max_part`, so the object takes
    /// few round trips per byte and keeps `ranges` connections busy to its end.
    pub(super) fn grown(self, whole: ByteRange) -> Vec<ByteRange> {
        let length = whole.end - whole.start + 1;
        let part_size = self.part_size.max(1);
        // Whole multiples of the part size: parts stay on its grid, where upload parts end.
        let even = length
            .div_ceil(self.ranges.max(1) as u64)
            .div_ceil(part_size)
            .saturating_mul(part_size);
        let size = even.clamp(part_size, self.max_part.max(part_size));
        self.cut(whole, size)
    }

    /// `whole` as consecutive parts of `part_size` (a resumed object's gaps).
    pub(super) fn fixed(self, whole: ByteRange) -> Vec<ByteRange> {
        self.cut(whole, self.part_size.max(1))
    }

    /// `whole` as consecutive parts of `size`; one part when it is no larger than
    /// `single_stream`, so small that splitting cannot pay. Never more than
    /// [`MAX_PLANNED_PARTS`]: parts grow by whole multiples of `size` past that.
    fn cut(self, whole: ByteRange, size: u64) -> Vec<ByteRange> {
        let length = whole.end - whole.start + 1;
        let size = if length <= self.single_stream {
            length
        } else {
            let multiple = length.div_ceil(MAX_PLANNED_PARTS).div_ceil(size).max(1);
            size.saturating_mul(multiple)
        };
        (whole.start..=whole.end)
            .step_by(usize::try_from(size).unwrap_or(usize::MAX))
            .map(move |start| ByteRange {
                start,
                end: (start + size - 1).min(whole.end),
            })
            .collect()
    }
}

/// The version all parts of one attempt must be of: the validator known beforehand (a
/// listing, the first response), or else the one the first response to arrive carries.
/// "No validator" is a version too: a later part that brings one, or lacks one, is another.
#[derive(Debug, Default)]
pub(super) struct Pinned(OnceLock<Option<Validator>>);

impl Pinned {
    pub(super) fn new(known: Option<Validator>) -> Pinned {
        let pinned = Pinned::default();
        if known.is_some() {
            let _ = pinned.0.set(known);
        }
        pinned
    }

    /// The validator later requests are pinned to (`If-Match`), once there is one.
    pub(super) fn validator(&self) -> Option<&Validator> {
        self.0.get().and_then(Option::as_ref)
    }

    /// Whether `got` is the pinned version; the first answer pins it when nothing did yet.
    pub(super) fn check(&self, got: Option<&Validator>) -> std::result::Result<(), String> {
        let pinned = self.0.get_or_init(|| got.cloned());
        match (pinned, got) {
            (Some(want), Some(got)) if want.matches(got) => Ok(()),
            (None, None) => Ok(()),
            (Some(want), Some(got)) => Err(format!("{want} became {got}")),
            (Some(want), None) => Err(format!(
                "a later part came without a validator, the first had {want}"
            )),
            (None, Some(got)) => Err(format!(
                "a later part came with {got}, the first had no validator"
            )),
        }
    }
}

/// A range's response must be that range of the same version: same total size, same
/// validator, exact range. A 200 is taken only when the whole object was asked for and its
/// length is the object's.
pub(super) fn check_part(
    source: &ObjectUrl,
    fetched: &Fetched,
    asked: ByteRange,
    pinned: &Pinned,
    total: u64,
) -> Result<()> {
    let what = || format!("GET {source} {asked}");
    let whole = ByteRange {
        start: 0,
        end: total.saturating_sub(1),
    };
    let (range, now) = match fetched.shape {
        Shape::Partial { range, total: now } => (range, now),
        Shape::Whole { length } if asked == whole && length.is_none_or(|l| l == total) => {
            (whole, total)
        }
        Shape::Whole {
            length: Some(length),
        } if length != total => (whole, length),
        Shape::Whole { .. } => {
            return Err(Error::Protocol {
                what: what(),
                detail: "the server ignored the Range header on a later part".into(),
            })
        }
        Shape::Empty => (whole, 0),
    };
    if now != total {
        return Err(Error::Changed {
            what: what(),
            detail: format!("size went from {total} to {now} bytes"),
        });
    }
    pinned
        .check(fetched.validator.as_ref())
        .map_err(|detail| Error::Changed {
            what: what(),
            detail,
        })?;
    if range != asked {
        return Err(Error::Protocol {
            what: what(),
            detail: format!("asked for {asked}, got {range}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: u64) -> ByteRange {
        ByteRange { start, end }
    }

    const SIZES: PartSizes = PartSizes {
        part_size: 8 * MIB,
        ranges: 16,
        single_stream: SINGLE_STREAM,
        max_part: MAX_PART,
    };
    const MIB: u64 = 1 << 20;

    #[test]
    fn small_objects_are_one_part_whatever_the_part_size() {
        let sizes = PartSizes {
            part_size: 64 * 1024,
            ..SIZES
        };
        let whole = range(0, SINGLE_STREAM - 1);
        assert_eq!(sizes.fixed(whole), vec![whole]);
        assert_eq!(sizes.grown(whole), vec![whole]);
    }

    #[test]
    fn no_size_plans_more_than_the_bound_of_parts() {
        let sizes = PartSizes {
            part_size: 1024,
            ..SIZES
        };
        let whole = range(0, (5 << 40) - 1);
        for parts in [sizes.fixed(whole), sizes.grown(whole)] {
            assert!(parts.len() as u64 <= MAX_PLANNED_PARTS, "{}", parts.len());
            assert_eq!(parts[0].start, 0);
            assert_eq!(parts.last().unwrap().end, whole.end);
            assert!(parts.windows(2).all(|w| w[0].end + 1 == w[1].start));
            assert!(
                parts.iter().all(|part| part.start % 1024 == 0),
                "on the grid"
            );
        }
    }

    #[test]
    fn resumed_gaps_are_cut_into_part_size_pieces() {
        let sizes = PartSizes {
            part_size: 2 * SINGLE_STREAM,
            ..SIZES
        };
        let parts = sizes.fixed(range(10, 10 + 5 * SINGLE_STREAM));
        assert_eq!(
            parts,
            vec![
                range(10, 10 + 2 * SINGLE_STREAM - 1),
                range(10 + 2 * SINGLE_STREAM, 10 + 4 * SINGLE_STREAM - 1),
                range(10 + 4 * SINGLE_STREAM, 10 + 5 * SINGLE_STREAM),
            ]
        );
    }

    #[test]
    fn large_objects_grow_parts_to_keep_ranges_busy_up_to_the_largest_part() {
        // The rest of a 1 GiB object after its first 8 MiB: 16 parts of 64 MiB (the last
        // one 56), not 127 of 8.
        let rest = sizes_of(&SIZES.grown(range(8 * MIB, 1024 * MIB - 1)));
        let mut expected = vec![64 * MIB; 15];
        expected.push(56 * MIB);
        assert_eq!(rest, expected);
        // Never larger than 64 MiB: a 4 GiB object takes 64 of them.
        let huge = SIZES.grown(range(0, 4096 * MIB - 1));
        assert_eq!(sizes_of(&huge), vec![MAX_PART; 64]);
        // Never smaller than the part size: 24 MiB is three parts of 8, not 16 of 1.5.
        let small = SIZES.grown(range(0, 24 * MIB - 1));
        assert_eq!(sizes_of(&small), vec![8 * MIB; 3]);
        // Parts are whole multiples of the part size, the last one takes what is left, and
        // the parts tile the range: 200 MiB in 16 is 12.5, so 13 parts of 16 MiB.
        let odd = SIZES.grown(range(3, 200 * MIB + 2));
        assert_eq!(odd.first().map(|part| part.start), Some(3));
        assert_eq!(odd.last().map(|part| part.end), Some(200 * MIB + 2));
        assert!(odd.windows(2).all(|pair| pair[0].end + 1 == pair[1].start));
        assert_eq!(sizes_of(&odd[..12]), vec![16 * MIB; 12]);
        assert_eq!(sizes_of(&odd[12..]), vec![8 * MIB]);
    }

    fn sizes_of(parts: &[ByteRange]) -> Vec<u64> {
        parts.iter().map(|part| part.end - part.start + 1).collect()
    }
}
