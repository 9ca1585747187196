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

/// `whole` as consecutive parts of `part_size`; one part when it is no larger than
/// `single_stream`, so small that splitting cannot pay.
pub(super) fn plan_parts(
    whole: ByteRange,
    part_size: u64,
    single_stream: u64,
) -> impl Iterator<Item = ByteRange> {
    let length = whole.end - whole.start + 1;
    let part_size = if length <= single_stream {
        length
    } else {
        part_size.max(1)
    };
    (whole.start..=whole.end)
        .step_by(part_size as usize)
        .map(move |start| ByteRange {
            start,
            end: (start + part_size - 1).min(whole.end),
        })
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

    #[test]
    fn small_objects_are_one_part_whatever_the_part_size() {
        let parts: Vec<_> =
            plan_parts(range(0, SINGLE_STREAM - 1), 64 * 1024, SINGLE_STREAM).collect();
        assert_eq!(parts, vec![range(0, SINGLE_STREAM - 1)]);
    }

    #[test]
    fn large_objects_are_cut_into_part_size_pieces() {
        let parts: Vec<_> = plan_parts(
            range(10, 10 + 5 * SINGLE_STREAM),
            2 * SINGLE_STREAM,
            SINGLE_STREAM,
        )
        .collect();
        assert_eq!(
            parts,
            vec![
                range(10, 10 + 2 * SINGLE_STREAM - 1),
                range(10 + 2 * SINGLE_STREAM, 10 + 4 * SINGLE_STREAM - 1),
                range(10 + 4 * SINGLE_STREAM, 10 + 5 * SINGLE_STREAM),
            ]
        );
    }
}
