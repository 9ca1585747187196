//! The XML of multipart uploads: the upload ID a create answers, the part list a complete
//! sends, and what a complete answers, which may be an error inside a 200.

use quick_xml::escape::escape;
use quick_xml::events::Event;
use quick_xml::Reader;

use super::put_object::{parse_crc64nvme, render_crc64nvme};
use super::xml::{push_reference, ErrorDocument};
use crate::source::{ListedPart, UploadedPart};

/// What a CompleteMultipartUpload answered with a 200.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Completed {
    /// The object is stored: its ETag and the CRC64NVME the store computed, when named.
    Done {
        etag: Option<String>,
        crc64nvme: Option<String>,
    },
    /// S3 answers 200 as soon as it starts joining the parts and may still fail: then
    /// the body is an error document.
    Failed(ErrorDocument),
}

/// The body of a CompleteMultipartUpload: every part in order, with its ETag and CRC.
pub(super) fn complete_body(parts: &[UploadedPart], with_checksums: bool) -> String {
    let mut body = String::with_capacity(64 + parts.len() * 128);
    body.push_str("<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for part in parts {
        body.push_str("<Part><ETag>");
        body.push_str(&escape(part.etag.as_str()));
        body.push_str("</ETag><PartNumber>");
        body.push_str(&part.number.to_string());
        body.push_str("</PartNumber>");
        if with_checksums {
            body.push_str("<ChecksumCRC64NVME>");
            body.push_str(&render_crc64nvme(part.crc64nvme));
            body.push_str("</ChecksumCRC64NVME>");
        }
        body.push_str("</Part>");
    }
    body.push_str("</CompleteMultipartUpload>");
    body
}

/// A CopyObject's or UploadPartCopy's 200: the copy's ETag and CRC64NVME, or the error it
/// carries (S3 answers 200 as soon as it starts copying).
pub(super) fn copied(body: &[u8], operation: &str) -> Result<Completed, String> {
    let document = Document::read(body, &["ETag", "ChecksumCRC64NVME", "Code", "Message"])?;
    let [etag, crc64nvme, code, message] = <[Option<String>; 4]>::try_from(document.texts)
        .map_err(|_| "unreachable: four names asked".to_owned())?;
    match document.root.as_str() {
        "CopyObjectResult" | "CopyPartResult" => Ok(Completed::Done { etag, crc64nvme }),
        "Error" => Ok(Completed::Failed(ErrorDocument {
            code: code.unwrap_or_default(),
            message: message.unwrap_or_default(),
            region: None,
        })),
        "" => Err(format!("the answer to {operation} is empty")),
        other => Err(format!(
            "the answer to {operation} is a <{other}>, not its result"
        )),
    }
}

/// The `UploadId` of a CreateMultipartUpload answer.
pub(super) fn upload_id(body: &[u8]) -> Result<String, String> {
    let document = Document::read(body, &["UploadId"])?;
    match document.texts.into_iter().next().flatten() {
        Some(id) if !id.is_empty() => Ok(id),
        _ => Err(format!(
            "the answer to CreateMultipartUpload ({}) has no UploadId",
            document.root
        )),
    }
}

/// A CompleteMultipartUpload's 200: its result, or the error it carries.
pub(super) fn completed(body: &[u8]) -> Result<Completed, String> {
    let document = Document::read(body, &["ETag", "ChecksumCRC64NVME", "Code", "Message"])?;
    let [etag, crc64nvme, code, message] = <[Option<String>; 4]>::try_from(document.texts)
        .map_err(|_| "unreachable: four names asked".to_owned())?;
    match document.root.as_str() {
        "CompleteMultipartUploadResult" => Ok(Completed::Done { etag, crc64nvme }),
        "Error" => Ok(Completed::Failed(ErrorDocument {
            code: code.unwrap_or_default(),
            message: message.unwrap_or_default(),
            region: None,
        })),
        "" => Err("the answer to CompleteMultipartUpload is empty".into()),
        other => Err(format!(
            "the answer to CompleteMultipartUpload is a <{other}>, not its result"
        )),
    }
}

/// One page of a ListParts answer: its parts, and where the next page starts.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct PartsPage {
    pub parts: Vec<ListedPart>,
    /// `NextPartNumberMarker` when `IsTruncated`.
    pub next: Option<u32>,
}

