//! A manifest into an S3 prefix: each line a local file (uploaded), an S3 object (copied
//! inside the store) or a web file (streamed into the store), stored under the key its
//! DEST_PATH names below the prefix, or the full `s3://bucket/key` it names, or the prefix and
//! the source's last path segment.

use std::path::PathBuf;

use super::line::{read_lines, Fields, ManifestError};
use crate::location::{HttpUrl, Location, S3Url};

/// Where one line into a store reads from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreSource {
    /// A file on this machine, as the line names it (relative to the working directory).
    File(PathBuf),
    /// An object copied inside the store.
    Object(S3Url),
    /// A web server's file.
    Web(HttpUrl),
}

/// One line of a manifest into a store, its key decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreItem {
    pub source: StoreSource,
    pub to: S3Url,
    /// For an object: its size, which with `etag` pins the version copied.
    pub size: Option<u64>,
    pub etag: Option<String>,
}

/// Read a manifest whose items go under `prefix` (`s3://b/p` is taken as `s3://b/p/`, as a
/// tree's destination is).
pub(crate) fn parse_into_store(text: &str, prefix: &S3Url) -> (Vec<StoreItem>, Vec<ManifestError>) {
    let under = match prefix.key.as_str() {
        "" => String::new(),
        key if key.ends_with('/') => key.to_owned(),
        key => format!("{key}/"),
    };
    read_lines(text, |fields| store_item(fields, &prefix.bucket, &under))
}

/// The keys the good lines of a manifest into `prefix` write: where a task that ran them
/// looks for the uploads an earlier attempt left open.
pub fn keys_into_store(text: &str, prefix: &S3Url) -> Vec<S3Url> {
    parse_into_store(text, prefix)
        .0
        .into_iter()
        .map(|item| item.to)
        .collect()
}

fn store_item(fields: Fields, bucket: &str, under: &str) -> Result<StoreItem, String> {
    let (source, name) = match Location::parse(&fields.source).map_err(|e| e.to_string())? {
        Location::S3(url) if url.is_prefix() => {
            return Err(format!(
                "'{url}' is a prefix; a manifest names single objects"
            ))
        }
        Location::S3(url) => {
            let name = url.key.rsplit('/').next().map(str::to_owned);
            (StoreSource::Object(url), name)
        }
        Location::Http(url) => (StoreSource::Web(url.clone()), url.file_name()),
        Location::Local(path) if path.as_os_str() == "-" => {
            return Err("standard input cannot be a manifest's source; name a file".into())
        }
        Location::Local(path) => {
            if fields.size.is_some() || fields.etag.is_some() {
                return Err(format!(
                    "'{}' is a local file: SIZE and ETAG describe objects, leave them out ('-')",
                    path.display()
                ));
            }
            let name = path
                .file_name()
                .and_then(|name| name.to_str())
                .map(str::to_owned);
            (StoreSource::File(path), name)
        }
    };
    let to = match fields.dest.as_deref() {
        Some(dest) if dest.starts_with("s3://") => match S3Url::parse(dest) {
            Ok(url) if url.is_prefix() => {
                return Err(format!(
                    "destination '{url}' is a prefix; give the whole key, s3://bucket/key"
                ))
            }
            Ok(url) => url,
            Err(e) => return Err(format!("destination {e}")),
        },
        Some(dest) if dest.contains("://") => {
            return Err(format!(
                "destination '{}' is not a key: give a key below the prefix or s3://bucket/key",
                crate::location::redact(dest)
            ))
        }
        Some(dest) => {
            key_below(dest).map_err(|reason| {
                format!(
                    "destination '{}' cannot be used: {reason}",
                    dest.escape_debug()
                )
            })?;
            S3Url {
                bucket: bucket.to_owned(),
                key: format!("{under}{dest}"),
            }
        }
        None => match name.filter(|name| !name.is_empty() && name != "." && name != "..") {
            Some(name) => S3Url {
                bucket: bucket.to_owned(),
                key: format!("{under}{name}"),
            },
            None => {
                return Err(format!(
                    "{} has no name to store it under; give a DEST_PATH",
                    crate::location::redact(&fields.source)
                ))
            }
        },
    };
    Ok(StoreItem {
        source,
        to,
        size: fields.size,
        etag: fields.etag,
    })
}

