//! The keywords of `Client.upload`, `Client.put_bytes` and their `_async` twins, in one
//! place, as `download_keywords.rs` has them for downloads. Python's `UploadOptions`
//! (python/parabyte/_keywords.py) types the same names, and a test holds the two lists equal.

use std::path::Path;

use parabyte::{
    CopyOptions, CopyRequest, Destination, Encryption, Filter, Location, S3Url, Source,
    UploadOptions,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::download_keywords::{patterns, unexpected};
use crate::errors::to_py;

/// Every keyword `upload`, `copy` and `move` take besides the source and the destination, as
/// `cp` takes them (`recursive` changes nothing for `upload`: a directory goes whole).
pub const UPLOAD_KEYWORDS: [&str; 16] = [
    "recursive",
    "exclude",
    "include",
    "raw",
    "follow_symlinks",
    "dry_run",
    "progress",
    "no_clobber",
    "content_type",
    "guess_content_type",
    "cache_control",
    "content_encoding",
    "storage_class",
    "sse",
    "sse_kms_key_id",
    "metadata",
];

/// Of those, the ones that choose files, and the dry run that names them: `put_bytes` has
/// none to choose, `upload_many` names each (Python's `_native.UPLOAD_SELECTION_KEYWORDS`).
pub const SELECTION: [&str; 6] = [
    "recursive",
    "exclude",
    "include",
    "raw",
    "follow_symlinks",
    "dry_run",
];

/// What the keywords of one upload call ask for.
#[derive(Default)]
pub struct UploadKeywords {
    /// `copy` and `move`: take the source as a prefix.
    recursive: bool,
    exclude: Vec<String>,
    include: Vec<String>,
    raw: bool,
    follow_symlinks: bool,
    /// `cp --dryrun`: nothing read, written or deleted; the summary counts what would be.
    dry_run: bool,
    pub progress: Option<Py<PyAny>>,
    pub options: UploadOptions,
    sse: Option<String>,
    sse_kms_key_id: Option<String>,
}

impl UploadKeywords {
    /// Read `keywords`; `method` names the call in errors (`upload`, `put_bytes`).
    pub fn parse(method: &str, keywords: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut parsed = UploadKeywords::default();
        let Some(keywords) = keywords else {
            return Ok(parsed);
        };
        // put_bytes has no files, upload_many names each: neither chooses among them.
        let chooses_files = !(method.starts_with("put_bytes") || method.starts_with("upload_many"));
        for (name, value) in keywords.iter() {
            let name: String = name.extract()?;
            // A sync takes a tree whole: `recursive` is no keyword of it, as no flag of `sync`.
            let tree = method.starts_with("sync") && name == "recursive";
            if tree || (!chooses_files && SELECTION.contains(&name.as_str())) {
                return Err(unexpected(method, &name, &[]));
            }
            let options = &mut parsed.options;
            match name.as_str() {
                "recursive" => parsed.recursive = value.extract()?,
                "exclude" => parsed.exclude = patterns(&name, &value)?,
                "include" => parsed.include = patterns(&name, &value)?,
                "raw" => parsed.raw = value.extract()?,
                "follow_symlinks" => parsed.follow_symlinks = value.extract()?,
                "dry_run" => parsed.dry_run = value.extract()?,
                "progress" => parsed.progress = (!value.is_none()).then(|| value.unbind()),
                "no_clobber" => options.no_clobber = value.extract()?,
                "content_type" => options.content_type = value.extract()?,
                "guess_content_type" => options.guess_content_type = value.extract()?,
                "cache_control" => options.cache_control = value.extract()?,
                "content_encoding" => options.content_encoding = value.extract()?,
                "storage_class" => options.storage_class = value.extract()?,
                "sse" => parsed.sse = value.extract()?,
                "sse_kms_key_id" => parsed.sse_kms_key_id = value.extract()?,
                "metadata" => {
                    let metadata: Option<std::collections::BTreeMap<String, String>> =
                        value.extract()?;
                    options.metadata = metadata.unwrap_or_default().into_iter().collect();
                }
                unknown => return Err(unexpected(method, unknown, &UPLOAD_KEYWORDS)),
            }
        }
        parsed.options.encryption = match (parsed.sse.as_deref(), &parsed.sse_kms_key_id) {
            (None, None) => None,
            (Some("AES256"), None) => Some(Encryption::Aes256),
            (Some("aws:kms") | None, key_id) => Some(Encryption::Kms {
                key_id: key_id.clone(),
            }),
            (Some("AES256"), Some(_)) => {
                return Err(PyValueError::new_err(
                    "sse_kms_key_id= names a KMS key: use it with sse=\"aws:kms\"",
                ))
            }
            (Some(other), _) => {
                return Err(PyValueError::new_err(format!(
                    "sse={other:?}: use \"AES256\" or \"aws:kms\""
                )))
            }
        };
        Ok(parsed)
    }
}

/// A path as the text a location is parsed from.
fn text(path: &Path) -> PyResult<&str> {
    path.to_str().ok_or_else(|| {
        PyValueError::new_err(format!(
            "{path:?}: a path that is not UTF-8 cannot be synced"
        ))
    })
}

impl UploadKeywords {
    /// The upload of `source` (a file or a directory, whose tree goes up) to `destination`.
    pub fn request(&self, source: &Path, destination: &str) -> PyResult<CopyRequest> {
        self.request_from(Location::Local(source.to_owned()), true, destination)
    }

    /// The copy inside the store of `source` (a key, a prefix, a pattern) to `destination`.
    pub fn copy_request(&self, source: &str, destination: &str) -> PyResult<CopyRequest> {
        let source = match Location::parse(source).map_err(to_py)? {
            Location::S3(url) => Location::S3(url),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "{source:?}: copy() copies inside the store, from s3://bucket/key; \
                     upload() takes local files"
                )))
            }
        };
        self.request_from(source, self.recursive, destination)
    }

    /// A `sync` or `move` of `source` to `destination`: each an s3:// URL or a local path.
    pub fn tree_request(&self, source: &Path, destination: &Path) -> PyResult<CopyRequest> {
        let destination = match Location::parse(text(destination)?).map_err(to_py)? {
            Location::S3(url) => Destination::Store(url),
            Location::Local(path) => Destination::Path(path),
            Location::Http(url) => {
                return Err(PyValueError::new_err(format!(
                    "{url}: a web server cannot be written to; give s3://bucket/prefix/ or a local path"
                )))
            }
        };
        let source = Location::parse(text(source)?).map_err(to_py)?;
        let mut request = self.request_from(source, self.recursive, "s3://placeholder/")?;
        request.destination = destination;
        Ok(request)
    }

    fn request_from(
        &self,
        source: Location,
        recursive: bool,
        destination: &str,
    ) -> PyResult<CopyRequest> {
        let excludes = self.exclude.iter().map(|pattern| Filter::exclude(pattern));
        let includes = self.include.iter().map(|pattern| Filter::include(pattern));
        Ok(CopyRequest {
            source: Source::Location(source),
            destination: Destination::Store(store_url(destination)?),
            recursive,
            options: CopyOptions {
                filters: excludes
                    .chain(includes)
                    .collect::<parabyte::Result<_>>()
                    .map_err(to_py)?,
                raw: self.raw,
                dry_run: self.dry_run,
                upload: self.options.clone(),
                follow_symlinks: self.follow_symlinks,
            },
        })
    }
}

/// An upload's destination: an `s3://` URL and nothing else.
pub fn store_url(destination: &str) -> PyResult<S3Url> {
    match Location::parse(destination).map_err(to_py)? {
        Location::S3(url) => Ok(url),
        _ => Err(PyValueError::new_err(format!(
            "{destination:?}: an upload goes to s3://bucket/key (or s3://bucket/prefix/)"
        ))),
    }
}
