//! A scripted in-memory [`RangeSource`] for the engine's unit tests. It serves one object
//! as an honest store would (206 for a range, 416 for a range of an empty object, 412 when
//! the pinned version is gone), except for the requests a script picks, and records every
//! request it gets.

use std::sync::Mutex;

use bytes::Bytes;

use crate::checksum::StoreChecksum;
use crate::error::{Error, Result};
use crate::location::ObjectUrl;
use crate::ranges::ByteRange;
use crate::source::{Body, Described, Fetched, RangeSource, Shape};
use crate::validator::Validator;

/// Bodies arrive in chunks of this size, as from a socket.
const CHUNK: usize = 64 * 1024;

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Seen {
    pub range: Option<ByteRange>,
    pub pinned: Option<Validator>,
}

/// How a scripted request is answered differently from the honest answer. Each part applies
/// in the order listed.
#[derive(Debug, Clone, Default)]
pub(super) struct Answer {
    /// The object becomes this version before the request is looked at.
    replace: Option<(Bytes, Option<Validator>)>,
    /// Ignore the Range header: 200 with the whole object.
    whole: bool,
    /// Fail the request with this error instead of answering.
    fail: Option<fn() -> Error>,
    /// Serve whatever version is there, whatever was pinned.
    ignore_pin: bool,
    /// Answer with this validator instead of the object's.
    validator: Option<Option<Validator>>,
    /// Answer with this shape instead of the honest one (the body stays the honest one).
    shape: Option<Shape>,
    /// End the body with a network error after this many bytes.
    break_after: Option<usize>,
}

impl Answer {
    pub(super) fn replace(mut self, data: &[u8], validator: Option<&str>) -> Answer {
        let validator = validator.map(|tag| Validator::ETag(tag.to_owned()));
        self.replace = Some((Bytes::copy_from_slice(data), validator));
        self
    }

    pub(super) fn fail(mut self, error: fn() -> Error) -> Answer {
        self.fail = Some(error);
        self
    }

    pub(super) fn whole(mut self) -> Answer {
        self.whole = true;
        self
    }

    pub(super) fn ignore_pin(mut self) -> Answer {
        self.ignore_pin = true;
        self
    }

    pub(super) fn validator(mut self, validator: Option<&str>) -> Answer {
        self.validator = Some(validator.map(|tag| Validator::ETag(tag.to_owned())));
        self
    }

    pub(super) fn shape(mut self, shape: Shape) -> Answer {
        self.shape = Some(shape);
        self
    }

    pub(super) fn break_after(mut self, bytes: usize) -> Answer {
        self.break_after = Some(bytes);
        self
    }
}

/// Which requests a scripted answer is for: those whose range starts at `range_start`
/// (any when `None`), and of those the `nth` (from 1), or every one.
#[derive(Debug, Clone, Copy)]
pub(super) struct When {
    pub range_start: Option<u64>,
    pub nth: Option<usize>,
}

impl When {
    pub(super) fn every() -> When {
        When {
            range_start: None,
            nth: None,
        }
    }

    pub(super) fn nth(n: usize) -> When {
        When {
            nth: Some(n),
            ..When::every()
        }
    }

    pub(super) fn at(start: u64) -> When {
        When {
            range_start: Some(start),
            ..When::every()
        }
    }

    pub(super) fn at_nth(start: u64, n: usize) -> When {
        When {
            range_start: Some(start),
            nth: Some(n),
        }
    }
}

#[derive(Debug)]
struct Scripted {
    when: When,
    answer: Answer,
    matched: usize,
}

#[derive(Debug)]
struct State {
    data: Bytes,
    validator: Option<Validator>,
    script: Vec<Scripted>,
    seen: Vec<Seen>,
    /// What a HEAD says: the checksum kept, and the size of the upload's parts.
    keeps: Option<(StoreChecksum, u64)>,
    /// The HEADs received: the part number each asked for, if any.
    heads: Vec<Option<u32>>,
}

#[derive(Debug)]
pub(super) struct FakeSource {
    state: Mutex<State>,
}

impl FakeSource {
    pub(super) fn new(data: &[u8], validator: Option<&str>) -> FakeSource {
        FakeSource {
            state: Mutex::new(State {
                data: Bytes::copy_from_slice(data),
                validator: validator.map(|tag| Validator::ETag(tag.to_owned())),
                script: Vec::new(),
                seen: Vec::new(),
                keeps: None,
                heads: Vec::new(),
            }),
        }
    }

    /// Answer the requests `when` picks as `answer` says; the first scripted answer that
    /// picks a request wins.
    pub(super) fn script(&self, when: When, answer: Answer) {
        self.lock().script.push(Scripted {
            when,
            answer,
            matched: 0,
        });
    }

