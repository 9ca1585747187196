//! A copy's summary as the user reads it: the `--json` summary on stdout, or failures and
//! totals on stderr.

use std::io::Write;

use parabyte::Summary;

use crate::escape;
use crate::status::tell;

/// How the summary shows failures: each is printed once, live or at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failures {
    List,
    ShownAbove,
}

/// The `--json` summary on stdout. A reader that has gone away (`| head -0`, a closed
/// pipe) loses it quietly: the objects are in place and the exit status still says so.
pub(crate) fn print_json(summary: &Summary) {
    let written = serde_json::to_writer(std::io::stdout().lock(), summary)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(std::io::stdout().lock()))
        .and_then(|()| std::io::stdout().flush());
    match written {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            tell(format_args!(
                "warning: the --json summary could not be written to stdout: {error}"
            ));
        }
        _ => {}
    }
}

/// One failure: the object, then what went wrong; the object once, since most errors
/// name it themselves.
pub(crate) fn failure_line(source: &str, error: &str) -> String {
    // Both escaped alike: the error names the source as the line does.
    let (source, error) = (escape::printable(source), escape::printable(error));
    if error.contains(&*source) {
        error.into_owned()
    } else {
        format!("{source}: {error}")
    }
}

pub(crate) fn print_summary(summary: &Summary, failures: Failures, only_failures: bool) {
    let mut err = std::io::stderr().lock();
    if !summary.failures.is_empty() {
        match failures {
            Failures::ShownAbove => {
                let _ = writeln!(
                    err,
                    "failed {} object(s), each shown above as it failed",
                    summary.failures.len()
                );
            }
            Failures::List => {
                let _ = writeln!(err, "failed {} object(s):", summary.failures.len());
                for failure in &summary.failures {
                    let _ = writeln!(
                        err,
                        "  {}",
                        failure_line(&failure.source, &failure.error.to_string())
                    );
                }
            }
        }
    }
    if only_failures {
        return;
    }
    for line in summary_lines(summary) {
        let _ = writeln!(err, "{line}");
    }
}

/// The summary as text: only the lines that say something about this run.
fn summary_lines(summary: &Summary) -> Vec<String> {
    let seconds = summary.elapsed.as_secs_f64();
    let by_time = match summary.skipped_by_size_and_time {
        0 => String::new(),
        n => format!(" ({n} of them by size and modification time alone)"),
    };
    let mut lines = vec![format!(
        "{} object(s), {} in {seconds:.2}s ({}/s); {} already complete and skipped{by_time}",
        summary.objects,
        human_bytes(summary.bytes as f64),
        human_bytes(summary.bytes_per_second),
        summary.skipped,
    )];
    if summary.deleted > 0 {
        lines.push(format!(
            "deleted {} object(s) the source lacks",
            summary.deleted
        ));
    }
    if summary.sent_with_md5 > 0 {
        lines.push(format!(
            "the store refused checksum headers: {} object(s) went with Content-MD5 instead, each body checked by the store, and are stored without a CRC:",
            summary.sent_with_md5
        ));
        lines.extend(without_crc(summary));
    }
    if summary.resumed > 0 {
        lines.push(format!(
            "resumed {} object(s) where an earlier run stopped: {} already on disk, not fetched again",
            summary.resumed,
            human_bytes(summary.resumed_bytes as f64),
        ));
    }
    let requests = summary.requests;
    // A local copy sends nothing: no line of zeros.
    let writes = requests.put + requests.multipart + requests.copy + requests.delete;
    if requests.get + requests.list + requests.head + writes + summary.connections + summary.retries
        > 0
    {
        // Uploads add their kinds; a download's line stays as it always was.
        let uploads = match writes {
            0 => String::new(),
            _ => format!(
                ", {} PUT, {} multipart, {} COPY, {} DELETE",
                requests.put, requests.multipart, requests.copy, requests.delete
            ),
        };
        lines.push(format!(
            "requests: {} GET, {} LIST, {} HEAD{uploads}; {} connection(s) opened; {} retr{}",
            requests.get,
            requests.list,
            requests.head,
            summary.connections,
            summary.retries,
            if summary.retries == 1 { "y" } else { "ies" },
        ));
    }
    let verified = summary.verified;
    if verified.checksum + verified.md5 + verified.size_only > 0 {
        lines.push(format!(
            "verified: {} by the store's checksum, {} by the MD5 in the ETag, {} by size only",
            verified.checksum, verified.md5, verified.size_only,
        ));
    }
    lines
}

pub(crate) fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The objects stored without a CRC, one line each: the first [`NAMED_IN_SUMMARY`], then
/// how many more (`--json` names up to a thousand).
fn without_crc(summary: &Summary) -> Vec<String> {
    let named = &summary.sent_with_md5_objects;
    let mut lines: Vec<String> = named
        .iter()
        .take(NAMED_IN_SUMMARY)
        .map(|object| format!("  {}", escape::terminal_safe(object)))
        .collect();
    let more = summary.sent_with_md5.saturating_sub(lines.len() as u64);
    if more > 0 {
        lines.push(format!("  and {more} more (--json names up to a thousand)"));
    }
    lines
}

/// Objects named one per line in the summary a person reads.
const NAMED_IN_SUMMARY: usize = 20;
