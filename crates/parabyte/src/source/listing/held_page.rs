//! A page waiting for the consumer, packed: the entries of a part the consumer has not
//! reached can wait long (a sync's merge moves at its slower side's pace), and in their own
//! `String`s they take about 180 bytes each (the entry, a heap block for its key and
//! another for its ETag). Packed, their text sits back to back in one buffer beside
//! 32 bytes of fixed fields: under half, in two allocations a page (docs/PROFILE.md,
//! stop 56). The part being read hands its pages over loose, as they were parsed.

use std::borrow::Cow;

use super::page::{ObjectEntry, STORAGE_CLASSES};
use super::spec::Listed;
use crate::timestamp::Timestamp;

/// The entries of one page, as the consumer will have them.
pub(super) enum HeldPage {
    Loose(Vec<Listed>),
    Packed(PackedPage),
}

/// Entries whose text (key or prefix, ETag, storage class) lies in `text`, each ending at
/// the offset its [`PackedEntry`] gives.
pub(super) struct PackedPage {
    text: String,
    entries: Vec<PackedEntry>,
}

struct PackedEntry {
    size: u64,
    modified_millis: i64,
    /// Where the key, the ETag and the storage class end in the page's text.
    ends: [u32; 3],
    /// One of [`STORAGE_CLASSES`], by its place, or none, or another kept in the text.
    class: u8,
    flags: u8,
}

const PREFIX: u8 = 1;
const HAS_ETAG: u8 = 2;
const HAS_MODIFIED: u8 = 4;
const NO_CLASS: u8 = u8::MAX;
const OTHER_CLASS: u8 = u8::MAX - 1;

/// The place of an S3 class name among [`STORAGE_CLASSES`], or the name.
fn known_class(class: &str) -> std::result::Result<u8, &str> {
    match STORAGE_CLASSES.iter().position(|known| *known == class) {
        // Fits: the table is far shorter than the markers above.
        Some(index) => Ok(index as u8),
        None => Err(class),
    }
}

impl HeldPage {
    /// `entries` packed, unless their text would not fit the offsets (never for a page of
    /// keys S3 allows, whose batches are a page at most).
    pub(super) fn packed(entries: Vec<Listed>) -> HeldPage {
        let text_len: usize = entries.iter().map(text_len).sum();
        if u32::try_from(text_len).is_err() {
            return HeldPage::Loose(entries);
        }
        let mut text = String::with_capacity(text_len);
        let mut end = |piece: &str| {
            text.push_str(piece);
            // Fits: the whole text was measured above.
            text.len() as u32
        };
        // Pushed into a new vector: collecting from `entries` would reuse its buffer, sized
        // for the loose entries, three times what the packed ones take.
        let mut packed = Vec::with_capacity(entries.len());
        for entry in entries {
            packed.push(match entry {
                Listed::Prefix(prefix) => {
                    let key_end = end(&prefix);
                    PackedEntry {
                        size: 0,
                        modified_millis: 0,
                        ends: [key_end; 3],
                        class: NO_CLASS,
                        flags: PREFIX,
                    }
                }
                Listed::Object(object) => {
                    let key_end = end(&object.key);
                    let etag_end = end(object.etag.as_deref().unwrap_or_default());
                    let class = object.storage_class.as_deref().map(known_class);
                    let class_text = match class {
                        Some(Err(text)) => text,
                        _ => "",
                    };
                    let class_end = end(class_text);
                    let flag = |present: bool, flag: u8| if present { flag } else { 0 };
                    PackedEntry {
                        size: object.size,
                        modified_millis: object.last_modified.map_or(0, Timestamp::unix_millis),
                        ends: [key_end, etag_end, class_end],
                        class: match class {
                            Some(Ok(index)) => index,
                            Some(Err(_)) => OTHER_CLASS,
                            None => NO_CLASS,
                        },
                        flags: flag(object.etag.is_some(), HAS_ETAG)
                            | flag(object.last_modified.is_some(), HAS_MODIFIED),
                    }
                }
            });
        }
        HeldPage::Packed(PackedPage {
            text,
            entries: packed,
        })
    }

