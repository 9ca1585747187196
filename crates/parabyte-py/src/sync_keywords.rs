//! The keywords `Client.sync` takes besides the upload keywords (`dry_run` among them): what
//! counts as changed, and deleting.

use parabyte::{SyncCompare, SyncOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::download_keywords::unexpected;
use crate::upload_keywords::UPLOAD_KEYWORDS;

/// `sync`'s own keywords.
pub const SYNC_KEYWORDS: [&str; 4] = ["delete", "max_delete", "delete_if_source_empty", "compare"];

/// What `sync`'s own keywords ask for.
#[derive(Default)]
pub struct SyncKeywords {
    pub options: SyncOptions,
}

impl SyncKeywords {
    /// Take `sync`'s own keywords out of `keywords`; the rest are upload keywords.
    pub fn take<'py>(
        method: &str,
        keywords: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<(SyncKeywords, Option<Bound<'py, PyDict>>)> {
        let mut parsed = SyncKeywords::default();
        let Some(keywords) = keywords else {
            return Ok((parsed, None));
        };
        let rest = keywords.copy()?;
        for name in SYNC_KEYWORDS {
            let Some(value) = rest.get_item(name)? else {
                continue;
            };
            rest.del_item(name)?;
            match name {
                "delete" => parsed.options.delete = value.extract()?,
                "max_delete" => parsed.options.max_delete = value.extract()?,
                "delete_if_source_empty" => {
                    parsed.options.delete_if_source_empty = value.extract()?
                }
                _ => parsed.options.compare = compare(&value.extract::<String>()?)?,
            }
        }
        // A misspelt keyword is told the nearest of both lists.
        for name in rest.keys() {
            let name: String = name.extract()?;
            if !UPLOAD_KEYWORDS.contains(&name.as_str()) {
                let known: Vec<&str> = SYNC_KEYWORDS
                    .iter()
                    .chain(&UPLOAD_KEYWORDS)
                    .copied()
                    .collect();
                return Err(unexpected(method, &name, &known));
            }
        }
        if parsed.options.max_delete.is_some() && !parsed.options.delete {
            return Err(PyValueError::new_err(
                "max_delete= limits deleting: pass it with delete=True",
            ));
        }
        if parsed.options.delete_if_source_empty && !parsed.options.delete {
            return Err(PyValueError::new_err(
                "delete_if_source_empty= is about deleting: pass it with delete=True",
            ));
        }
        Ok((parsed, Some(rest)))
    }
}

fn compare(name: &str) -> PyResult<SyncCompare> {
    match name {
        "size_and_time" => Ok(SyncCompare::SizeAndTime),
        "size_only" => Ok(SyncCompare::SizeOnly),
        "exact_timestamps" => Ok(SyncCompare::ExactTimestamps),
        "checksum" => Ok(SyncCompare::Checksum),
        other => Err(PyValueError::new_err(format!(
            "compare={other:?}: use \"size_and_time\" (the default, as aws s3 sync), \
             \"size_only\", \"exact_timestamps\" or \"checksum\""
        ))),
    }
}