    /// HEADs answer with `checksum`, as for an upload in parts of `part_size`.
    pub(super) fn keeps(&self, checksum: StoreChecksum, part_size: u64) {
        self.lock().keeps = Some((checksum, part_size));
    }

    /// The HEADs so far, by the part number each asked for.
    pub(super) fn heads(&self) -> Vec<Option<u32>> {
        self.lock().heads.clone()
    }

    /// Every GET so far, in the order received.
    pub(super) fn seen(&self) -> Vec<Seen> {
        self.lock().seen.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("fake source poisoned")
    }

    fn answer(&self, range: Option<ByteRange>, pinned: Option<&Validator>) -> Result<Fetched> {
        let mut state = self.lock();
        state.seen.push(Seen {
            range,
            pinned: pinned.cloned(),
        });
        let start = range.map(|r| r.start);
        let mut scripted = None;
        for entry in &mut state.script {
            if entry.when.range_start.is_some_and(|s| Some(s) != start) {
                continue;
            }
            entry.matched += 1;
            if scripted.is_none() && entry.when.nth.is_none_or(|n| n == entry.matched) {
                scripted = Some(entry.answer.clone());
            }
        }
        let answer = scripted.unwrap_or_default();
        if let Some((data, validator)) = answer.replace {
            state.data = data;
            state.validator = validator;
        }
        if let Some(error) = answer.fail {
            return Err(error());
        }
        let what = format!("GET fake {range:?}");
        let pin_failed = pinned
            .zip(state.validator.as_ref())
            .is_some_and(|(pinned, current)| !pinned.matches(current));
        if pin_failed && !answer.ignore_pin {
            return Err(Error::Changed {
                what,
                detail: "412 Precondition Failed".into(),
            });
        }
        let total = state.data.len() as u64;
        let (shape, body) = match range.filter(|_| !answer.whole) {
            None => (
                Shape::Whole {
                    length: Some(total),
                },
                state.data.clone(),
            ),
            Some(range) if total == 0 && range.start == 0 => (Shape::Empty, Bytes::new()),
            Some(range) if range.start >= total => {
                return Err(Error::Changed {
                    what,
                    detail: "416".into(),
                })
            }
            Some(range) => {
                let end = range.end.min(total - 1);
                let served = ByteRange {
                    start: range.start,
                    end,
                };
                let body = state.data.slice(range.start as usize..=end as usize);
                (
                    Shape::Partial {
                        range: served,
                        total,
                    },
                    body,
                )
            }
        };
        Ok(Fetched {
            shape: answer.shape.unwrap_or(shape),
            validator: answer.validator.unwrap_or_else(|| state.validator.clone()),
            moved_to: None,
            checksum: None,
            content_md5: state.validator.as_ref().and_then(Validator::md5),
            modified: None,
            body: chunked(body, answer.break_after, what),
        })
    }
}

/// `data` in socket-sized chunks; cut with a network error after `break_after` bytes.
fn chunked(data: Bytes, break_after: Option<usize>, what: String) -> Body {
    let sent = break_after.map_or(data.clone(), |cut| data.slice(..cut.min(data.len())));
    let mut chunks: Vec<Result<Bytes>> = (0..sent.len())
        .step_by(CHUNK)
        .map(|at| Ok(sent.slice(at..(at + CHUNK).min(sent.len()))))
        .collect();
    if break_after.is_some() {
        chunks.push(Err(Error::Network {
            what,
            detail: "connection reset".into(),
        }));
    }
    Box::pin(futures::stream::iter(chunks))
}

impl RangeSource for FakeSource {
    type Object = ObjectUrl;

    async fn fetch(
        &self,
        _object: &ObjectUrl,
        range: Option<ByteRange>,
        pinned: Option<&Validator>,
    ) -> Result<Fetched> {
        self.answer(range, pinned)
    }

    async fn describe(
        &self,
        _object: &ObjectUrl,
        pinned: &Validator,
        part_number: Option<u32>,
    ) -> Result<Option<Described>> {
        let mut state = self.lock();
        state.heads.push(part_number);
        if !state
            .validator
            .as_ref()
            .is_some_and(|now| pinned.matches(now))
        {
            return Err(Error::Changed {
                what: "HEAD fake".into(),
                detail: "412 Precondition Failed".into(),
            });
        }
        let total = state.data.len() as u64;
        let part = part_number
            .zip(state.keeps)
            .and_then(|(number, (_, size))| {
                let start = u64::from(number - 1) * size;
                (start < total).then(|| ByteRange {
                    start,
                    end: (start + size).min(total) - 1,
                })
            });
        Ok(Some(Described {
            checksum: state.keeps.map(|(checksum, _)| checksum),
            content_md5: state.validator.as_ref().and_then(Validator::md5),
            part,
        }))
    }
}
