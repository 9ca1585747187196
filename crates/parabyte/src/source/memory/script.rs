//! The fault script of the in-memory store: which requests (`When`) are answered how
//! (`Answer`) instead of honestly.

use bytes::Bytes;

use crate::checksum::StoreChecksum;
use crate::error::Error;
use crate::ranges::ByteRange;
use crate::source::Shape;
use crate::validator::Validator;

/// The kinds of request the store counts apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    Get,
    Head,
    List,
    /// PutObject.
    Put,
    /// CreateMultipartUpload.
    Create,
    /// UploadPart (its part number stands where a GET's range start does).
    Part,
    /// CompleteMultipartUpload.
    Complete,
    /// ListParts.
    ListParts,
    /// CopyObject.
    Copy,
    /// UploadPartCopy (its part number stands where a GET's range start does).
    PartCopy,
    /// AbortMultipartUpload.
    Abort,
    /// One key of a DeleteObjects.
    Delete,
}

/// How a scripted request is answered differently from the honest answer. Each part applies
/// in the order listed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answer {
    /// The object becomes this version before the request is looked at.
    pub(super) replace: Option<(Bytes, Option<Validator>)>,
    /// Ignore the Range header: 200 with the whole object.
    pub(super) whole: bool,
    /// Fail the request with this error instead of answering.
    pub(super) fail: Option<fn() -> Error>,
    /// Serve whatever version is there, whatever was pinned.
    pub(super) ignore_pin: bool,
    /// Answer with this validator instead of the object's.
    pub(super) validator: Option<Option<Validator>>,
    /// Answer with this shape instead of the honest one (the body stays the honest one).
    pub(super) shape: Option<Shape>,
    /// End the body (or a listing page) with a network error after this many bytes (or
    /// objects). A CompleteMultipartUpload is done, and its answer lost that way.
    pub(super) break_after: Option<usize>,
    /// The body arrives in chunks of these sizes, in turn, as from an uneven socket.
    pub(super) chunk_sizes: Option<Vec<usize>>,
    /// A HEAD tells this checksum and part instead of the honest ones.
    pub(super) described: Option<(Option<StoreChecksum>, Option<ByteRange>)>,
    /// A listing page comes with its keys in reverse order.
    pub(super) reversed: bool,
    /// A listing page gives back the continuation token it was asked with.
    pub(super) same_token: bool,
    /// A listing page says more keys follow but gives no token.
    pub(super) no_token: bool,
    /// A listing page carries this key too, wherever it belongs.
    pub(super) stray_key: Option<String>,
}

impl Answer {
    pub(crate) fn replace(mut self, data: &[u8], validator: Option<&str>) -> Answer {
        let validator = validator.map(|tag| Validator::ETag(tag.to_owned()));
        self.replace = Some((Bytes::copy_from_slice(data), validator));
        self
    }

    pub(crate) fn fail(mut self, error: fn() -> Error) -> Answer {
        self.fail = Some(error);
        self
    }

    pub(crate) fn whole(mut self) -> Answer {
        self.whole = true;
        self
    }

    pub(crate) fn ignore_pin(mut self) -> Answer {
        self.ignore_pin = true;
        self
    }

    pub(crate) fn validator(mut self, validator: Option<&str>) -> Answer {
        self.validator = Some(validator.map(|tag| Validator::ETag(tag.to_owned())));
        self
    }

    pub(crate) fn shape(mut self, shape: Shape) -> Answer {
        self.shape = Some(shape);
        self
    }

    pub(crate) fn break_after(mut self, count: usize) -> Answer {
        self.break_after = Some(count);
        self
    }

    pub(crate) fn chunk_sizes(mut self, sizes: &[usize]) -> Answer {
        assert!(
            !sizes.is_empty() && !sizes.contains(&0),
            "a body cannot arrive in chunks of {sizes:?}"
        );
        self.chunk_sizes = Some(sizes.to_vec());
        self
    }

    pub(crate) fn described(
        mut self,
        checksum: Option<StoreChecksum>,
        part: Option<ByteRange>,
    ) -> Answer {
        self.described = Some((checksum, part));
        self
    }

    pub(crate) fn reversed(mut self) -> Answer {
        self.reversed = true;
        self
    }

    pub(crate) fn same_token(mut self) -> Answer {
        self.same_token = true;
        self
    }

    pub(crate) fn no_token(mut self) -> Answer {
        self.no_token = true;
        self
    }

    pub(crate) fn stray_key(mut self, key: &str) -> Answer {
        self.stray_key = Some(key.to_owned());
        self
    }
}

/// Which requests a scripted answer is for: those of kind `request`, about `key` (any when
/// `None`; for a listing, the prefix), whose range starts at `range_start` (any when
/// `None`), and of those the `nth` (from 1), or every one.
#[derive(Debug, Clone)]
pub(crate) struct When {
    pub request: Request,
    pub key: Option<String>,
    pub range_start: Option<u64>,
    pub nth: Option<usize>,
}

impl When {
    /// Every GET.
    pub(crate) fn every() -> When {
        When {
            request: Request::Get,
            key: None,
            range_start: None,
            nth: None,
        }
    }

    /// The `n`th GET.
    pub(crate) fn nth(n: usize) -> When {
        When {
            nth: Some(n),
            ..When::every()
        }
    }

    /// Every GET of a range starting at `start`.
    pub(crate) fn at(start: u64) -> When {
        When {
            range_start: Some(start),
            ..When::every()
        }
    }

    /// The `n`th GET of a range starting at `start`.
    pub(crate) fn at_nth(start: u64, n: usize) -> When {
        When {
            range_start: Some(start),
            nth: Some(n),
            ..When::every()
        }
    }

    /// The `n`th listing page request.
    pub(crate) fn list_nth(n: usize) -> When {
        When {
            request: Request::List,
            nth: Some(n),
            ..When::every()
        }
    }

    /// Every write request of this kind.
    pub(crate) fn write(request: Request) -> When {
        When {
            request,
            ..When::every()
        }
    }

    /// The `n`th write request of this kind.
    pub(crate) fn write_nth(request: Request, n: usize) -> When {
        When {
            nth: Some(n),
            ..When::write(request)
        }
    }

    /// Every HEAD.
    pub(crate) fn head() -> When {
        When {
            request: Request::Head,
            ..When::every()
        }
    }

    /// Only requests about `key`.
    pub(crate) fn key(mut self, key: &str) -> When {
        self.key = Some(key.to_owned());
        self
    }

    pub(super) fn picks(&self, request: Request, key: &str, start: Option<u64>) -> bool {
        self.request == request
            && self.key.as_deref().is_none_or(|wanted| wanted == key)
            && self.range_start.is_none_or(|wanted| Some(wanted) == start)
    }
}

#[derive(Debug)]
pub(super) struct Scripted {
    pub when: When,
    pub answer: Answer,
    pub matched: usize,
}

/// The answer for one request: the first scripted entry that picks it, else the honest one.
/// Every entry that picks the request counts it, so `nth` counts requests of its own kind.
pub(super) fn answer_for(
    script: &mut [Scripted],
    request: Request,
    key: &str,
    start: Option<u64>,
) -> Answer {
    let mut scripted = None;
    for entry in script {
        if !entry.when.picks(request, key, start) {
            continue;
        }
        entry.matched += 1;
        if scripted.is_none() && entry.when.nth.is_none_or(|n| n == entry.matched) {
            scripted = Some(entry.answer.clone());
        }
    }
    scripted.unwrap_or_default()
}
