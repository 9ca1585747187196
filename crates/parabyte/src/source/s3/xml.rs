//! Cheap parsing of the two XML documents parabyte reads: ListObjectsV2 pages and S3 error
//! bodies. One streaming pass, keeping only the fields a download needs.

use percent_encoding::percent_decode_str;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::Event;
use quick_xml::Reader;

use crate::source::listing::{storage_class, ListPage, ObjectEntry};
use crate::timestamp::Timestamp;

/// Which element's text we are collecting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Key,
    Size,
    ETag,
    LastModified,
    StorageClass,
    Prefix,
    NextToken,
    IsTruncated,
    EncodingType,
    Code,
    Message,
    Region,
    Other,
}

/// Why a listing body could not be used.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ListError {
    Malformed(String),
    /// A 200 whose body is an S3 error document (S3 may throttle this way).
    ErrorDocument {
        code: String,
        message: String,
    },
    /// More than this many bytes of the page had to be held at once.
    TooLarge(usize),
}

/// Parse one whole ListObjectsV2 page, decoding keys when the server applied
/// `encoding-type=url`.
#[cfg(test)]
pub(crate) fn parse_list_page(body: &[u8]) -> Result<ListPage, ListError> {
    let mut parser = PageParser::new(false, usize::MAX);
    parser.feed(body)?;
    parser.finish()
}

/// Objects handed on together while a page streams in.
const BATCH: usize = 1000;
/// Error documents are small; never keep more than this of one.
const MAX_ERROR_DOCUMENT: usize = 64 * 1024;

/// Parses a ListObjectsV2 page as its body arrives, so a page of any size is never held:
/// objects go out in batches ([`PageParser::feed`]) and the rest, with the page's token,
/// at the end ([`PageParser::finish`]).
///
/// Whether keys are URL-encoded is only certain once `EncodingType` has gone by, and
/// stores put it anywhere: SeaweedFS after the last object, and versitygw (which ignores
/// the request) sends it empty there too. Until then a key without `%` or `+` reads the
/// same either way and goes on; one with them is held back, with everything after it,
/// until the page says. What is held may not pass `hold_limit` bytes of body.
pub(crate) struct PageParser {
    /// Bytes after the last complete tag, kept for the next chunk.
    unparsed: Vec<u8>,
    /// Whether objects may go out before the page ends (not when "folders" must be merged).
    stream_objects: bool,
    hold_limit: usize,
    /// Body bytes since objects last went out.
    held_bytes: usize,
    root_seen: bool,
    /// The body of an `<Error>` document, once the root says it is one.
    error_document: Option<Vec<u8>>,
    url_encoded: Option<bool>,
    in_contents: bool,
    in_prefixes: bool,
    entry: ObjectEntry,
    field: Field,
    value: String,
    /// Objects decided and ready to go.
    ready: Vec<ObjectEntry>,
    /// Objects waiting for the page to say how keys are encoded.
    undecided: Vec<ObjectEntry>,
    page: ListPage,
}

impl PageParser {
    pub(crate) fn new(stream_objects: bool, hold_limit: usize) -> PageParser {
        PageParser {
            unparsed: Vec::new(),
            stream_objects,
            hold_limit,
            held_bytes: 0,
            root_seen: false,
            error_document: None,
            url_encoded: None,
            in_contents: false,
            in_prefixes: false,
            entry: blank_entry(),
            field: Field::Other,
            value: String::new(),
            ready: Vec::new(),
            undecided: Vec::new(),
            page: ListPage::default(),
        }
    }

    /// The continuation token, as soon as it has gone by.
    pub(crate) fn next_token(&self) -> Option<&str> {
        self.page.next_token.as_deref()
    }

