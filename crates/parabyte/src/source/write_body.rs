//! What a write sends: bytes already in memory, or a stretch of a file read as it goes out
//! a chunk at a time, so that a part of 8 MiB in flight holds a chunk or two of memory
//! rather than the whole part. A streamed body is opened afresh for every attempt, which
//! is how a retried request sends the same bytes again.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use crate::source::Body;

/// Opens the body's bytes from their start, once per attempt.
pub(crate) type OpenBody = Arc<dyn Fn() -> Body + Send + Sync>;

/// The body of one PUT or UploadPart.
#[derive(Clone)]
pub(crate) enum WriteBody {
    Memory(Bytes),
    /// `length` bytes, read while they are sent; the stream fails rather than send other
    /// bytes than the ones whose checksum went ahead in the headers.
    Streamed {
        length: u64,
        open: OpenBody,
    },
}

impl WriteBody {
    pub(crate) fn length(&self) -> u64 {
        match self {
            WriteBody::Memory(bytes) => bytes.len() as u64,
            WriteBody::Streamed { length, .. } => *length,
        }
    }

    /// Its bytes, from the start, chunk by chunk.
    pub(crate) fn open(&self) -> Body {
        match self {
            WriteBody::Memory(bytes) => {
                Box::pin(futures::stream::once(std::future::ready(Ok(bytes.clone()))))
            }
            WriteBody::Streamed { open, .. } => open(),
        }
    }

    /// All of it in memory, for a store that takes whole bodies (the in-memory fake). A
    /// stream that yields more than its length is refused rather than grown into.
    #[cfg(test)]
    pub(crate) async fn collect(&self) -> crate::error::Result<Bytes> {
        use futures::StreamExt;
        if let WriteBody::Memory(bytes) = self {
            return Ok(bytes.clone());
        }
        let length = self.length();
        let mut whole = bytes::BytesMut::new();
        let mut chunks = self.open();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            if whole.len() as u64 + chunk.len() as u64 > length {
                return Err(crate::error::Error::Protocol {
                    what: "a streamed body".into(),
                    detail: format!("it gave more than the {length} bytes it announced"),
                });
            }
            whole.extend_from_slice(&chunk);
        }
        Ok(whole.freeze())
    }
}

/// No body (a GET's).
impl Default for WriteBody {
    fn default() -> WriteBody {
        WriteBody::Memory(Bytes::new())
    }
}

impl From<Bytes> for WriteBody {
    fn from(bytes: Bytes) -> WriteBody {
        WriteBody::Memory(bytes)
    }
}

impl fmt::Debug for WriteBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteBody::Memory(bytes) => write!(f, "WriteBody::Memory({} bytes)", bytes.len()),
            WriteBody::Streamed { length, .. } => write!(f, "WriteBody::Streamed({length} bytes)"),
        }
    }
}
