//! A manifest into a local directory (or discarded, or to stdout): each line an object of a
//! store or a web server, saved under its DEST_PATH below the destination directory.

use std::path::PathBuf;

use super::line::{read_lines, ManifestError};
use crate::disk::paths::relative_path;
use crate::location::{Location, ObjectUrl};

/// One object of a batch (a manifest, a list from Python), with what is already known of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// An S3 key or an http(s) URL; one batch may mix them.
    pub source: ObjectUrl,
    /// Absolute: used as it is. Relative: under the destination directory, which it may not
    /// leave. `None`: the last segment of the key or URL path, under the destination directory.
    pub destination: Option<PathBuf>,
    /// A known size plans every range up front and sends no probe request.
    pub size: Option<u64>,
    /// Pins the version when the size is known too; a different version is fetched whole.
    pub etag: Option<String>,
}

/// The items of a manifest, and the lines that are not items. A bad line never stops the
/// others from being read.
#[derive(Debug, Default)]
pub struct Manifest {
    /// The lines that are items, in file order.
    pub items: Vec<Item>,
    /// The lines that are not.
    pub errors: Vec<ManifestError>,
}

impl Manifest {
    /// Read a whole manifest of downloads (see the module docs for the format).
    pub fn parse(text: &str) -> Manifest {
        let (items, errors) = read_lines(text, |fields| {
            item(
                &fields.source,
                fields.dest.as_deref(),
                fields.size,
                fields.etag,
            )
        });
        Manifest { items, errors }
    }
}

