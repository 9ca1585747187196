//! One manifest line as fields (SOURCE, DEST_PATH, SIZE, ETAG), whichever form it is written
//! in, and the reading of a whole manifest line by line: what the fields mean depends on the
//! destination, and is decided by the caller.

use std::fmt;

use serde::Deserialize;

/// A line that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// 1-based, as editors count.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "manifest line {}: {}", self.line, self.message)
    }
}

/// The fields of one line, as written (`-` and empty fields left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fields {
    pub source: String,
    pub dest: Option<String>,
    pub size: Option<u64>,
    pub etag: Option<String>,
}

/// One line in its JSON form, as a manifest writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonLine {
    source: String,
    dest: Option<String>,
    size: Option<u64>,
    etag: Option<String>,
}

/// One object line of `parabyte ls --recursive --json` (other fields are ignored, so the
/// line may grow): the key becomes the destination path, directories kept.
#[derive(Debug, Deserialize)]
struct ListedLine {
    url: String,
    key: Option<String>,
    dest: Option<String>,
    size: Option<u64>,
    etag: Option<String>,
}

/// Each line that is not blank or a comment, through `interpret`: its items, and the lines
/// that are not items with their numbers. A bad line never stops the others.
pub(crate) fn read_lines<T>(
    text: &str,
    mut interpret: impl FnMut(Fields) -> Result<T, String>,
) -> (Vec<T>, Vec<ManifestError>) {
    let (mut items, mut errors) = (Vec::new(), Vec::new());
    // Editors on Windows start UTF-8 files with a byte-order mark: not part of a URL.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        match fields(line).and_then(&mut interpret) {
            Ok(item) => items.push(item),
            Err(message) => errors.push(ManifestError {
                line: index + 1,
                message,
            }),
        }
    }
    (items, errors)
}

fn fields(line: &str) -> Result<Fields, String> {
    if line.trim_start().starts_with('{') {
        return json_line(line);
    }
    let fields: Vec<&str> = if line.contains('\t') {
        line.split('\t').map(str::trim).collect()
    } else {
        line.split_whitespace().collect()
    };
    if fields.len() > 4 {
        return Err(format!(
            "{} fields, at most 4 (SOURCE DEST_PATH SIZE ETAG); separate by tabs if a path has spaces",
            fields.len()
        ));
    }
    let field = |at: usize| {
        fields
            .get(at)
            .copied()
            .filter(|value| !value.is_empty() && *value != "-")
    };
    let source = field(0).ok_or("no source")?;
    let size = field(2)
        .map(|size| {
            size.parse::<u64>()
                .map_err(|_| format!("size '{size}' is not a number of bytes"))
        })
        .transpose()?;
    Ok(Fields {
        source: source.to_owned(),
        dest: field(1).map(str::to_owned),
        size,
        etag: field(3).map(str::to_owned),
    })
}

/// A JSON line: the manifest's own form (with `source`) or an `ls --json` line (with `url`).
fn json_line(line: &str) -> Result<Fields, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not a valid JSON manifest entry: {e}"))?;
    let has = |field: &str| value.get(field).is_some();
    if has("prefix") && !has("source") && !has("url") {
        return Err(
            "a \"prefix\" line (from ls without --recursive) names no object; list with --recursive"
                .into(),
        );
    }
    if !has("source") && !has("url") {
        return Err("no \"source\" (nor \"url\", as ls --json prints it): no object named".into());
    }
    if has("source") {
        let json: JsonLine = serde_json::from_value(value)
            .map_err(|e| format!("not a valid JSON manifest entry: {e}"))?;
        return Ok(Fields {
            source: json.source,
            dest: json.dest,
            size: json.size,
            etag: json.etag,
        });
    }
    let listed: ListedLine =
        serde_json::from_value(value).map_err(|e| format!("not a valid ls --json line: {e}"))?;
    Ok(Fields {
        source: listed.url,
        dest: listed.dest.or(listed.key),
        size: listed.size,
        etag: listed.etag,
    })
}
