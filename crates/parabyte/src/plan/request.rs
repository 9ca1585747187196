//! What a copy asks for: the request of the public API (its source, destination and
//! options), and the S3 copy one becomes once decided (`StoreCopy`).

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::location::{Location, S3Url};
use crate::manifest::Item;
use crate::pattern::{has_wildcard, Filter, Pattern};
use crate::source::listing::KeyBounds;
use crate::source::{Encryption, WriteOptions};

/// Where copied bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A file, or a directory when it exists as one or ends in `/` (a prefix always goes
    /// into a directory).
    Path(PathBuf),
    /// Fetch everything, keep nothing: measures the store and the network, not the disk.
    Discard,
    /// One object's bytes, in order, to standard output (`-` on the command line).
    Stdout,
    /// An S3 key, or a prefix when the key is empty or ends in `/` (a tree always goes
    /// under a prefix): an upload.
    Store(S3Url),
}

/// Where the objects of a store copy land: on this machine, or (copied inside the store)
/// under another key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Landing {
    Path(PathBuf),
    Discard,
    Stdout,
    /// A key, or a prefix for a listing's objects (a key not ending in `/` is taken as
    /// `key/`, as `aws s3 cp --recursive` takes it).
    Store {
        url: S3Url,
        options: std::sync::Arc<WriteOptions>,
    },
    /// Nowhere: the listed objects are deleted (`rm`).
    Delete,
}

impl Landing {
    /// The directory files land in, for a local destination.
    pub(crate) fn root(&self) -> Option<&std::path::Path> {
        match self {
            Landing::Path(root) => Some(root),
            Landing::Discard | Landing::Stdout | Landing::Store { .. } | Landing::Delete => None,
        }
    }
}

/// What a copy reads from.
#[derive(Debug, Clone)]
pub enum Source {
    /// An S3 object, or a prefix when the key is empty or ends in `/`; an `http(s)://` URL;
    /// or a local file or directory (whose contents are copied).
    Location(Location),
    /// A batch of objects, each with what is already known of it (a list from Python).
    Items(Vec<Item>),
    /// A manifest file (see [`crate::Manifest`]); each bad line is a failure of its own.
    Manifest(PathBuf),
    /// Some lines of a manifest, the first of them its line `first_line`, named `name` in
    /// failures (`NAME:LINE`): one task's share of a manifest spread over several machines.
    ManifestLines {
        /// The manifest's name.
        name: String,
        /// The number of the text's first line in the manifest, from 1.
        first_line: usize,
        /// The lines.
        text: String,
    },
    /// One range of the key space under an S3 prefix: one task of a copy spread over several
    /// machines. Keys land at the same paths as when the whole prefix is copied.
    KeyRange {
        /// The prefix (`dir` means `dir/`, as for a recursive copy).
        prefix: S3Url,
        /// Which of its keys.
        bounds: KeyBounds,
    },
}

/// A copy to run: what [`crate::Client::copy`] takes, from the CLI and Python alike.
#[derive(Debug, Clone)]
pub struct CopyRequest {
    /// Where the bytes come from.
    pub source: Source,
    /// Where they go: a directory for a prefix, a batch or a tree.
    pub destination: Destination,
    /// Take an S3 source as a prefix, even without a trailing `/`.
    pub recursive: bool,
    /// Filters, wildcards and dry runs.
    pub options: CopyOptions,
}

/// How a copy chooses its objects and whether it fetches them.
#[derive(Debug, Clone, Default)]
pub struct CopyOptions {
    /// `--exclude` / `--include` in the order given, matched against each object's path
    /// below the source (the path it gets under the destination); the last match decides.
    pub filters: Vec<Filter>,
    /// Take the source as written: `*`, `?` and `[` in it are part of the name, not a pattern.
    pub raw: bool,
    /// Decide everything, fetch nothing: each object goes to [`crate::Reporter::previewed`] as
    /// what would be copied, or why it would be skipped. Listing requests still go out.
    pub dry_run: bool,
    /// How uploaded objects are stored.
    pub upload: UploadOptions,
    /// Links inside a local source tree are read as what they point to (aws's
    /// `--follow-symlinks`), loops refused; else each is passed over.
    pub follow_symlinks: bool,
}