    /// The entries, as they were handed in.
    pub(super) fn into_entries(self) -> Vec<Listed> {
        let page = match self {
            HeldPage::Loose(entries) => return entries,
            HeldPage::Packed(page) => page,
        };
        let mut start = 0;
        page.entries
            .iter()
            .map(|entry| {
                let [key, etag, class] = entry.ends.map(|end| {
                    let piece = &page.text[start..end as usize];
                    start = end as usize;
                    piece
                });
                let has = |flag: u8| entry.flags & flag != 0;
                if has(PREFIX) {
                    return Listed::Prefix(key.to_owned());
                }
                Listed::Object(ObjectEntry {
                    key: key.to_owned(),
                    size: entry.size,
                    etag: has(HAS_ETAG).then(|| etag.to_owned()),
                    last_modified: has(HAS_MODIFIED)
                        .then(|| Timestamp::from_unix_millis(entry.modified_millis)),
                    storage_class: match entry.class {
                        NO_CLASS => None,
                        OTHER_CLASS => Some(Cow::Owned(class.to_owned())),
                        index => STORAGE_CLASSES
                            .get(usize::from(index))
                            .map(|&known| Cow::Borrowed(known)),
                    },
                })
            })
            .collect()
    }
}

fn text_len(entry: &Listed) -> usize {
    match entry {
        Listed::Prefix(prefix) => prefix.len(),
        Listed::Object(object) => {
            object.key.len()
                + object.etag.as_ref().map_or(0, String::len)
                + object
                    .storage_class
                    .as_deref()
                    .and_then(|class| known_class(class).err())
                    .map_or(0, str::len)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn object(key: &str, etag: Option<&str>, class: Option<&str>, millis: Option<i64>) -> Listed {
        Listed::Object(ObjectEntry {
            key: key.to_owned(),
            size: key.len() as u64 * 7,
            etag: etag.map(str::to_owned),
            last_modified: millis.map(Timestamp::from_unix_millis),
            storage_class: class.map(|class| Cow::Owned(class.to_owned())),
        })
    }

    #[test]
    fn a_packed_page_gives_back_every_field_and_tells_empty_from_absent() {
        let entries = vec![
            Listed::Prefix("a/".to_owned()),
            object(
                "a/b",
                Some("\"9b2cf535f27731c974343645a3985328\""),
                Some("STANDARD"),
                Some(-1),
            ),
            object("a/c", Some(""), Some(""), Some(0)),
            object("a/d", None, None, None),
            object(
                "a/é\u{1F600}",
                Some("\"e-2\""),
                Some("NEW_TIER"),
                Some(i64::MAX),
            ),
            Listed::Prefix(String::new()),
        ];
        let back = HeldPage::packed(entries.clone()).into_entries();
        assert_eq!(back, entries);
        let Listed::Object(standard) = &back[1] else {
            panic!("{:?}", back[1]);
        };
        assert!(
            matches!(standard.storage_class, Some(Cow::Borrowed("STANDARD"))),
            "S3's own class names are borrowed again, not copied"
        );
    }

    fn listed() -> impl Strategy<Value = Listed> {
        let text = "\\PC{0,12}";
        prop_oneof![
            text.prop_map(Listed::Prefix),
            (
                text,
                any::<u64>(),
                proptest::option::of(text),
                proptest::option::of(any::<i64>()),
                proptest::option::of(text),
            )
                .prop_map(|(key, size, etag, millis, class)| {
                    Listed::Object(ObjectEntry {
                        key,
                        size,
                        etag,
                        last_modified: millis.map(Timestamp::from_unix_millis),
                        storage_class: class.map(Cow::Owned),
                    })
                }),
        ]
    }

    proptest! {
        #[test]
        fn any_page_packed_is_the_page_it_was(entries in proptest::collection::vec(listed(), 0..40)) {
            prop_assert_eq!(HeldPage::packed(entries.clone()).into_entries(), entries);
        }
    }
}
