//! Moving one object's bytes: parts planned and fetched in parallel under one request limit,
//! each streamed to its offset, resumed from the byte where it broke, and checked. Reaches
//! servers only through [`crate::source::RangeSource`], and writes only through `disk`.

mod check;
pub(crate) mod engine;
#[cfg(test)]
mod fake;
mod parts;
pub(crate) mod throttle;
