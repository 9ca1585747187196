//! Moving one object's bytes: parts planned and fetched in parallel under one request limit,
//! each streamed to its offset, resumed from the byte where it broke, and checked. Reaches
//! servers only through [`crate::source::Store`], and writes only through `disk`.
//!
//! - `engine`: one object's path (probe, parts, resume, restart on a new version, commit);
//! - `parts`: cutting an object into ranges, the version they are pinned to, and what a
//!   response must say before its bytes are taken for a range;
//! - `check`: the content check (CRC pieces, ordered MD5), which keeps its own state;
//! - `throttle`: requests in flight, cut when the store throttles and grown back;
//! - `upload`: one local file into the store, in one PUT or parts read in parallel;

mod check;
pub(crate) mod engine;
mod parts;
pub(crate) mod throttle;
pub(crate) mod upload;
