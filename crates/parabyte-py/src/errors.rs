//! Core errors as Python exceptions. The classes live in `parabyte/exceptions.py`, where a
//! class can also derive from `FileNotFoundError` or `PermissionError`; this is the one
//! place a core error kind picks its class.

use std::borrow::Borrow;

use pyo3::exceptions::PyRuntimeError;
use pyo3::PyErr;

pyo3::import_exception!(parabyte.exceptions, Error);
pyo3::import_exception!(parabyte.exceptions, InvalidInputError);
pyo3::import_exception!(parabyte.exceptions, NotFoundError);
pyo3::import_exception!(parabyte.exceptions, PermissionDeniedError);
pyo3::import_exception!(parabyte.exceptions, CredentialsError);
pyo3::import_exception!(parabyte.exceptions, ObjectChangedError);
pyo3::import_exception!(parabyte.exceptions, NetworkError);
pyo3::import_exception!(parabyte.exceptions, StoreError);
pyo3::import_exception!(parabyte.exceptions, LocalFileError);
pyo3::import_exception!(parabyte.exceptions, TransferFailedError);

/// The Python exception for a core error (owned, or a failure's), carrying its full message.
pub fn to_py(error: impl Borrow<parabyte::Error>) -> PyErr {
    use parabyte::Error as Core;
    let error = error.borrow();
    let message = keyword_names(&error.to_string());
    // A retry budget that ran out is reported as what kept failing.
    let mut kind = error;
    while let Core::GaveUp { last, .. } = kind {
        kind = last;
    }
    match kind {
        Core::InvalidInput(_) | Core::UnsafeKey { .. } | Core::Collision { .. } => {
            InvalidInputError::new_err(message)
        }
        Core::NotFound { .. }
        | Core::NoSuchBucket { .. }
        | Core::NothingMatched { .. }
        | Core::IsPrefix { .. }
        | Core::PrefixNotKey { .. } => NotFoundError::new_err(message),
        Core::PermissionDenied { .. } => PermissionDeniedError::new_err(message),
        Core::BadCredentials { .. } | Core::NoCredentials(_) => CredentialsError::new_err(message),
        Core::Changed { .. } => ObjectChangedError::new_err(message),
        Core::Network { .. } | Core::UntrustedCertificate { .. } | Core::CannotConnect { .. } => {
            NetworkError::new_err(message)
        }
        Core::Throttled { .. } | Core::Http { .. } | Core::Protocol { .. } => {
            StoreError::new_err(message)
        }
        Core::Io { .. } => LocalFileError::new_err(message),
        _ => Error::new_err(message),
    }
}

/// A transfer task that panicked or was torn down: a bug, not a store failure.
pub fn task_failed(join: tokio::task::JoinError) -> PyErr {
    PyRuntimeError::new_err(format!("parabyte transfer task failed: {join}"))
}

/// The CLI flags core messages mention, with the keyword each one is in Python (from the
/// one table of options, `parabyte_cli::option_table`); flags that switch something on
/// become `name=True`. Longest first, so `--list-page-size` is never read as a shorter flag.
fn keywords() -> &'static [(String, String)] {
    static KEYWORDS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    KEYWORDS.get_or_init(|| {
        let mut keywords: Vec<(String, String)> = parabyte_cli::option_table()
            .into_iter()
            .filter_map(|row| {
                let argument = row.python_argument()?;
                Some((format!("--{}", row.flag), argument))
            })
            .collect();
        // A value messages give with the flag, as Python writes it.
        keywords.push((
            "--request-payer requester".to_owned(),
            "request_payer=\"requester\"".to_owned(),
        ));
        keywords.sort_by_key(|(flag, _)| std::cmp::Reverse(flag.len()));
        keywords
    })
}

/// A core message with its CLI flags named as Python keywords: "--workers must be at least
/// 1" reads "workers must be at least 1", "--part-size 100 is too small" reads
/// "part_size=100 is too small", "check --endpoint-url/--region" reads "check
/// endpoint_url=/region=". Only a flag that starts a word is replaced, so a key or bucket
/// name with "--" inside it stays as it is.
pub fn keyword_names(message: &str) -> String {
    let mut named = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        let (before, from_flag) = rest.split_at(at);
        named.push_str(before);
        let starts_word = named
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
        let flag = keywords().iter().find(|(flag, _)| {
            from_flag.strip_prefix(flag.as_str()).is_some_and(|after| {
                after
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '-'))
            })
        });
        let Some((flag, keyword)) = flag.filter(|_| starts_word) else {
            named.push_str("--");
            rest = &from_flag[2..];
            continue;
        };
        let after = &from_flag[flag.len()..];
        if let Some(value) = after
            .strip_prefix(' ')
            .filter(|value| value.starts_with(|c: char| c.is_ascii_digit() || c == '"'))
        {
            // The flag and its value: `part_size=100`.
            named.push_str(keyword);
            rest = value;
        } else if named.is_empty() && after.starts_with(' ') {
            // The message's subject: `workers must be ...`.
            named.push_str(keyword.trim_end_matches('='));
            rest = after;
        } else {
            named.push_str(keyword);
            rest = after;
        }
    }
    named.push_str(rest);
    COMMANDS
        .iter()
        .fold(named, |named, (cli, python)| named.replace(cli, python))
}

/// The CLI commands core messages send the user to, as the Python functions that do it.
const COMMANDS: &[(&str, &str)] = &[
    (
        "to upload one file use cp",
        "to upload one file use upload()",
    ),
    (
        "cannot be synced; use cp",
        "cannot be synced; use download()",
    ),
    (
        "cannot be deleted where they are: use cp",
        "cannot be deleted where they are: use download()",
    ),
];

#[cfg(test)]
mod tests {
    use super::keyword_names;

    #[test]
    fn cli_flags_read_as_keywords() {
        let cases = [
            ("--workers must be at least 1", "workers must be at least 1"),
            (
                "--part-size 100 is too small; use at least 1KiB",
                "part_size=100 is too small; use at least 1KiB",
            ),
            (
                "--timeout 0.0 is out of range",
                "timeout=0.0 is out of range",
            ),
            (
                "s3://b/imgs is no object; add '/' or --recursive to copy the prefix",
                "s3://b/imgs is no object; add '/' or recursive=True to copy the prefix",
            ),
            (
                "cannot be checked; --no-verify accepts the size alone",
                "cannot be checked; verify=False accepts the size alone",
            ),
            (
                "a key with --raw-ish--recursive inside stays",
                "a key with --raw-ish--recursive inside stays",
            ),
            (
                "bucket 'b' does not exist (x); check the name and --endpoint-url/--region",
                "bucket 'b' does not exist (x); check the name and endpoint_url=/region=",
            ),
            (
                "access denied; try --no-sign-request for a public bucket",
                "access denied; try no_sign_request=True for a public bucket",
            ),
            // Not flags: a key with dashes inside, an unknown flag, a longer name.
            ("s3://b/a--region: not found", "s3://b/a--region: not found"),
            ("see --verbose", "see --verbose"),
            ("see --regions", "see --regions"),
            // Commands: the function that does it.
            (
                "f.txt: sync takes a directory; to upload one file use cp",
                "f.txt: sync takes a directory; to upload one file use upload()",
            ),
        ];
        for (core, python) in cases {
            assert_eq!(keyword_names(core), python);
        }
    }
}
