//! The keywords of `Client.download` and `Client.download_async`, in one place: both take
//! `**keywords` and parse them here, so the two cannot drift apart, and a mistyped keyword
//! is refused with the nearest known one. Python's `DownloadOptions` (python/parabyte/
//! _keywords.py) types the same names, and a test holds the two lists equal.

use parabyte::{
    CopyOptions, CopyRequest, Destination, Filter, KeyBounds, RemoveRequest, S3Url, Source,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py;

/// Every keyword `download` takes besides the source and the destination.
pub const DOWNLOAD_KEYWORDS: [&str; 8] = [
    "recursive",
    "exclude",
    "include",
    "raw",
    "dry_run",
    "progress",
    "after",
    "until_after",
];

/// What the keywords of one `download` call ask for.
#[derive(Default)]
pub struct DownloadKeywords {
    recursive: bool,
    exclude: Vec<String>,
    include: Vec<String>,
    raw: bool,
    /// `cp --dryrun`: nothing fetched or written; the summary counts what would be.
    dry_run: bool,
    pub progress: Option<Py<PyAny>>,
    after: Option<String>,
    until_after: Option<String>,
}

impl DownloadKeywords {
    /// Read `keywords`; `method` names the call in errors (`download`).
    pub fn parse(method: &str, keywords: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut parsed = DownloadKeywords::default();
        let Some(keywords) = keywords else {
            return Ok(parsed);
        };
        for (name, value) in keywords.iter() {
            let name: String = name.extract()?;
            let none = value.is_none();
            match name.as_str() {
                "recursive" => parsed.recursive = value.extract()?,
                "exclude" => parsed.exclude = patterns(&name, &value)?,
                "include" => parsed.include = patterns(&name, &value)?,
                "raw" => parsed.raw = value.extract()?,
                "dry_run" => parsed.dry_run = value.extract()?,
                "progress" => parsed.progress = (!none).then(|| value.unbind()),
                "after" => parsed.after = value.extract()?,
                "until_after" => parsed.until_after = value.extract()?,
                unknown => return Err(unexpected(method, unknown, &DOWNLOAD_KEYWORDS)),
            }
        }
        Ok(parsed)
    }

    /// The copy the keywords ask for, of `source` into `destination`.
    pub fn request(&self, source: &str, destination: Destination) -> PyResult<CopyRequest> {
        let excludes = self.exclude.iter().map(|pattern| Filter::exclude(pattern));
        let includes = self.include.iter().map(|pattern| Filter::include(pattern));
        let mut request = CopyRequest::parse(source, destination, self.recursive).map_err(to_py)?;
        request.options = CopyOptions {
            filters: excludes
                .chain(includes)
                .collect::<parabyte::Result<_>>()
                .map_err(to_py)?,
            raw: self.raw,
            dry_run: self.dry_run,
            upload: Default::default(),
            follow_symlinks: false,
        };
        if self.after.is_some() || self.until_after.is_some() {
            request.source = Source::KeyRange {
                prefix: S3Url::parse(source).map_err(to_py)?,
                bounds: KeyBounds {
                    after: self.after.clone(),
                    until_after: self.until_after.clone(),
                },
            };
            request.recursive = true;
        }
        Ok(request)
    }
}

/// Every keyword `remove` takes besides the source, as `rm` takes them.
pub const REMOVE_KEYWORDS: [&str; 5] = ["recursive", "exclude", "include", "raw", "dry_run"];

/// `remove`'s request, from its keywords; `method` names the call in errors.
pub fn remove_request(
    method: &str,
    source: &str,
    keywords: Option<&Bound<'_, PyDict>>,
) -> PyResult<RemoveRequest> {
    let mut parsed = DownloadKeywords::default();
    for (name, value) in keywords.into_iter().flat_map(|keywords| keywords.iter()) {
        let name: String = name.extract()?;
        match name.as_str() {
            "recursive" => parsed.recursive = value.extract()?,
            "exclude" if !value.is_none() => parsed.exclude = patterns(&name, &value)?,
            "include" if !value.is_none() => parsed.include = patterns(&name, &value)?,
            "exclude" | "include" => {}
            "raw" => parsed.raw = value.extract()?,
            "dry_run" => parsed.dry_run = value.extract()?,
            unknown => return Err(unexpected(method, unknown, &REMOVE_KEYWORDS)),
        }
    }
    let excludes = parsed
        .exclude
        .iter()
        .map(|pattern| Filter::exclude(pattern));
    let includes = parsed
        .include
        .iter()
        .map(|pattern| Filter::include(pattern));
    Ok(RemoveRequest {
        source: S3Url::parse(source).map_err(to_py)?,
        recursive: parsed.recursive,
        options: CopyOptions {
            filters: excludes
                .chain(includes)
                .collect::<parabyte::Result<_>>()
                .map_err(to_py)?,
            raw: parsed.raw,
            dry_run: parsed.dry_run,
            upload: Default::default(),
            follow_symlinks: false,
        },
        bounds: KeyBounds::default(),
    })
}

/// `exclude=["*.tmp"]`: a sequence of patterns; a lone string is refused, since it would
/// otherwise be read as one pattern per character.
pub fn patterns(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if value.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{name}= takes a list of patterns, e.g. {name}=[{value}]"
        )));
    }
    value.extract()
}

/// The TypeError Python raises for an unknown keyword, with the nearest of `known`.
pub fn unexpected(method: &str, name: &str, known: &[&str]) -> PyErr {
    // A few letters off, or the start of a keyword (`until` for `until_after`).
    let nearest = known
        .iter()
        .map(|known| match known.starts_with(name) && name.len() >= 3 {
            true => (0, known),
            false => (strsim::damerau_levenshtein(known, name), known),
        })
        .min()
        .filter(|(distance, known)| *distance <= known.len().max(3) / 3 + 1);
    let hint = match nearest {
        Some((_, known)) => format!("; did you mean '{known}'?"),
        None => format!("; it takes {}", known.join(", ")),
    };
    PyTypeError::new_err(format!(
        "{method}() got an unexpected keyword argument '{name}'{hint}"
    ))
}
