//! The ranges of one object into its sink: up to `ranges_per_object` at a time, each a
//! GET holding a request slot while its body streams, gathered into buffers written at
//! their offsets, resumed from the first missing byte when the body breaks.

use super::*;

/// Small body chunks (a slow connection's) are gathered to this much before one positioned
/// write; chunks of half of it or more go to the file as they arrived, uncopied. Gathering
/// more saves few system calls and holds more memory for every slow stream: gathering to
/// 128 KiB cost 3 MiB of peak memory at 17 connections (docs/PROFILE.md, stop 37).
const GATHER: usize = 32 << 10;

/// Write what `buffer` holds at `next` and move `next` past it; the buffer is left empty,
/// with no capacity.
async fn write_out(object: &Object<'_>, buffer: &mut BytesMut, next: &mut u64) -> Result<()> {
    if buffer.is_empty() {
        return Ok(());
    }
    write(object, std::mem::take(buffer).freeze(), next).await
}

/// Write `data` at `next`, let the content check see it, and move `next` past it.
async fn write(object: &Object<'_>, data: Bytes, next: &mut u64) -> Result<()> {
    let length = data.len() as u64;
    object.sink.write_at(data.clone(), *next).await?;
    object.check.written(object.sink, *next, &data).await?;
    *next += length;
    Ok(())
}

impl<S: Store<Object = ObjectUrl>> Engine<S> {
    /// Fetch `parts`, up to `ranges_per_object` at a time. Bytes an earlier run wrote for
    /// this version are not fetched again; returns how many those were.
    pub(super) async fn fetch_ranges(
        &self,
        object: &Object<'_>,
        parts: Vec<ByteRange>,
    ) -> Result<u64> {
        let restored = object.sink.restored().bytes();
        if restored > 0 {
            self.reporter.bytes_resumed(restored);
        }
        // After a failure no new part starts, but those in flight finish: their bytes are
        // paid for, and a later run resumes from them.
        let failure = Mutex::new(None);
        futures::stream::iter(parts)
            .filter(|_| std::future::ready(failure.lock().expect("failure poisoned").is_none()))
            .for_each_concurrent(self.config.ranges_per_object, |part| {
                let failure = &failure;
                async move {
                    if let Err(error) = self.fetch_range(object, part, None).await {
                        object.sink.part_failed();
                        failure
                            .lock()
                            .expect("failure poisoned")
                            .get_or_insert(error);
                    }
                }
            })
            .await;
        failure
            .into_inner()
            .expect("failure poisoned")
            .map_or(Ok(restored), Err)
    }

    /// Fetch one range into the sink, resuming from the first missing byte after a failure,
    /// pinned to the object's version.
    pub(super) async fn fetch_range(
        &self,
        object: &Object<'_>,
        range: ByteRange,
        mut already_sent: Option<InFlight>,
    ) -> Result<()> {
        let mut next = range.start;
        let mut retries = Retries::new(&self.config.retry, &self.counters);
        loop {
            let attempt = async {
                let response = match already_sent.take() {
                    Some(response) => {
                        object.learn_times(&response.fetched);
                        response
                    }
                    None => {
                        let rest = ByteRange {
                            start: next,
                            end: range.end,
                        };
                        let pinned = object.pinned.validator();
                        let slot = if object.sink.is_next_in_line(next) {
                            self.request_limit.first_in_line()
                        } else {
                            self.request_limit.acquire().await
                        };
                        // The whole object is asked for without a Range: S3 sends its checksum
                        // only then.
                        let whole = rest.start == 0 && rest.end + 1 == object.total;
                        let asked = (!whole).then_some(rest);
                        let mut response = self.send_in(slot, object.source, asked, pinned).await?;
                        object.learn_times(&response.fetched);
                        if ignores_range(&response, rest, object.total) {
                            // A server without Range support sends the whole object again:
                            // the same version, its bytes before `next` already written.
                            object
                                .pinned
                                .check(response.fetched.validator.as_ref())
                                .map_err(|detail| Error::Changed {
                                    what: format!("GET {}", object.source),
                                    detail,
                                })?;
                            skip(&mut response, rest.start, object.source).await?;
                            return self.stream_rest(object, response, &mut next, range).await;
                        }
                        check_part(
                            object.source,
                            &response.fetched,
                            rest,
                            &object.pinned,
                            object.total,
                        )?;
                        response
                    }
                };
                self.stream_rest(object, response, &mut next, range).await
            };
            match attempt.await {
                Ok(()) => return object.sink.part_done(range),
                Err(error) => retries.after(error).await?,
            }
        }
    }