    /// Takes the next piece of the body; returns a batch of objects when one is ready.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Result<Option<Vec<ObjectEntry>>, ListError> {
        if let Some(document) = &mut self.error_document {
            let room = MAX_ERROR_DOCUMENT.saturating_sub(document.len());
            document.extend_from_slice(&chunk[..chunk.len().min(room)]);
            return Ok(None);
        }
        self.held_bytes += chunk.len();
        self.unparsed.extend_from_slice(chunk);
        // Parse up to the last '>': what follows may be half a tag. Text cut there is
        // continued by the next chunk, as text events append.
        let Some(cut) = self.unparsed.iter().rposition(|&b| b == b'>') else {
            return self.check_held().map(|()| None);
        };
        let complete: Vec<u8> = self.unparsed.drain(..=cut).collect();
        self.parse(&complete)?;
        if let Some(document) = &mut self.error_document {
            document.append(&mut self.unparsed);
            return Ok(None);
        }
        if self.stream_objects && self.ready.len() >= BATCH {
            self.held_bytes = self.unparsed.len();
            return Ok(Some(std::mem::take(&mut self.ready)));
        }
        self.check_held().map(|()| None)
    }

    /// The end of the body: the objects not yet handed on, the "folders", and the token.
    pub(crate) fn finish(mut self) -> Result<ListPage, ListError> {
        let rest = std::mem::take(&mut self.unparsed);
        if self.error_document.is_none() {
            self.parse(&rest)?;
        }
        if let Some(document) = &self.error_document {
            let ErrorDocument { code, message, .. } = parse_error(document).unwrap_or_default();
            return Err(ListError::ErrorDocument { code, message });
        }
        if !self.root_seen {
            return Err(ListError::Malformed("the listing body is empty".into()));
        }
        // A page that never says is not encoded: keys are taken as they are.
        let url_encoded = self.url_encoded.unwrap_or(false);
        self.decide(url_encoded)?;
        if url_encoded {
            for prefix in &mut self.page.common_prefixes {
                *prefix = url_decode(prefix).map_err(ListError::Malformed)?;
            }
        }
        self.page.objects = self.ready;
        Ok(self.page)
    }

    fn check_held(&self) -> Result<(), ListError> {
        if self.held_bytes > self.hold_limit {
            return Err(ListError::TooLarge(self.hold_limit));
        }
        Ok(())
    }

    /// The encoding is known: undecided objects become ready.
    fn decide(&mut self, url_encoded: bool) -> Result<(), ListError> {
        self.url_encoded = Some(url_encoded);
        for mut object in std::mem::take(&mut self.undecided) {
            if url_encoded {
                object.key = url_decode(&object.key).map_err(ListError::Malformed)?;
            }
            self.ready.push(object);
        }
        Ok(())
    }

    fn parse(&mut self, complete: &[u8]) -> Result<(), ListError> {
        let malformed =
            |e: &dyn std::fmt::Display| ListError::Malformed(format!("malformed listing XML: {e}"));
        let text = std::str::from_utf8(complete)
            .map_err(|e| ListError::Malformed(format!("listing is not UTF-8: {e}")))?;
        let mut reader = Reader::from_str(text);
        // Each call sees a slice of the document: its elements close in later slices.
        let config = reader.config_mut();
        config.check_end_names = false;
        config.allow_unmatched_ends = true;
        loop {
            match reader.read_event().map_err(|e| malformed(&e))? {
                Event::Start(start) => {
                    let name = start.local_name();
                    if !self.root_seen {
                        self.root_seen = true;
                        if name.as_ref() == "Error" {
                            let at = usize::try_from(reader.buffer_position()).unwrap_or(0);
                            let mut document = b"<Error>".to_vec();
                            document.extend_from_slice(complete.get(at..).unwrap_or_default());
                            self.error_document = Some(document);
                            return Ok(());
                        }
                        // Anything else (a proxy's HTML page, garbage) is no listing, and
                        // taken for an empty last page it would end the listing quietly.
                        if name.as_ref() != "ListBucketResult" {
                            return Err(ListError::Malformed(format!(
                                "the answer is not a listing: its root element is <{}>",
                                name.as_ref().escape_debug()
                            )));
                        }
                    }
                    self.start(name.as_ref());
                }
                Event::Text(chunk) if self.field != Field::Other => self.value.push_str(&chunk),
                Event::GeneralRef(reference) if self.field != Field::Other => {
                    push_reference(&mut self.value, &reference).map_err(|e| malformed(&e))?
                }
                Event::End(end) => self.end(end.local_name().as_ref())?,
                Event::Eof => return Ok(()),
                _ => {}
            }
        }
    }

    fn start(&mut self, name: &str) {
        self.value.clear();
        self.field = match name {
            "Contents" => {
                self.in_contents = true;
                self.entry = blank_entry();
                Field::Other
            }
            "CommonPrefixes" => {
                self.in_prefixes = true;
                Field::Other
            }
            "Key" if self.in_contents => Field::Key,
            "Size" if self.in_contents => Field::Size,
            "ETag" if self.in_contents => Field::ETag,
            "LastModified" if self.in_contents => Field::LastModified,
            "StorageClass" if self.in_contents => Field::StorageClass,
            "Prefix" if self.in_prefixes => Field::Prefix,
            "NextContinuationToken" => Field::NextToken,
            "IsTruncated" => Field::IsTruncated,
            "EncodingType" => Field::EncodingType,
            _ => Field::Other,
        };
    }

    fn end(&mut self, name: &str) -> Result<(), ListError> {
        // The text buffer stays for the next field, and a field keeps an exact copy: one
        // allocation. Taking the buffer itself cost an ETag three (it grows as `&quot;`
        // and the hex arrive) and left each key and ETag with slack (docs/PROFILE.md, stop 52).
        let text = self.value.as_str();
        match self.field {
            Field::Key => self.entry.key = text.to_owned(),
            Field::Size => {
                self.entry.size = text
                    .trim()
                    .parse()
                    .map_err(|_| ListError::Malformed(format!("listing has a bad Size '{text}'")))?
            }
            Field::ETag => self.entry.etag = Some(text.to_owned()),
            Field::LastModified => self.entry.last_modified = Timestamp::parse_iso8601(text),
            Field::StorageClass => self.entry.storage_class = Some(storage_class(text)),
            Field::Prefix => self.page.common_prefixes.push(text.to_owned()),
            Field::NextToken if !text.is_empty() => self.page.next_token = Some(text.to_owned()),
            Field::IsTruncated => self.page.is_truncated = text.trim() == "true",
            Field::EncodingType => {
                let url_encoded = text.eq_ignore_ascii_case("url");
                self.decide(url_encoded)?
            }
            _ => {}
        }
        self.field = Field::Other;
        match name {
            "Contents" => {
                self.in_contents = false;
                let object = std::mem::replace(&mut self.entry, blank_entry());
                let reads_the_same = !object.key.contains(['%', '+']);
                match self.url_encoded {
                    Some(true) => {
                        let key = url_decode(&object.key).map_err(ListError::Malformed)?;
                        self.ready.push(ObjectEntry { key, ..object });
                    }
                    Some(false) => self.ready.push(object),
                    None if reads_the_same && self.undecided.is_empty() => self.ready.push(object),
                    None => self.undecided.push(object),
                }
            }
            "CommonPrefixes" => self.in_prefixes = false,
            _ => {}
        }
        Ok(())
    }
}

