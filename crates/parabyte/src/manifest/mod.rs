//! Manifests: many sources in one file, each with what is already known of it, so that a
//! known size costs no probe: for many small objects that first round trip is most of the time.
//!
//! One source per line, in either of two forms (they may be mixed):
//!
//! ```text
//! # SOURCE  [DEST_PATH]  [SIZE]  [ETAG]       '#' starts a comment line; blank lines are skipped
//! s3://bucket/renders/0001.exr
//! https://cdn.example.com/v2/model.bin  models/model.bin  1073741824  "9b2cf535f27731c974343645a3985328"
//! s3://bucket/a.txt  -  5120                 '-' leaves a field out
//! {"source": "s3://bucket/b.txt", "dest": "texts/b.txt", "size": 5120, "etag": "abc"}
//! {"url": "s3://bucket/c/d.txt", "key": "c/d.txt", "size": 5, "etag": "\"..\"", "last_modified": "..."}
//! ```
//!
//! Fields are separated by tabs when the line has one (then a field may contain spaces, and
//! an empty field is left out), else by runs of spaces. A line starting with `{` is one JSON
//! object with `source` and optionally `dest`, `size` and `etag` (any other field is a
//! mistake, refused by name), or a line of `parabyte ls --recursive --json`: `url` is the
//! source, `key` its destination path (the key's directories kept), `size` and `etag` known,
//! other fields ignored. SIZE is in bytes.
//!
//! Into a directory (`download.rs`), sources are S3 objects and web files and DEST_PATH is
//! relative to the directory, which it may not leave. Into an `s3://bucket/prefix/`
//! (`into_store.rs`), a source may also be a local file (uploaded); DEST_PATH is the key
//! below the prefix (no `..`, `.` or empty segments, no leading `/`) or a whole
//! `s3://bucket/key`; SIZE and ETAG describe objects only.

mod download;
mod into_store;
mod line;

pub use download::{Item, Manifest};
pub use into_store::keys_into_store;
pub(crate) use into_store::{parse_into_store, StoreItem, StoreSource};
pub use line::ManifestError;