/// Parse a ListParts page. A part whose number, size or ETag cannot be read fails the
/// page: a resume must not trust a part it cannot name.
pub(super) fn parts_page(body: &[u8]) -> Result<PartsPage, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the answer is not UTF-8".to_owned())?;
    let mut reader = Reader::from_str(text);
    let mut page = PartsPage::default();
    let mut truncated = false;
    let mut marker = None;
    let mut value = String::new();
    let mut part: Option<[Option<String>; 4]> = None;
    loop {
        match reader
            .read_event()
            .map_err(|e| format!("the answer is not XML: {e}"))?
        {
            Event::Start(start) => {
                value.clear();
                if start.local_name().as_ref() == "Part" {
                    part = Some(Default::default());
                }
            }
            Event::Text(chunk) => value.push_str(&chunk),
            Event::GeneralRef(reference) => push_reference(&mut value, &reference)?,
            Event::End(end) => {
                let name = end.local_name().as_ref().to_owned();
                let slot = ["PartNumber", "ETag", "Size", "ChecksumCRC64NVME"]
                    .iter()
                    .position(|wanted| *wanted == name);
                match (&mut part, slot, name.as_str()) {
                    (Some(fields), Some(index), _) => fields[index] = Some(value.clone()),
                    (Some(_), None, "Part") => page.parts.push(listed(part.take())?),
                    (None, _, "IsTruncated") => truncated = value.trim() == "true",
                    (None, _, "NextPartNumberMarker") => marker = value.trim().parse().ok(),
                    _ => {}
                }
                value.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if truncated {
        page.next = Some(marker.ok_or("a truncated page names no NextPartNumberMarker")?);
    }
    Ok(page)
}

/// The keys a DeleteObjects answer says it could not delete: key, code, message. An answer
/// that is not a DeleteResult (an error document inside a 200) fails whole.
pub(super) fn delete_errors(body: &[u8]) -> Result<Vec<(String, String, String)>, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the answer is not UTF-8".to_owned())?;
    let mut reader = Reader::from_str(text);
    let mut root = String::new();
    let mut refused = Vec::new();
    let mut value = String::new();
    let mut error: Option<[String; 3]> = None;
    // Quiet mode names only the keys not deleted: an answer cut off before its end would
    // pass its missing keys off as deleted.
    let mut open = 0usize;
    loop {
        match reader
            .read_event()
            .map_err(|e| format!("the answer is not XML: {e}"))?
        {
            Event::Start(start) => {
                open += 1;
                let name = start.local_name().as_ref().to_owned();
                if root.is_empty() {
                    root = name.clone();
                }
                if name == "Error" && root == "DeleteResult" {
                    error = Some(Default::default());
                }
                value.clear();
            }
            Event::Empty(empty) if root.is_empty() => {
                root = empty.local_name().as_ref().to_owned();
            }
            Event::Text(chunk) => value.push_str(&chunk),
            Event::GeneralRef(reference) => push_reference(&mut value, &reference)?,
            Event::End(end) => {
                open = open.saturating_sub(1);
                let name = end.local_name().as_ref().to_owned();
                if let Some(fields) = &mut error {
                    match name.as_str() {
                        "Key" => fields[0] = value.clone(),
                        "Code" => fields[1] = value.clone(),
                        "Message" => fields[2] = value.clone(),
                        "Error" => refused.extend(error.take().map(|[k, c, m]| (k, c, m))),
                        _ => {}
                    }
                }
                value.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    match root.as_str() {
        _ if open > 0 => Err("the answer to DeleteObjects is cut off before its end".into()),
        "DeleteResult" => Ok(refused),
        "" => Err("the answer to DeleteObjects is empty".into()),
        other => Err(format!(
            "the answer to DeleteObjects is a <{other}>, not its result"
        )),
    }
}

/// One `<Part>`'s fields as a part.
fn listed(fields: Option<[Option<String>; 4]>) -> Result<ListedPart, String> {
    let [number, etag, size, crc] = fields.unwrap_or_default();
    let number = number.and_then(|n| n.trim().parse().ok());
    let size = size.and_then(|n| n.trim().parse().ok());
    match (number, etag, size) {
        (Some(number), Some(etag), Some(size)) if !etag.is_empty() => Ok(ListedPart {
            number,
            etag,
            size,
            crc64nvme: crc.as_deref().and_then(parse_crc64nvme),
        }),
        _ => Err("a listed part lacks its number, ETag or size".into()),
    }
}

/// The root element's name and the text of the first element of each name asked for.
struct Document {
    root: String,
    texts: Vec<Option<String>>,
}

impl Document {
    fn read(body: &[u8], names: &[&str]) -> Result<Document, String> {
        let text = std::str::from_utf8(body).map_err(|_| "the answer is not UTF-8".to_owned())?;
        let mut reader = Reader::from_str(text);
        let mut document = Document {
            root: String::new(),
            texts: vec![None; names.len()],
        };
        let mut collecting: Option<usize> = None;
        loop {
            let event = reader
                .read_event()
                .map_err(|e| format!("the answer is not XML: {e}"))?;
            match event {
                Event::Start(start) => {
                    let name = start.local_name().as_ref().to_owned();
                    if document.root.is_empty() {
                        document.root = name.clone();
                    }
                    collecting = names
                        .iter()
                        .position(|wanted| *wanted == name)
                        .filter(|&index| document.texts[index].is_none());
                    if let Some(index) = collecting {
                        document.texts[index] = Some(String::new());
                    }
                }
                Event::Empty(empty) if document.root.is_empty() => {
                    document.root = empty.local_name().as_ref().to_owned();
                }
                Event::Text(chunk) => {
                    if let Some(target) = collecting.and_then(|i| document.texts[i].as_mut()) {
                        target.push_str(&chunk);
                    }
                }
                Event::GeneralRef(reference) => {
                    if let Some(target) = collecting.and_then(|i| document.texts[i].as_mut()) {
                        push_reference(target, &reference)?;
                    }
                }
                Event::End(_) => collecting = None,
                Event::Eof => break,
                _ => {}
            }
        }
        Ok(document)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_lists_each_part_with_its_etag_escaped_and_its_crc() {
        let parts = [
            UploadedPart {
                number: 1,
                etag: "\"a&b\"".into(),
                crc64nvme: 0,
            },
            UploadedPart {
                number: 2,
                etag: "\"c\"".into(),
                crc64nvme: u64::MAX,
            },
        ];
        let body = complete_body(&parts, true);
        assert!(body.contains("<Part><ETag>&quot;a&amp;b&quot;</ETag><PartNumber>1</PartNumber><ChecksumCRC64NVME>AAAAAAAAAAA=</ChecksumCRC64NVME></Part>"), "{body}");
        assert!(
            body.contains(
                "<PartNumber>2</PartNumber><ChecksumCRC64NVME>//////////8=</ChecksumCRC64NVME>"
            ),
            "{body}"
        );
    }

    #[test]
    fn an_upload_id_is_read_and_its_absence_is_an_error() {
        let body = b"<?xml version=\"1.0\"?><InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>id&amp;1</UploadId></InitiateMultipartUploadResult>";
        assert_eq!(upload_id(body).unwrap(), "id&1");
        let error = upload_id(b"<InitiateMultipartUploadResult/>").unwrap_err();
        assert!(error.contains("no UploadId"), "{error}");
    }

    #[test]
    fn listed_parts_are_read_with_their_crcs_and_pages() {
        let body = b"<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>2</NextPartNumberMarker>\
            <Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag><Size>5</Size><ChecksumCRC64NVME>AAAAAAAAAAE=</ChecksumCRC64NVME></Part>\
            <Part><PartNumber>2</PartNumber><ETag>\"b\"</ETag><Size>6</Size></Part></ListPartsResult>";
        let page = parts_page(body).unwrap();
        assert_eq!(page.next, Some(2));
        assert_eq!(
            page.parts[0],
            ListedPart {
                number: 1,
                etag: "\"a\"".into(),
                size: 5,
                crc64nvme: Some(1)
            }
        );
        assert_eq!(page.parts[1].crc64nvme, None);
        let nameless = b"<ListPartsResult><Part><PartNumber>1</PartNumber><Size>5</Size></Part></ListPartsResult>";
        assert!(parts_page(nameless).is_err());
    }

    #[test]
    fn a_delete_answer_lists_only_the_keys_it_could_not_delete() {
        let body = b"<DeleteResult><Deleted><Key>a</Key></Deleted><Error><Key>b&amp;c</Key><Code>AccessDenied</Code><Message>no</Message></Error></DeleteResult>";
        let refused = delete_errors(body).unwrap();
        assert_eq!(
            refused,
            [("b&c".to_owned(), "AccessDenied".to_owned(), "no".to_owned())]
        );
        assert!(delete_errors(b"<DeleteResult/>").unwrap().is_empty());
        assert!(delete_errors(b"<Error><Code>InternalError</Code></Error>").is_err());
        // Cut off: the keys it did not get to would pass for deleted.
        assert!(delete_errors(b"<DeleteResult><Error><Key>b").is_err());
        assert!(delete_errors(b"<DeleteResult>").is_err());
    }

    #[test]
    fn a_200_carrying_an_error_is_a_failure() {
        let body = b"<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>";
        let Completed::Failed(error) = completed(body).unwrap() else {
            panic!("an error document read as success");
        };
        assert_eq!(error.code, "InternalError");
        let done = b"<CompleteMultipartUploadResult><ETag>&quot;e-2&quot;</ETag><ChecksumCRC64NVME>AAAAAAAAAAA=</ChecksumCRC64NVME></CompleteMultipartUploadResult>";
        assert_eq!(
            completed(done).unwrap(),
            Completed::Done {
                etag: Some("\"e-2\"".into()),
                crc64nvme: Some("AAAAAAAAAAA=".into()),
            }
        );
        assert!(completed(b"").is_err());
        assert!(completed(b"<Unexpected/>").is_err());
    }
}