fn item(
    source: &str,
    dest: Option<&str>,
    size: Option<u64>,
    etag: Option<String>,
) -> Result<Item, String> {
    let source = match Location::parse(source).map_err(|e| e.to_string())? {
        Location::S3(url) if url.is_prefix() => {
            return Err(format!(
                "'{url}' is a prefix; a manifest names single objects"
            ))
        }
        Location::S3(url) => ObjectUrl::S3(url),
        Location::Http(url) => ObjectUrl::Http(url),
        Location::Local(path) => {
            return Err(format!(
                "'{}' is not a URL; sources are s3://bucket/key or http(s)://host/path \
                 (local files are sources when the destination is s3://)",
                path.display()
            ))
        }
    };
    let destination = dest
        .map(|dest| {
            relative_path(dest)
                .map_err(|reason| format!("destination '{dest}' cannot be used: {reason}"))
        })
        .transpose()?;
    if destination.is_none() && source.file_name().is_none() {
        return Err(format!(
            "{source} has no file name to save it under; give a DEST_PATH"
        ));
    }
    Ok(Item {
        source,
        destination,
        size,
        etag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_url() {
        let manifest = Manifest::parse("\u{feff}s3://b/first.bin\ns3://b/second.bin\n");
        assert_eq!(manifest.errors, vec![]);
        let sources: Vec<String> = manifest
            .items
            .iter()
            .map(|i| i.source.to_string())
            .collect();
        assert_eq!(sources, ["s3://b/first.bin", "s3://b/second.bin"]);
    }

    #[test]
    fn every_form_of_line_is_read() {
        let text = "# renders\n\
            \n\
            s3://b/r/0001.exr\n\
            https://h/v2/model.bin  models/model.bin  1024  \"abc\"\n\
            s3://b/a.txt - 5120\r\n\
            s3://b/x y.txt\tdir with space/x y.txt\t\t\"e\"\n\
            {\"source\": \"s3://b/j.txt\", \"dest\": \"j/j.txt\", \"size\": 7, \"etag\": \"q\"}\n";
        let manifest = Manifest::parse(text);
        assert_eq!(manifest.errors, vec![]);
        let summary: Vec<_> = manifest
            .items
            .iter()
            .map(|item| {
                (
                    item.source.to_string(),
                    item.destination.clone(),
                    item.size,
                    item.etag.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("s3://b/r/0001.exr".into(), None, None, None),
                (
                    "https://h/v2/model.bin".into(),
                    Some("models/model.bin".into()),
                    Some(1024),
                    Some("\"abc\"".into())
                ),
                ("s3://b/a.txt".into(), None, Some(5120), None),
                (
                    "s3://b/x y.txt".into(),
                    Some("dir with space/x y.txt".into()),
                    None,
                    Some("\"e\"".into())
                ),
                (
                    "s3://b/j.txt".into(),
                    Some("j/j.txt".into()),
                    Some(7),
                    Some("q".into())
                ),
            ]
        );
    }

    #[test]
    fn bad_lines_are_named_and_the_rest_is_kept() {
        let text = "s3://b/ok1\n\
            s3://b/k ../escape\n\
            s3://b/k /etc/passwd\n\
            s3://b/k - 12MiB\n\
            ./local/file\n\
            gs://b/k\n\
            s3://b/prefix/\n\
            s3://b/k a 1 e extra\n\
            {\"source\": \"s3://b/k\", \"sise\": 1}\n\
            https://h/\n\
            s3://b/ok2\n";
        let manifest = Manifest::parse(text);
        let sources: Vec<_> = manifest
            .items
            .iter()
            .map(|i| i.source.to_string())
            .collect();
        assert_eq!(sources, vec!["s3://b/ok1", "s3://b/ok2"]);
        let lines: Vec<_> = manifest.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6, 7, 8, 9, 10]);
        let messages: Vec<_> = manifest.errors.iter().map(|e| e.to_string()).collect();
        let expect = [
            "manifest line 2: destination '../escape' cannot be used: it has a '..' path segment",
            "manifest line 3: destination '/etc/passwd' cannot be used: it starts with '/'",
            "manifest line 4: size '12MiB' is not a number of bytes",
            "manifest line 5: './local/file' is not a URL",
            "manifest line 6: 'gs://b/k': unsupported scheme",
            "manifest line 7: 's3://b/prefix/' is a prefix",
            "manifest line 8: 5 fields, at most 4",
            "manifest line 9: not a valid JSON manifest entry: unknown field `sise`",
            "manifest line 10: https://h/ has no file name",
        ];
        for (message, expected) in messages.iter().zip(expect) {
            assert!(message.starts_with(expected), "{message}");
        }
    }

    #[test]
    fn ls_json_lines_are_items_with_their_key_as_path() {
        let text = "{\"url\":\"s3://b/p/sub/k.bin\",\"key\":\"p/sub/k.bin\",\"size\":5,\"etag\":\"\\\"e\\\"\",\"last_modified\":\"2026-01-02T03:04:05.000Z\",\"storage_class\":\"STANDARD\",\"new_field\":[1]}\n\
            {\"url\":\"s3://b/p/x\",\"key\":\"p/x\",\"dest\":\"elsewhere/x\"}\n\
            {\"url\":\"s3://b/../up\",\"key\":\"../up\",\"size\":1}\n\
            {\"prefix\":\"p/sub/\"}\n\
            {\"total_objects\":2,\"total_bytes\":6}\n";
        let manifest = Manifest::parse(text);
        assert_eq!(
            manifest.items[0],
            Item {
                source: ObjectUrl::S3(crate::location::S3Url {
                    bucket: "b".into(),
                    key: "p/sub/k.bin".into()
                }),
                destination: Some("p/sub/k.bin".into()),
                size: Some(5),
                etag: Some("\"e\"".into()),
            }
        );
        assert_eq!(manifest.items[1].destination, Some("elsewhere/x".into()));
        assert_eq!(manifest.items.len(), 2);
        let errors: Vec<_> = manifest.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0].contains("line 3: destination '../up'"),
            "{errors:?}"
        );
        assert!(
            errors[1].contains("line 4: a \"prefix\" line"),
            "{errors:?}"
        );
        assert!(errors[2].contains("line 5: no \"source\""), "{errors:?}");
    }

    #[test]
    fn presigned_urls_in_errors_stay_redacted() {
        let text = "https://h/?X-Amz-Signature=topsecret\ngs://b/k?sig=topsecret\n";
        let manifest = Manifest::parse(text);
        assert_eq!(manifest.errors.len(), 2);
        for error in &manifest.errors {
            assert!(!error.message.contains("topsecret"), "{error}");
            assert!(error.message.contains("=REDACTED"), "{error}");
        }
    }

    /// Manifest lines made up from the pieces real ones have: never a panic, every line
    /// an item or an error naming it (`make fuzz` runs many more cases).
    mod fuzz {
        use proptest::prelude::*;

        use super::*;

        fn line() -> impl Strategy<Value = String> {
            let field = prop_oneof![
                "s3://[a-z.-]{0,8}/[a-z/%.~-]{0,12}",
                "https?://[a-z.:0-9\\[\\]]{0,12}/[a-z/?=&%-]{0,10}",
                "[0-9]{0,22}",
                "-?[0-9]{1,3}",
                "\"?[0-9a-f]{0,34}\"?",
                "[a-z./-]{0,12}",
                "\\{[\"a-z:,0-9 {}\\[\\]]{0,40}",
                "\\PC{0,10}",
            ];
            prop::collection::vec(field, 0..5).prop_flat_map(|fields| {
                prop::sample::select(vec![" ", "\t", "  ", "\t\t"])
                    .prop_map(move |separator| fields.join(separator))
            })
        }

        proptest! {
            #[test]
            fn every_line_is_an_item_or_a_named_error(lines in prop::collection::vec(line(), 0..8)) {
                let text = lines.join("\n");
                let manifest = Manifest::parse(&text);
                let counted = manifest.items.len() + manifest.errors.len();
                prop_assert!(counted <= lines.len());
                for error in &manifest.errors {
                    prop_assert!(error.line >= 1 && error.line <= lines.len());
                }
            }
        }
    }
}
