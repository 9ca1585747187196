//! `range=` and `ranges=` as Python users write them: `(start, end)` or `[start, end]`, any
//! sequence of two integers; anything else is refused saying what to pass.

use std::ops::Range;

use pyo3::prelude::*;

use crate::errors::InvalidInputError;

/// One `(start, end)` as given: a tuple, a list, any sequence.
#[derive(Debug, FromPyObject)]
pub enum ByteRangeArg {
    Pair((u64, u64)),
    Sequence(Vec<u64>),
}

impl ByteRangeArg {
    /// Bytes `start..end`, or the error that says what `range=` takes.
    pub fn into_range(self) -> PyResult<Range<u64>> {
        match self {
            ByteRangeArg::Pair((start, end)) => Ok(start..end),
            ByteRangeArg::Sequence(values) => match values[..] {
                [start, end] => Ok(start..end),
                _ => Err(InvalidInputError::new_err(format!(
                    "a range is (start, end): two integers, e.g. range=(0, 1024) for the first \
                     KiB; {} were given",
                    values.len()
                ))),
            },
        }
    }
}
