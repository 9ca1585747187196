//! Cheap parsing of the two XML documents parabyte reads: ListObjectsV2 pages and S3 error
//! bodies. One streaming pass, keeping only the fields a download needs.

use percent_encoding::percent_decode_str;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::Event;
use quick_xml::Reader;

use crate::timestamp::Timestamp;

/// One object as a listing describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ObjectEntry {
    /// The full key.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// The ETag with its quotes, as S3 sends it (the MD5 for single-part uploads).
    pub etag: Option<String>,
    /// When the object was last written.
    pub last_modified: Option<Timestamp>,
    /// Storage class, when the store reports one.
    pub storage_class: Option<String>,
}

/// One ListObjectsV2 response.
#[derive(Debug, Default)]
pub(crate) struct ListPage {
    pub objects: Vec<ObjectEntry>,
    pub common_prefixes: Vec<String>,
    /// Present when more pages follow.
    pub next_token: Option<String>,
    /// The store's `IsTruncated`: more keys follow this page.
    pub is_truncated: bool,
}

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
}

/// Parse one ListObjectsV2 page, decoding keys when the server applied `encoding-type=url`.
pub(crate) fn parse_list_page(body: &[u8]) -> Result<ListPage, ListError> {
    if root_is_error(body) {
        let (code, message) = parse_error(body).unwrap_or_default();
        return Err(ListError::ErrorDocument { code, message });
    }
    parse_list_result(body).map_err(ListError::Malformed)
}

/// True when the document's root element is `<Error>` (looked up without parsing it all).
fn root_is_error(body: &[u8]) -> bool {
    let mut rest = body;
    // Skip the XML declaration, processing instructions and whitespace before the root.
    while let Some(start) = rest.iter().position(|&b| b == b'<') {
        rest = &rest[start..];
        if rest.starts_with(b"<?") || rest.starts_with(b"<!") {
            match rest.iter().position(|&b| b == b'>') {
                Some(end) => rest = &rest[end + 1..],
                None => return false,
            }
        } else {
            return rest.starts_with(b"<Error>") || rest.starts_with(b"<Error ");
        }
    }
    false
}

fn parse_list_result(body: &[u8]) -> Result<ListPage, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("listing is not UTF-8: {e}"))?;
    let mut reader = Reader::from_str(text);
    let mut page = ListPage::default();
    let mut url_encoded = false;
    let mut in_contents = false;
    let mut in_prefixes = false;
    let mut entry = blank_entry();
    let mut field = Field::Other;
    let mut value = String::new();
    loop {
        match reader
            .read_event()
            .map_err(|e| format!("malformed listing XML: {e}"))?
        {
            Event::Start(start) => {
                value.clear();
                field = match start.local_name().as_ref() {
                    "Contents" => {
                        in_contents = true;
                        entry = blank_entry();
                        Field::Other
                    }
                    "CommonPrefixes" => {
                        in_prefixes = true;
                        Field::Other
                    }
                    "Key" if in_contents => Field::Key,
                    "Size" if in_contents => Field::Size,
                    "ETag" if in_contents => Field::ETag,
                    "LastModified" if in_contents => Field::LastModified,
                    "StorageClass" if in_contents => Field::StorageClass,
                    "Prefix" if in_prefixes => Field::Prefix,
                    "NextContinuationToken" => Field::NextToken,
                    "IsTruncated" => Field::IsTruncated,
                    "EncodingType" => Field::EncodingType,
                    _ => Field::Other,
                };
            }
            Event::Text(chunk) if field != Field::Other => value.push_str(&chunk),
            Event::GeneralRef(reference) if field != Field::Other => {
                push_reference(&mut value, &reference)
                    .map_err(|e| format!("malformed listing XML: {e}"))?
            }
            Event::End(end) => {
                let taken = std::mem::take(&mut value);
                match field {
                    Field::Key => entry.key = taken,
                    Field::Size => {
                        entry.size = taken
                            .trim()
                            .parse()
                            .map_err(|_| format!("listing has a bad Size '{taken}'"))?
                    }
                    Field::ETag => entry.etag = Some(taken),
                    Field::LastModified => entry.last_modified = Timestamp::parse_iso8601(&taken),
                    Field::StorageClass => entry.storage_class = Some(taken),
                    Field::Prefix => page.common_prefixes.push(taken),
                    Field::NextToken if !taken.is_empty() => page.next_token = Some(taken),
                    Field::IsTruncated => page.is_truncated = taken.trim() == "true",
                    Field::EncodingType => url_encoded = taken.eq_ignore_ascii_case("url"),
                    _ => {}
                }
                field = Field::Other;
                match end.local_name().as_ref() {
                    "Contents" => {
                        in_contents = false;
                        page.objects
                            .push(std::mem::replace(&mut entry, blank_entry()));
                    }
                    "CommonPrefixes" => in_prefixes = false,
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if url_encoded {
        for object in &mut page.objects {
            object.key = url_decode(&object.key)?;
        }
        for prefix in &mut page.common_prefixes {
            *prefix = url_decode(prefix)?;
        }
    }
    Ok(page)
}

/// The `Code` and `Message` of an S3 error body, when there is one.
pub(crate) fn parse_error(body: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(body).ok()?;
    let mut reader = Reader::from_str(text);
    let (mut code, mut message) = (String::new(), String::new());
    let mut field = Field::Other;
    loop {
        match reader.read_event().ok()? {
            Event::Start(start) => {
                field = match start.local_name().as_ref() {
                    "Code" => Field::Code,
                    "Message" => Field::Message,
                    _ => Field::Other,
                }
            }
            Event::Text(chunk) => match field {
                Field::Code => code.push_str(&chunk),
                Field::Message => message.push_str(&chunk),
                _ => {}
            },
            Event::GeneralRef(reference) if field == Field::Message => {
                push_reference(&mut message, &reference).ok()?
            }
            Event::End(_) => field = Field::Other,
            Event::Eof => break,
            _ => {}
        }
    }
    (!code.is_empty()).then_some((code, message))
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
fn push_reference(
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

    #[test]
    fn error_bodies_give_code_and_message() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The key &amp; more</Message><Key>k</Key></Error>";
        assert_eq!(
            parse_error(body),
            Some(("NoSuchKey".into(), "The key & more".into()))
        );
        assert_eq!(parse_error(b"not xml at all"), None);
    }
}