/// How an upload stores its objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadOptions {
    /// Never replace an object: a key that exists is skipped (`If-None-Match: *`), even
    /// when another writer stores it while the upload runs.
    pub no_clobber: bool,
    /// The objects' `Content-Type`; when `None`, guessed from each file's extension (as
    /// the AWS CLI does) unless `guess_content_type` is off, else the store's default.
    pub content_type: Option<String>,
    /// Guess a file's `Content-Type` from its extension when none is given.
    pub guess_content_type: bool,
    /// `Cache-Control`, served back with the objects.
    pub cache_control: Option<String>,
    /// `Content-Encoding`, served back with the objects.
    pub content_encoding: Option<String>,
    /// The storage class (`STANDARD`, `STANDARD_IA`, `GLACIER_IR`, ...).
    pub storage_class: Option<String>,
    /// Server-side encryption.
    pub encryption: Option<Encryption>,
    /// User metadata (`x-amz-meta-NAME: VALUE`), names in lower case, ASCII only.
    pub metadata: Vec<(String, String)>,
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions {
            no_clobber: false,
            content_type: None,
            guess_content_type: true,
            cache_control: None,
            content_encoding: None,
            storage_class: None,
            encryption: None,
            metadata: Vec::new(),
        }
    }
}

impl UploadOptions {
    /// What each object is stored with; a value a header cannot carry is refused.
    pub(crate) fn write_options(&self) -> Result<WriteOptions> {
        let headers = [
            ("--content-type", &self.content_type),
            ("--cache-control", &self.cache_control),
            ("--content-encoding", &self.content_encoding),
            ("--storage-class", &self.storage_class),
        ];
        for (option, value) in headers {
            if value.as_deref().is_some_and(|value| !header_safe(value)) {
                return Err(Error::InvalidInput(format!(
                    "{option}: its value must be printable ASCII, as S3 headers carry it"
                )));
            }
        }
        if let Some(Encryption::Kms {
            key_id: Some(key_id),
        }) = &self.encryption
        {
            if !header_safe(key_id) {
                return Err(Error::InvalidInput(
                    "--sse-kms-key-id: a key ID or ARN is printable ASCII".into(),
                ));
            }
        }
        for (name, value) in &self.metadata {
            let token = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !token {
                return Err(Error::InvalidInput(format!(
                    "metadata name '{}': use letters, digits, '-', '_' or '.'",
                    name.escape_debug()
                )));
            }
            if !header_safe(value) {
                return Err(Error::InvalidInput(format!(
                    "metadata '{name}': its value must be printable ASCII, as S3 headers carry it"
                )));
            }
        }
        Ok(WriteOptions {
            no_clobber: self.no_clobber,
            content_type: self.content_type.clone(),
            guess_content_type: self.guess_content_type,
            cache_control: self.cache_control.clone(),
            content_encoding: self.content_encoding.clone(),
            storage_class: self.storage_class.clone(),
            encryption: self.encryption.clone(),
            metadata: self
                .metadata
                .iter()
                .map(|(name, value)| (name.to_ascii_lowercase(), value.clone()))
                .collect(),
            // Content-Disposition and Content-Language only a copy carries over.
            ..WriteOptions::default()
        })
    }
}

/// A header value S3 takes as it is: printable ASCII and spaces.
fn header_safe(value: &str) -> bool {
    value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
}