/// What an S3 error body says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorDocument {
    pub code: String,
    pub message: String,
    /// The bucket's region, which S3, MinIO and versitygw name when a request was signed
    /// for another one.
    pub region: Option<String>,
}

/// The `Code`, `Message` and `Region` of an S3 error body, when there is one.
pub(crate) fn parse_error(body: &[u8]) -> Option<ErrorDocument> {
    let text = std::str::from_utf8(body).ok()?;
    let mut reader = Reader::from_str(text);
    let mut document = ErrorDocument::default();
    let mut region = String::new();
    let mut field = Field::Other;
    loop {
        let target = match field {
            Field::Code => Some(&mut document.code),
            Field::Message => Some(&mut document.message),
            Field::Region => Some(&mut region),
            _ => None,
        };
        match (reader.read_event().ok()?, target) {
            (Event::Start(start), _) => {
                field = match start.local_name().as_ref() {
                    "Code" => Field::Code,
                    "Message" => Field::Message,
                    "Region" => Field::Region,
                    _ => Field::Other,
                }
            }
            (Event::Text(chunk), Some(target)) => target.push_str(&chunk),
            (Event::GeneralRef(reference), Some(target)) => {
                push_reference(target, &reference).ok()?
            }
            (Event::End(_), _) => field = Field::Other,
            (Event::Eof, _) => break,
            _ => {}
        }
    }
    document.region = (!region.is_empty()).then_some(region);
    (!document.code.is_empty()).then_some(document)
}

/// One bucket as ListBuckets describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BucketEntry {
    /// The bucket's name.
    pub name: String,
    /// When the bucket was created, as the store reports it.
    pub creation_date: Option<Timestamp>,
}

