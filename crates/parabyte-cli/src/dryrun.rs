//! `cp --dryrun` (and `mv`, `sync`, `rm`): one line per object on stdout saying what would
//! happen to it, as `aws s3 cp --dryrun` prints them (`mv`: `(dryrun) move: A to B`); with
//! `--json`, one JSON object per line instead. Objects the filters leave out are counted,
//! and listed one by one only with `-v` (or as JSON).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parabyte::{Preview, Reporter};

use crate::escape;

/// Prints each preview as it is decided (keys escaped: they come from the store).
pub(crate) struct Printer {
    json: bool,
    /// `mv`: what would be copied would be moved.
    moving: bool,
    /// Print a line for each object the filters leave out, not only their count.
    list_excluded: bool,
    excluded: AtomicU64,
}

impl Printer {
    pub(crate) fn new(json: bool, verbose: bool) -> Printer {
        Printer {
            json,
            moving: false,
            list_excluded: json || verbose,
            excluded: AtomicU64::new(0),
        }
    }

    /// `mv --dryrun`: each object that would be copied would be moved (`(dryrun) move:`).
    pub(crate) fn moving(self) -> Printer {
        Printer {
            moving: true,
            ..self
        }
    }

    /// How many objects the filters left out.
    pub(crate) fn excluded(&self) -> u64 {
        self.excluded.load(Relaxed)
    }
}

impl Reporter for Printer {
    fn previewed(&self, preview: Preview<'_>) {
        if matches!(preview, Preview::Excluded { .. }) {
            self.excluded.fetch_add(1, Relaxed);
            if !self.list_excluded {
                return;
            }
        }
        let line = if self.json {
            let value = match preview {
                Preview::Copy {
                    source,
                    destination,
                } => {
                    let verb = if self.moving { "move" } else { "copy" };
                    serde_json::json!({"dryrun": verb, "source": source, "destination": destination})
                }
                Preview::Unchanged {
                    source,
                    destination,
                } => {
                    serde_json::json!({"dryrun": "skip", "reason": "unchanged", "source": source, "destination": destination})
                }
                Preview::Excluded { source, filter } => {
                    serde_json::json!({"dryrun": "skip", "reason": "excluded", "source": source, "filter": filter.to_string()})
                }
                Preview::Delete { source } => {
                    serde_json::json!({"dryrun": "delete", "source": source})
                }
            };
            escape::json_line(value.to_string())
        } else {
            let shown = |text: &str| escape::printable(text).into_owned();
            match preview {
                Preview::Copy {
                    source,
                    destination,
                } => {
                    // As aws names them: a remote source to here, here to S3, S3 to S3; a
                    // move, whatever its direction.
                    let verb = match self.moving {
                        true => "move",
                        false => crate::progress::verb(source, destination),
                    };
                    format!(
                        "(dryrun) {verb}: {} to {}",
                        shown(source),
                        shown(destination)
                    )
                }
                Preview::Unchanged {
                    source,
                    destination,
                } => format!(
                    "(dryrun) skip: {} ({} holds this version from an earlier run)",
                    shown(source),
                    shown(destination)
                ),
                Preview::Excluded { source, filter } => {
                    format!("(dryrun) skip: {} (excluded by {filter})", shown(source))
                }
                Preview::Delete { source } => format!("(dryrun) delete: {}", shown(source)),
            }
        };
        // A reader that has gone (`| head`) ends nothing: the run finishes and reports.
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}