/// What `rm` deletes: the one key named (a trailing `/` is part of the key, as `aws s3 rm`
/// takes it), or with `recursive` (or a wildcard pattern) every key the listing gives that
/// the filters keep.
#[derive(Debug, Clone)]
pub struct RemoveRequest {
    /// `s3://bucket/key`, `s3://bucket/prefix/` or a pattern.
    pub source: S3Url,
    /// Take the source as a prefix (`dir` means `dir/`) and delete every key under it.
    pub recursive: bool,
    /// Filters, `raw` and `dry_run` (which lists and deletes nothing).
    pub options: CopyOptions,
    /// With `recursive`, the range of the prefix's key space to delete (all of it by
    /// default): one task's share of a delete spread over several machines.
    pub bounds: KeyBounds,
}

impl RemoveRequest {
    /// True when the request names exactly one key (not a prefix with `recursive`, not a
    /// pattern): its failure is the whole request's, which Python raises.
    pub fn names_one_key(&self) -> bool {
        !(self.recursive || (!self.options.raw && has_wildcard(&self.source.key)))
    }

    /// The listing-and-planning half of it, as a copy to nowhere.
    pub(crate) fn plan(&self) -> Result<StoreCopy> {
        let pattern = (!self.options.raw && has_wildcard(&self.source.key))
            .then(|| Pattern::new(&self.source.key))
            .transpose()?;
        Ok(StoreCopy {
            source: self.source.clone(),
            destination: Landing::Delete,
            recursive: self.recursive,
            pattern,
            filters: self.options.filters.clone(),
            dry_run: self.options.dry_run,
            bounds: self.bounds.clone(),
        })
    }
}

impl CopyRequest {
    /// A request for `source` as users write it: `s3://bucket/key`, `s3://bucket/prefix/`,
    /// `http(s)://host/path` or a local path.
    pub fn parse(source: &str, destination: Destination, recursive: bool) -> Result<CopyRequest> {
        Ok(CopyRequest {
            source: Source::Location(Location::parse(source)?),
            destination,
            recursive,
            options: CopyOptions::default(),
        })
    }

    /// True when the request names exactly one object or file (not a prefix, a batch, a
    /// pattern or a local tree): its failure is the whole request's, which Python raises.
    pub fn names_one_object(&self) -> bool {
        match &self.source {
            Source::Location(Location::S3(url)) => {
                !(self.recursive || url.is_prefix() || self.is_pattern(&url.key))
            }
            Source::Location(Location::Http(_)) => true,
            // One file (an upload of it): not a directory's tree, not a pattern.
            Source::Location(Location::Local(path)) => {
                !(path.is_dir() || self.is_pattern(&path.to_string_lossy()))
            }
            Source::Items(_)
            | Source::Manifest(_)
            | Source::ManifestLines { .. }
            | Source::KeyRange { .. } => false,
        }
    }

    /// True when a source reads as a wildcard pattern (it has one, and --raw is off).
    pub(super) fn is_pattern(&self, source: &str) -> bool {
        !self.options.raw && has_wildcard(source)
    }

    /// The source as a pattern, when it is one.
    pub(super) fn pattern(&self, source: &str) -> Result<Option<Pattern>> {
        self.is_pattern(source)
            .then(|| Pattern::new(source))
            .transpose()
    }
}

/// An S3 object or prefix to a destination.
#[derive(Debug, Clone)]
pub(crate) struct StoreCopy {
    pub source: S3Url,
    pub destination: Landing,
    pub recursive: bool,
    /// The key as a wildcard pattern: list its literal prefix, keep the keys it matches.
    pub pattern: Option<Pattern>,
    pub filters: Vec<Filter>,
    pub dry_run: bool,
    /// The part of a prefix's key space to copy (all of it by default).
    pub bounds: KeyBounds,
}

impl StoreCopy {
    /// True when the request lists (a prefix or a pattern) rather than fetches one key. A
    /// delete takes a trailing `/` as part of the one key named: a tree goes only with
    /// `recursive` or a pattern.
    pub(crate) fn lists(&self) -> bool {
        let prefix = self.source.is_prefix() && self.destination != Landing::Delete;
        self.recursive || prefix || self.pattern.is_some()
    }
}