/// One ListBuckets answer: its buckets, and the token for the next page if there is one.
pub(crate) fn parse_bucket_list(body: &[u8]) -> Result<(Vec<BucketEntry>, Option<String>), String> {
    let text =
        std::str::from_utf8(body).map_err(|e| format!("the bucket list is not UTF-8: {e}"))?;
    let mut reader = Reader::from_str(text);
    let (mut buckets, mut token) = (Vec::new(), None);
    let mut current: Option<BucketEntry> = None;
    let (mut field, mut value) = (Field::Other, String::new());
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("malformed bucket list XML: {e}"))?;
        match event {
            Event::Start(start) => {
                value.clear();
                field = match start.local_name().as_ref() {
                    "Bucket" => {
                        current = Some(BucketEntry {
                            name: String::new(),
                            creation_date: None,
                        });
                        Field::Other
                    }
                    "Name" if current.is_some() => Field::Key,
                    "CreationDate" if current.is_some() => Field::LastModified,
                    "ContinuationToken" => Field::NextToken,
                    _ => Field::Other,
                };
            }
            Event::Text(chunk) if field != Field::Other => value.push_str(&chunk),
            Event::GeneralRef(reference) if field != Field::Other => {
                push_reference(&mut value, &reference)?
            }
            Event::End(end) => {
                let taken = std::mem::take(&mut value);
                match (field, current.as_mut()) {
                    (Field::Key, Some(bucket)) => bucket.name = taken,
                    (Field::LastModified, Some(bucket)) => {
                        bucket.creation_date = Timestamp::parse_iso8601(&taken)
                    }
                    (Field::NextToken, _) if !taken.is_empty() => token = Some(taken),
                    _ => {}
                }
                field = Field::Other;
                if end.local_name().as_ref() == "Bucket" {
                    buckets.extend(current.take().filter(|bucket| !bucket.name.is_empty()));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok((buckets, token))
}

fn blank_entry() -> ObjectEntry {
    ObjectEntry {
        key: String::new(),
        size: 0,
        etag: None,
        last_modified: None,
        storage_class: None,
    }
}

/// Append the character an entity such as `&quot;` or `&#34;` stands for.
pub(super) fn push_reference(
    value: &mut String,
    reference: &quick_xml::events::BytesRef<'_>,
) -> Result<(), String> {
    if let Some(character) = reference.resolve_char_ref().map_err(|e| e.to_string())? {
        value.push(character);
    } else if let Some(text) = resolve_predefined_entity(reference) {
        value.push_str(text);
    } else {
        return Err(format!("unknown entity &{};", &**reference));
    }
    Ok(())
}

/// S3's `encoding-type=url` is form encoding: `+` is a space, a literal `+` comes as `%2B`.
fn url_decode(encoded: &str) -> Result<String, String> {
    let spaced = encoded.replace('+', " ");
    percent_decode_str(&spaced)
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| format!("listing returned key '{encoded}' that is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    const PAGE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>
  <EncodingType>url</EncodingType>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>tok/en+1==</NextContinuationToken>
  <Contents>
    <Key>p/a+b%2Bc%25%C3%BC.txt</Key>
    <LastModified>2024-02-29T23:59:58.123Z</LastModified>
    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>
    <Size>1024</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents><Key>p/empty</Key><Size>0</Size><ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag></Contents>
  <CommonPrefixes><Prefix>p/sub%2F/</Prefix></CommonPrefixes>
</ListBucketResult>"#;

    #[test]
    fn a_page_keeps_what_downloads_need() {
        let page = parse_list_page(PAGE.as_bytes()).unwrap();
        assert_eq!(page.next_token.as_deref(), Some("tok/en+1=="));
        assert!(page.is_truncated);
        assert_eq!(page.objects.len(), 2);
        let first = &page.objects[0];
        assert_eq!(first.key, "p/a b+c%ü.txt");
        assert_eq!(first.size, 1024);
        assert_eq!(
            first.etag.as_deref(),
            Some("\"9b2cf535f27731c974343645a3985328\"")
        );
        assert_eq!(
            first.last_modified.unwrap().to_string(),
            "2024-02-29T23:59:58.123Z"
        );
        assert_eq!(first.storage_class.as_deref(), Some("STANDARD"));
        assert_eq!(page.objects[1].key, "p/empty");
        assert_eq!(page.objects[1].size, 0);
        assert_eq!(page.common_prefixes, vec!["p/sub//".to_owned()]);
    }

    /// A million listed entries are held a page at a time: each key and ETag is one exact
    /// allocation, and S3's own class names are not copied into every entry (stop 52: rm -r
    /// of ten million keys peaked at 66 MiB with the text buffer taken, 55 MiB with this).
    #[test]
    fn an_entry_holds_exact_copies_and_borrows_known_storage_classes() {
        let body = PAGE.replace(
            "<Size>0</Size>",
            "<Size>0</Size><StorageClass>NEW_TIER</StorageClass>",
        );
        let page = parse_list_page(body.as_bytes()).unwrap();
        let first = &page.objects[0];
        let etag = first.etag.as_ref().unwrap();
        assert_eq!(etag.capacity(), etag.len(), "the ETag came in three pieces");
        let key = &page.objects[1].key;
        assert_eq!(key.capacity(), key.len());
        assert!(matches!(
            first.storage_class,
            Some(Cow::Borrowed("STANDARD"))
        ));
        let unknown = page.objects[1].storage_class.as_ref();
        assert!(matches!(unknown, Some(Cow::Owned(class)) if class == "NEW_TIER"));
    }

    /// Found by the fuzz property: any root element was taken for a listing, so a proxy's
    /// HTML page (or garbage) answered with a 200 read as an empty last page, and the
    /// listing ended quietly.
    #[test]
    fn an_answer_that_is_not_a_listing_is_an_error_not_an_empty_page() {
        for body in [
            &b"<html><body>Sign in to the network</body></html>"[..],
            b"<?xml version=\"1.0\"?><ListAllMyBucketsResult></ListAllMyBucketsResult>",
        ] {
            let page = parse_list_page(body);
            assert!(matches!(page, Err(ListError::Malformed(_))), "{page:?}");
        }
    }

    #[test]
    fn the_last_page_has_no_token() {
        let page = parse_list_page(
            b"<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>",
        )
        .unwrap();
        assert!(page.next_token.is_none());
        assert!(!page.is_truncated);
        assert!(page.objects.is_empty());
    }

    #[test]
    fn keys_are_verbatim_without_url_encoding() {
        let page = parse_list_page(b"<ListBucketResult><Contents><Key>a+b%41</Key><Size>1</Size></Contents></ListBucketResult>").unwrap();
        assert_eq!(page.objects[0].key, "a+b%41");
    }

    #[test]
    fn garbage_is_an_error_not_an_empty_listing() {
        assert!(parse_list_page(b"<ListBucketResult><Contents><Size>x</Size></Contents>").is_err());
        assert!(parse_list_page(&[0xff, 0xfe]).is_err());
        let throttled =
            parse_list_page(b"<Error><Code>SlowDown</Code><Message>m</Message></Error>");
        assert_eq!(
            throttled.unwrap_err(),
            ListError::ErrorDocument {
                code: "SlowDown".into(),
                message: "m".into()
            }
        );
    }

    /// Feeds `body` in pieces of `piece` bytes; returns the batches handed on and the rest.
    fn stream(
        body: &[u8],
        piece: usize,
        hold_limit: usize,
    ) -> Result<(Vec<Vec<ObjectEntry>>, ListPage), ListError> {
        let mut parser = PageParser::new(true, hold_limit);
        let mut batches = Vec::new();
        for chunk in body.chunks(piece) {
            batches.extend(parser.feed(chunk)?);
        }
        Ok((batches, parser.finish()?))
    }

    #[test]
    fn a_page_in_pieces_parses_as_a_whole_page() {
        let whole = parse_list_page(PAGE.as_bytes()).unwrap();
        for piece in [1, 2, 3, 7, 64] {
            let (batches, page) = stream(PAGE.as_bytes(), piece, usize::MAX).unwrap();
            assert!(batches.is_empty());
            assert_eq!(page.objects, whole.objects, "pieces of {piece}");
            assert_eq!(page.common_prefixes, whole.common_prefixes);
            assert_eq!(page.next_token, whole.next_token);
            assert!(page.is_truncated);
        }
        let throttled = stream(
            b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>m</Message></Error>",
            5,
            1024,
        );
        assert_eq!(
            throttled.unwrap_err(),
            ListError::ErrorDocument {
                code: "SlowDown".into(),
                message: "m".into()
            }
        );
    }

    /// A page of `count` objects, with `EncodingType` after them as SeaweedFS sends it.
    fn long_page(count: usize, key: impl Fn(usize) -> String, encoding: &str) -> String {
        let mut body = String::from("<ListBucketResult><IsTruncated>false</IsTruncated>");
        for i in 0..count {
            body.push_str(&format!(
                "<Contents><Key>{}</Key><Size>{i}</Size></Contents>",
                key(i)
            ));
        }
        body.push_str(&format!(
            "<EncodingType>{encoding}</EncodingType></ListBucketResult>"
        ));
        body
    }

    #[test]
    fn objects_go_out_in_batches_while_the_page_streams() {
        let body = long_page(2500, |i| format!("k{i:05}"), "url");
        let (batches, rest) = stream(body.as_bytes(), 4096, 64 * 1024).unwrap();
        assert!(batches.len() >= 2, "{} batches", batches.len());
        let keys: Vec<String> = batches
            .iter()
            .flatten()
            .chain(&rest.objects)
            .map(|o| o.key.clone())
            .collect();
        assert_eq!(
            keys,
            (0..2500).map(|i| format!("k{i:05}")).collect::<Vec<_>>()
        );
    }

    #[test]
    fn keys_that_read_differently_encoded_wait_for_the_encoding() {
        // Encoded by the store, said at the end: decoded, in order.
        let body = long_page(3, |i| format!("a%2B{i}+b"), "url");
        let (batches, rest) = stream(body.as_bytes(), 16, usize::MAX).unwrap();
        assert!(batches.is_empty());
        assert_eq!(rest.objects[2].key, "a+2 b");
        // Not encoded (versitygw: an empty EncodingType): taken as they are.
        let body = long_page(3, |i| format!("a%2B{i}+b"), "");
        let (_, rest) = stream(body.as_bytes(), 16, usize::MAX).unwrap();
        assert_eq!(rest.objects[2].key, "a%2B2+b");
        // Held keys may not grow past the limit.
        let body = long_page(2000, |i| format!("a%2B{i}"), "url");
        assert_eq!(
            stream(body.as_bytes(), 4096, 64 * 1024).unwrap_err(),
            ListError::TooLarge(64 * 1024)
        );
    }

    #[test]
    fn error_bodies_give_code_and_message() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &amp; more</Message><Key>k</Key></Error>";
        let document = parse_error(body).unwrap();
        assert_eq!(
            (document.code.as_str(), document.message.as_str()),
            ("NoSuchKey", "The key & more")
        );
        assert_eq!(document.region, None);
        assert_eq!(parse_error(b"not xml at all"), None);
    }

    #[test]
    fn a_wrong_region_error_names_the_right_one() {
        // MinIO's answer to a request signed for us-east-1.
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region is wrong; expecting &#39;eu-central-1&#39;.</Message><BucketName>bkt</BucketName><Region>eu-central-1</Region></Error>"#;
        let document = parse_error(body).unwrap();
        assert_eq!(document.code, "AuthorizationHeaderMalformed");
        assert!(document.message.ends_with("expecting 'eu-central-1'."));
        assert_eq!(document.region.as_deref(), Some("eu-central-1"));
    }

    #[test]
    fn bucket_lists_give_names_dates_and_the_next_token() {
        let body = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Owner><ID>o</ID><DisplayName>minio</DisplayName></Owner><Buckets><Bucket><Name>a&amp;b</Name><CreationDate>2026-11-22T18:34:44.522Z</CreationDate></Bucket><Bucket><Name>second</Name><CreationDate>not a date</CreationDate><BucketRegion>eu-west-1</BucketRegion></Bucket></Buckets><ContinuationToken>next</ContinuationToken></ListAllMyBucketsResult>"#;
        let (buckets, token) = parse_bucket_list(body).unwrap();
        assert_eq!(buckets.len(), 2);
        assert_eq!(buckets[0].name, "a&b");
        assert_eq!(
            buckets[0].creation_date.unwrap().to_string(),
            "2026-11-22T18:34:44.522Z"
        );
        assert_eq!(
            (buckets[1].name.as_str(), buckets[1].creation_date),
            ("second", None)
        );
        assert_eq!(token.as_deref(), Some("next"));
        assert!(parse_bucket_list(b"<a><b></a>").is_err());
    }
}