/// A key below the prefix as a manifest may name it: `/`-separated names that stay below it.
fn key_below(dest: &str) -> Result<(), String> {
    if dest.starts_with('/') {
        return Err("it starts with '/'; a key below the prefix is written without one".into());
    }
    for segment in dest.split('/') {
        match segment {
            "" => return Err("it has an empty segment ('//' or a trailing '/')".into()),
            "." | ".." => return Err(format!("it has a '{segment}' segment")),
            _ if segment.contains('\0') => return Err("it contains a NUL byte".into()),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> S3Url {
        S3Url::parse(text).unwrap()
    }

    fn keys(text: &str, prefix: &str) -> (Vec<(StoreSource, String)>, Vec<String>) {
        let (items, errors) = parse_into_store(text, &url(prefix));
        let items = items
            .into_iter()
            .map(|item| (item.source, item.to.to_string()))
            .collect();
        (items, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn files_objects_and_web_files_get_their_keys() {
        let text = "data/a.bin\n\
            /abs/b.bin  sub/b2.bin\n\
            s3://src/k/c.txt\n\
            s3://src/k/d.txt  s3://other/full/key.txt  12  \"e\"\n\
            https://h/v/w.iso?sig=1\n\
            ./dir with space/f\tx/y z\n";
        let (items, errors) = keys(text, "s3://dst/up");
        assert_eq!(errors, Vec::<String>::new());
        let web = HttpUrl::parse("https://h/v/w.iso?sig=1").unwrap();
        assert_eq!(
            items,
            vec![
                (
                    StoreSource::File("data/a.bin".into()),
                    "s3://dst/up/a.bin".into()
                ),
                (
                    StoreSource::File("/abs/b.bin".into()),
                    "s3://dst/up/sub/b2.bin".into()
                ),
                (
                    StoreSource::Object(url("s3://src/k/c.txt")),
                    "s3://dst/up/c.txt".into()
                ),
                (
                    StoreSource::Object(url("s3://src/k/d.txt")),
                    "s3://other/full/key.txt".into()
                ),
                (StoreSource::Web(web), "s3://dst/up/w.iso".into()),
                (
                    StoreSource::File("./dir with space/f".into()),
                    "s3://dst/up/x/y z".into()
                ),
            ]
        );
        let (items, _) = parse_into_store("s3://src/k/d.txt - 12 \"e\"\n", &url("s3://dst/"));
        assert_eq!(items[0].to.to_string(), "s3://dst/d.txt");
        assert_eq!(
            (items[0].size, items[0].etag.as_deref()),
            (Some(12), Some("\"e\""))
        );
    }

    #[test]
    fn keys_that_leave_the_prefix_or_name_nothing_are_refused_by_line() {
        let text = "a.bin ../up.bin\n\
            a.bin /root.bin\n\
            a.bin x//y\n\
            a.bin x/./y\n\
            a.bin x/\n\
            a.bin s3://b/prefix/\n\
            a.bin https://h/k\n\
            a.bin - 5\n\
            -\n\
            ..\n\
            https://h/\n\
            s3://b/p/\n\
            ok.bin\n";
        let (items, errors) = keys(text, "s3://dst/p/");
        assert_eq!(
            items,
            vec![(
                StoreSource::File("ok.bin".into()),
                "s3://dst/p/ok.bin".into()
            )]
        );
        let expect = [
            "manifest line 1: destination '../up.bin' cannot be used: it has a '..' segment",
            "manifest line 2: destination '/root.bin' cannot be used: it starts with '/'",
            "manifest line 3: destination 'x//y' cannot be used: it has an empty segment",
            "manifest line 4: destination 'x/./y' cannot be used: it has a '.' segment",
            "manifest line 5: destination 'x/' cannot be used: it has an empty segment",
            "manifest line 6: destination 's3://b/prefix/' is a prefix",
            "manifest line 7: destination 'https://h/k' is not a key",
            "manifest line 8: 'a.bin' is a local file: SIZE and ETAG describe objects",
            "manifest line 9: no source",
            "manifest line 10: .. has no name to store it under",
            "manifest line 11: https://h/ has no name to store it under",
            "manifest line 12: 's3://b/p/' is a prefix",
        ];
        assert_eq!(errors.len(), expect.len(), "{errors:?}");
        for (error, expected) in errors.iter().zip(expect) {
            assert!(error.starts_with(expected), "{error}");
        }
    }

    #[test]
    fn json_and_ls_lines_name_keys_too() {
        let text = "{\"source\": \"f.txt\", \"dest\": \"j/f.txt\"}\n\
            {\"url\": \"s3://src/p/k.bin\", \"key\": \"p/k.bin\", \"size\": 3, \"etag\": \"\\\"x\\\"\"}\n";
        let (items, errors) = parse_into_store(text, &url("s3://dst/to"));
        assert_eq!(errors, vec![]);
        assert_eq!(items[0].to.to_string(), "s3://dst/to/j/f.txt");
        assert_eq!(items[1].to.to_string(), "s3://dst/to/p/k.bin");
        assert_eq!(items[1].size, Some(3));
    }
}
