//! Parts of an object that are not a whole download: the piece of one object a Dask task
//! fetches into its piece file, and byte ranges into memory (`get_bytes`).

use super::*;

/// What the first ranged GET of `fetch_slices` brought.
enum Slices {
    /// Its range.
    Parts(Vec<u8>),
    /// The whole object: the server ignored Range.
    Whole(Vec<u8>),
}

/// A response's whole body.
async fn collect(response: InFlight) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut chunks = response.fetched.body;
    while let Some(chunk) = chunks.next().await {
        body.extend_from_slice(&chunk?);
    }
    Ok(body)
}

/// `range` cut at the end of an object of `total` bytes.
fn cut(range: ByteRange, total: u64) -> ByteRange {
    ByteRange {
        start: range.start,
        end: range.end.min(total.saturating_sub(1)),
    }
}

impl<S: Store<Object = ObjectUrl>> Engine<S> {
    /// Fetch the bytes `span` of an object of `size` bytes and ETag `etag` into the piece
    /// file that holds them beside `path` (see `Sink::open_piece`), pinned to that version,
    /// resuming what an earlier attempt left. The piece stays there, with its journal, for
    /// `sink::adopt_pieces`; the content is checked once the object is whole. Returns the
    /// bytes fetched now.
    pub(crate) async fn fetch_piece(
        &self,
        source: &ObjectUrl,
        path: &FilePath,
        size: u64,
        etag: &str,
        span: ByteRange,
    ) -> Result<u64> {
        let known = Known {
            size,
            validator: Some(Validator::ETag(etag.to_owned())),
            modified: None,
        };
        usable(source, &known)?;
        let mut sink = Sink::open_piece(path, span.start, size, etag).await?;
        let restored = sink.restored();
        let parts = if restored.bytes() > 0 {
            let sizes = self.part_sizes();
            restored
                .gaps(span)
                .into_iter()
                .flat_map(|gap| sizes.fixed(gap))
                .collect()
        } else {
            self.part_sizes().grown(span)
        };
        let wanted = parts.iter().map(|part| part.end + 1 - part.start).sum();
        let check = ContentCheck::new(false, false, self.part_grid);
        let object = Object {
            source,
            sink: &sink,
            check: &check,
            pinned: Pinned::new(Some(Validator::ETag(etag.to_owned()))),
            total: size,
            modified: OnceLock::new(),
            file_time: OnceLock::new(),
        };
        let fetched = self.fetch_ranges(&object, parts).await;
        drop(object);
        keep_if_resumable(&mut sink, fetched)?;
        Ok(wanted)
    }

    /// Byte ranges of one object into memory (`get_bytes` with ranges in Python): one
    /// ranged GET each, retried, the first answer pinning the version every other must be.
    /// A range may end past the object (it is cut at the end) but must start inside it.
    pub(crate) async fn fetch_slices(
        &self,
        source: &ObjectUrl,
        ranges: &[ByteRange],
    ) -> Result<Vec<Vec<u8>>> {
        self.fetch_slices_pinned(source, ranges, None).await
    }

    /// [`Engine::fetch_slices`], every GET pinned (`If-Match`) to the version `known`
    /// names when given: another version there fails with [`Error::Changed`] (a reader
    /// that holds an object open across calls, as fsspec's files do).
    pub(crate) async fn fetch_slices_pinned(
        &self,
        source: &ObjectUrl,
        ranges: &[ByteRange],
        known: Option<Validator>,
    ) -> Result<Vec<Vec<u8>>> {
        let Some((&first, rest)) = ranges.split_first() else {
            return Ok(Vec::new());
        };
        let pinned_from_start = known.is_some();
        let pinned = &Pinned::new(known);
        let (head, total) = with_retries(&self.config.retry, &self.counters, || async move {
            let response = self
                .send(source, Some(first), pinned.validator())
                .await
                .map_err(|error| match error {
                    // Unpinned, so not another version: a 416, the start is past the end.
                    Error::Changed { .. } if !pinned_from_start => Error::InvalidInput(format!(
                        "{source}: the range from byte {} starts past its end",
                        first.start
                    )),
                    other => other,
                })?;
            let (got, total) = match response.fetched.shape {
                Shape::Partial { range, total } => (Some(range), total),
                Shape::Empty => (None, 0),
                // The server ignored Range: the body is the whole object.
                Shape::Whole { .. } => (None, u64::MAX),
            };
            pinned
                .check(response.fetched.validator.as_ref())
                .map_err(|detail| Error::Changed {
                    what: format!("GET {source} {first}"),
                    detail,
                })?;
            let body = collect(response).await?;
            Ok(match got {
                Some(got) if got != cut(first, total) => {
                    return Err(Error::Protocol {
                        what: format!("GET {source} {first}"),
                        detail: format!("asked for {first}, got {got} of {total}"),
                    })
                }
                Some(_) => (Slices::Parts(body), total),
                None if total == 0 => (Slices::Parts(body), 0),
                None => {
                    let length = body.len() as u64;
                    (Slices::Whole(body), length)
                }
            })
        })
        .await?;
        let part = |range: ByteRange| async move {
            {
                if total == 0 && range.start == 0 {
                    return Ok(Vec::new());
                }
                if range.start >= total {
                    return Err(Error::InvalidInput(format!(
                        "{source}: the range from byte {} starts past its end ({total} bytes)",
                        range.start
                    )));
                }
                let asked = cut(range, total);
                with_retries(&self.config.retry, &self.counters, || async move {
                    let response = self.send(source, Some(asked), pinned.validator()).await?;
                    check_part(source, &response.fetched, asked, pinned, total)?;
                    let body = collect(response).await?;
                    if body.len() as u64 != asked.end - asked.start + 1 {
                        return Err(Error::Protocol {
                            what: format!("GET {source} {asked}"),
                            detail: format!("the body had {} bytes", body.len()),
                        });
                    }
                    Ok(body)
                })
                .await
            }
        };
        match head {
            Slices::Whole(whole) => ranges
                .iter()
                .map(|&range| {
                    let range = cut(range, total);
                    let start = usize::try_from(range.start).unwrap_or(usize::MAX);
                    let end = usize::try_from(range.end).map_or(usize::MAX, |end| end + 1);
                    whole.get(start..end).map(<[u8]>::to_vec).ok_or_else(|| {
                        Error::InvalidInput(format!(
                            "{source}: the range {range} is past its end ({total} bytes)"
                        ))
                    })
                })
                .collect(),
            Slices::Parts(first) => {
                // Made before streaming: a closure in the stream would keep the future
                // from being `Send` for every lifetime.
                let parts: Vec<_> = rest.iter().map(|&range| part(range)).collect();
                let later = futures::stream::iter(parts)
                    .buffered(self.config.ranges_per_object.max(1))
                    .collect::<Vec<_>>()
                    .await;
                std::iter::once(Ok(first)).chain(later).collect()
            }
        }
    }
}