    /// Stream a response into the sink up to the end of `range`, which it must reach.
    async fn stream_rest(
        &self,
        object: &Object<'_>,
        response: InFlight,
        next: &mut u64,
        range: ByteRange,
    ) -> Result<()> {
        self.stream_into(object, response, next, Some(range.end))
            .await?;
        if *next != range.end + 1 {
            return Err(Error::Protocol {
                what: format!("GET {} {range}", object.source),
                detail: format!("body ended after byte {next} of the range"),
            });
        }
        Ok(())
    }

    pub(super) async fn send(
        &self,
        object: &ObjectUrl,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<InFlight> {
        let slot = self.request_limit.acquire().await;
        self.send_in(slot, object, range, pinned).await
    }

    /// Send a request in a slot already taken.
    pub(super) async fn send_in(
        &self,
        slot: Slot,
        object: &ObjectUrl,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<InFlight> {
        match self.source.get(object, range, pinned).await {
            Ok(fetched) => {
                self.request_limit.succeeded();
                Ok(InFlight {
                    fetched,
                    _slot: slot,
                })
            }
            Err(error) => {
                if matches!(error, Error::Throttled { .. }) {
                    self.request_limit.throttled();
                }
                Err(error)
            }
        }
    }

    /// Copy a body into the sink from byte `*next` on, advancing `*next` past every byte
    /// written, so that after a failure it names the first byte still missing. Never past
    /// `end`, when given.
    pub(super) async fn stream_into(
        &self,
        object: &Object<'_>,
        response: InFlight,
        next: &mut u64,
        end: Option<u64>,
    ) -> Result<()> {
        let InFlight { fetched, _slot } = response;
        let check = object.check;
        check.observe(&fetched, object.sink);
        let mut crc = check.stream(*next);
        let mut body = fetched.body;
        let mut buffer = BytesMut::new();
        let mut failure = None;
        while let Some(chunk) = body.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            };
            let arrived = *next + (buffer.len() + chunk.len()) as u64;
            if let Some(end) = end.filter(|end| arrived > end + 1) {
                return Err(Error::Protocol {
                    what: format!("GET {}", object.source),
                    detail: format!(
                        "body runs past the requested range (byte {arrived}, range end {end})"
                    ),
                });
            }
            crc.update(&chunk);
            self.reporter.bytes_transferred(chunk.len() as u64);
            // Large enough to go to the file as it arrived, without a copy (or going where
            // a write costs no system call).
            let as_it_came = chunk.len() >= GATHER / 2 || !object.sink.gathers_writes();
            if as_it_came || buffer.len() + chunk.len() > buffer.capacity() {
                // What was gathered goes first: before a chunk that goes as it came, and
                // rather than grow (a grown buffer doubles, and with it the memory each
                // request in flight holds).
                write_out(object, &mut buffer, next).await?;
            }
            if as_it_came {
                write(object, chunk, next).await?;
                continue;
            }
            if buffer.capacity() == 0 {
                // No more than the range still needs: a 1 KiB object gets a 1 KiB buffer.
                let still_needed = end.map_or(GATHER as u64, |end| end + 1 - *next) as usize;
                buffer.reserve(GATHER.min(still_needed).max(chunk.len()));
            }
            buffer.extend_from_slice(&chunk);
            if buffer.len() >= GATHER {
                write_out(object, &mut buffer, next).await?;
            }
        }
        write_out(object, &mut buffer, next).await?;
        crc.finish();
        failure.map_or(Ok(()), Err)
    }
}

/// Whether a GET for `rest`, the end of the object resumed after a break, was answered with
/// the whole object: the server does not serve ranges.
fn ignores_range(response: &InFlight, rest: ByteRange, total: u64) -> bool {
    let whole = matches!(
        response.fetched.shape,
        Shape::Whole { length } if length.is_none_or(|length| length == total)
    );
    whole && rest.start > 0 && rest.end + 1 == total
}

/// Drop the first `count` bytes of a response's body (written already by an earlier answer).
async fn skip(response: &mut InFlight, count: u64, source: &ObjectUrl) -> Result<()> {
    let mut left = count;
    while left > 0 {
        let Some(chunk) = response.fetched.body.next().await.transpose()? else {
            return Err(Error::Protocol {
                what: format!("GET {source}"),
                detail: format!("the whole object sent again ended before byte {count}"),
            });
        };
        if chunk.len() as u64 <= left {
            left -= chunk.len() as u64;
            continue;
        }
        let rest = chunk.slice(left as usize..);
        let body = std::mem::replace(
            &mut response.fetched.body,
            Box::pin(futures::stream::empty()),
        );
        response.fetched.body =
            Box::pin(futures::stream::once(async move { Ok(rest) }).chain(body));
        left = 0;
    }
    Ok(())
}
