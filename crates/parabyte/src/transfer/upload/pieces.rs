//! Where an upload of unknown length reads its parts from, one after another: standard
//! input or a stream named as a file, or the body of a web server's answer (web to S3), never more than a part at a
//! time in memory.

use std::future::Future;
use std::path::Path;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::source::Body;

/// A source read in order, a part at a time.
pub(crate) trait Pieces: Send {
    /// What it is, for reports: `(stdin)`, a URL.
    fn name(&self) -> &str;

    /// Up to `limit` bytes: fewer only where it ends.
    fn next_piece(&mut self, limit: u64) -> impl Future<Output = Result<Bytes>> + Send;
}

/// Standard input, a stream the user named (a FIFO, `/dev/fd/N` from a process
/// substitution, `/dev/stdin`, a device), or any reader: read as it comes.
pub(crate) struct Reader<R> {
    input: R,
    name: String,
}

impl<R> Reader<R> {
    pub(crate) fn stdin(input: R) -> Reader<R> {
        Reader {
            input,
            name: "(stdin)".into(),
        }
    }
}

/// Standard input (`None`), or the stream at `named`, opened as the user named it (a link
/// such as `/dev/fd/63` read as what it points to). Opening a FIFO waits for its writer.
pub(crate) async fn stream_from(
    named: Option<&Path>,
) -> Result<Reader<Box<dyn AsyncRead + Unpin + Send>>> {
    let Some(path) = named else {
        return Ok(Reader::stdin(Box::new(tokio::io::stdin())));
    };
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| Error::io("cannot open", path, e))?;
    Ok(Reader {
        input: Box::new(file),
        name: path.display().to_string(),
    })
}

impl<R: AsyncRead + Unpin + Send> Pieces for Reader<R> {
    fn name(&self) -> &str {
        &self.name
    }

    async fn next_piece(&mut self, limit: u64) -> Result<Bytes> {
        let mut buffer = Vec::with_capacity(limit as usize);
        (&mut self.input)
            .take(limit)
            .read_to_end(&mut buffer)
            .await
            .map_err(|e| Error::io("cannot read", &self.name, e))?;
        Ok(Bytes::from(buffer))
    }
}

/// What a writer hands a streamed upload ([`crate::Client::put_written`]): some bytes, or
/// the end of what it writes.
#[derive(Debug)]
pub enum Chunk {
    /// The next bytes of the object.
    Data(Bytes),
    /// The writer is done: the object is what it sent.
    End,
}

/// A writer's bytes arriving over a channel (a Python file open for writing), read a part
/// at a time as they come. A channel that closes before [`Chunk::End`] is a writer that
/// failed or was dropped unclosed: the read fails, so the upload is aborted and nothing is
/// stored.
pub(crate) struct WriterChunks {
    receiver: mpsc::Receiver<Chunk>,
    /// Received but not yet handed on.
    held: Bytes,
    ended: bool,
    name: String,
}

impl WriterChunks {
    pub(crate) fn new(receiver: mpsc::Receiver<Chunk>, name: String) -> WriterChunks {
        WriterChunks {
            receiver,
            held: Bytes::new(),
            ended: false,
            name,
        }
    }
}

impl Pieces for WriterChunks {
    fn name(&self) -> &str {
        &self.name
    }

    async fn next_piece(&mut self, limit: u64) -> Result<Bytes> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut piece = BytesMut::new();
        while piece.len() < limit {
            if self.held.is_empty() {
                if self.ended {
                    break;
                }
                match self.receiver.recv().await {
                    Some(Chunk::Data(bytes)) => self.held = bytes,
                    Some(Chunk::End) => self.ended = true,
                    None => {
                        return Err(Error::io(
                            "cannot read",
                            Path::new(&self.name),
                            std::io::Error::other(
                                "the writer stopped before it was closed; nothing is stored",
                            ),
                        ))
                    }
                }
                continue;
            }
            let take = self.held.len().min(limit - piece.len());
            if piece.is_empty() && take == self.held.len() && take == limit {
                return Ok(std::mem::take(&mut self.held)); // a whole part as written: no copy
            }
            piece.extend_from_slice(&self.held.split_to(take));
        }
        Ok(piece.freeze())
    }
}

/// A response body, whose length (when the server named one) it must reach exactly.
pub(crate) struct Answer {
    pub(crate) name: String,
    pub(crate) body: Body,
    pub(crate) length: Option<u64>,
    /// Received but not yet handed on.
    pub(crate) held: Bytes,
    pub(crate) received: u64,
}

impl Pieces for Answer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn next_piece(&mut self, limit: u64) -> Result<Bytes> {
        let mut piece = BytesMut::new();
        loop {
            let room = limit as usize - piece.len();
            if !self.held.is_empty() {
                let taken = self.held.split_to(room.min(self.held.len()));
                piece.extend_from_slice(&taken);
            }
            if piece.len() as u64 == limit {
                return Ok(piece.freeze());
            }
            match self.body.next().await {
                Some(chunk) => {
                    let chunk = chunk?;
                    self.received += chunk.len() as u64;
                    self.held = chunk;
                }
                None => {
                    if let Some(length) = self.length.filter(|&length| length != self.received) {
                        return Err(Error::Protocol {
                            what: format!("GET {}", self.name),
                            detail: format!(
                                "the body ended after {} of the {length} bytes announced",
                                self.received
                            ),
                        });
                    }
                    return Ok(piece.freeze());
                }
            }
        }
    }
}
