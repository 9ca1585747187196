//! Which two sides a sync may have: an S3 prefix and a local directory either way, or two
//! S3 prefixes that do not overlap, with no wildcards (`prefix/*` is the prefix, as s5cmd
//! users write it); the source is always a whole tree.

use super::far::Far;
use crate::error::{Error, Result};
use crate::location::{Location, S3Url};
use crate::plan::request::{CopyRequest, Destination, Source};

/// The request a sync's source is planned from (always a whole tree), and its
/// destination; or why the two cannot be synced.
pub(crate) fn sync_sides(request: &CopyRequest) -> Result<(CopyRequest, Far)> {
    let refuse = |why: String| Err(Error::InvalidInput(why));
    let request = &everything_under(request);
    let Source::Location(source) = &request.source else {
        return refuse("sync takes an s3:// prefix or a local directory as its source".into());
    };
    let source_text = match source {
        Location::S3(url) => url.key.clone(),
        Location::Local(path) => path.to_string_lossy().into_owned(),
        Location::Http(url) => {
            return refuse(format!(
                "{url}: a web server cannot be listed, so it cannot be synced; use cp"
            ))
        }
    };
    if request.is_pattern(&source_text) {
        return refuse(format!(
            "sync compares two trees and takes no wildcards ('{source_text}'); choose what to \
             sync with --exclude and --include, or add --raw if the name holds '*', '?' or '['"
        ));
    }
    let far = match (&request.destination, source) {
        (Destination::Path(_), Location::Local(_)) => {
            return refuse(
                "sync needs an s3:// side: it syncs S3 to a directory, a directory to S3, or \
                 S3 to S3"
                    .into(),
            )
        }
        (Destination::Path(root), _) => Far::files(root.clone()),
        (Destination::Store(to), Location::S3(from)) if overlaps(from, to) => {
            return refuse(format!(
                "{from} and {to} overlap: a sync into its own source would copy its copies"
            ))
        }
        (Destination::Store(to), _) => Far::store(to),
        (Destination::Stdout | Destination::Discard, _) => {
            return refuse("sync writes into a directory or an s3:// prefix".into())
        }
    };
    if let Location::Local(path) = source {
        if std::fs::symlink_metadata(path).is_err() {
            return Err(Error::NotFound {
                what: path.display().to_string(),
                detail: "no such file or directory: sync's source must be a directory that exists"
                    .to_owned(),
            });
        }
        if !path.is_dir() {
            return refuse(format!(
                "{}: sync takes a directory; to upload one file use cp",
                path.display()
            ));
        }
    }
    let mut planned = request.clone();
    planned.recursive = true;
    Ok((planned, far))
}

/// `s3://b/p/*`, as s5cmd users write a sync's source, is the prefix `s3://b/p/`: every
/// key under it is what a sync compares anyway.
fn everything_under(request: &CopyRequest) -> CopyRequest {
    let mut request = request.clone();
    let prefix = match &request.source {
        Source::Location(Location::S3(url)) if !request.options.raw => url
            .key
            .strip_suffix('*')
            .filter(|prefix| prefix.is_empty() || prefix.ends_with('/'))
            .filter(|prefix| !request.is_pattern(prefix))
            .map(str::to_owned),
        _ => None,
    };
    if let (Some(prefix), Source::Location(Location::S3(url))) = (prefix, &mut request.source) {
        url.key = prefix;
    }
    request
}

/// Two prefixes of one bucket, one inside the other.
fn overlaps(a: &S3Url, b: &S3Url) -> bool {
    let prefix = |url: &S3Url| match url.key.as_str() {
        "" => String::new(),
        key if key.ends_with('/') => key.to_owned(),
        key => format!("{key}/"),
    };
    let (a_prefix, b_prefix) = (prefix(a), prefix(b));
    a.bucket == b.bucket && (a_prefix.starts_with(&b_prefix) || b_prefix.starts_with(&a_prefix))
}
