//! A destination that is a character device, a FIFO or stdout: opened without replacing
//! it, and written in object order, each write waiting for the bytes before it.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use rustix::fs::{FileType, Mode, OFlags};
use tokio::sync::watch;

use crate::checksum::OrderedMd5;
use crate::disk::blocking::blocking;
use crate::error::{Error, Result};

/// Where a stream destination's bytes go.
#[derive(Debug, Clone)]
pub(crate) struct StreamTarget {
    /// `None` for stdout.
    path: Option<PathBuf>,
    /// The user named this path and may have chosen a link to a device (`/dev/stdout`).
    follow: bool,
    /// Bytes went out already: they cannot be taken back if the object must start again.
    started: Arc<AtomicBool>,
}

impl StreamTarget {
    pub(crate) fn stdout() -> StreamTarget {
        StreamTarget {
            path: None,
            follow: false,
            started: Arc::default(),
        }
    }

    /// `path` when it is a character device or a FIFO; through a link only when `follow`.
    pub(crate) fn device(path: &Path, follow: bool) -> Option<StreamTarget> {
        let stat = if follow {
            rustix::fs::stat(path)
        } else {
            rustix::fs::lstat(path)
        }
        .ok()?;
        let streams = matches!(
            FileType::from_raw_mode(stat.st_mode),
            FileType::CharacterDevice | FileType::Fifo
        );
        streams.then(|| StreamTarget {
            path: Some(path.to_owned()),
            follow,
            started: Arc::default(),
        })
    }

    pub(crate) fn name(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(|| PathBuf::from("-"))
    }

    /// Open for writing: no O_CREAT, no O_TRUNC, so the device or FIFO is written, never
    /// replaced; and it must still be one once open.
    pub(crate) fn open(&self) -> Result<File> {
        let name = self.name();
        let fd = match &self.path {
            None => rustix::io::dup(io::stdout()),
            Some(path) => {
                let follow = if self.follow {
                    OFlags::empty()
                } else {
                    OFlags::NOFOLLOW
                };
                rustix::fs::open(
                    path,
                    OFlags::WRONLY | OFlags::CLOEXEC | follow,
                    Mode::empty(),
                )
            }
        }
        .map_err(|e| Error::io("cannot open", &name, e.into()))?;
        let out = File::from(fd);
        if self.path.is_some() {
            let stat =
                rustix::fs::fstat(&out).map_err(|e| Error::io("cannot check", &name, e.into()))?;
            let kind = FileType::from_raw_mode(stat.st_mode);
            if !matches!(kind, FileType::CharacterDevice | FileType::Fifo) {
                return Err(Error::io(
                    "will not write",
                    name,
                    io::Error::other("it is no longer a character device or FIFO"),
                ));
            }
        }
        Ok(out)
    }
}

/// Writes in object order: a write ahead of the next expected offset waits its turn, so
/// nothing is buffered beyond the writers' own buffers.
#[derive(Debug)]
pub(crate) struct OrderedSink {
    out: Arc<File>,
    pub(super) name: PathBuf,
    pub(super) turn: watch::Sender<Turn>,
    /// The content check's MD5, fed each write in order (set before the first write).
    pub(super) in_order: OnceLock<Arc<OrderedMd5>>,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Turn {
    /// The offset the next write must start at.
    pub(super) next: u64,
    /// A part failed for good: the bytes after it will never get their turn.
    pub(super) stopped: bool,
}

impl OrderedSink {
    pub(super) fn open(target: &StreamTarget) -> Result<OrderedSink> {
        let name = target.name();
        if target.started.load(Ordering::Acquire) {
            return Err(Error::io(
                "cannot start again into",
                name,
                io::Error::other(
                    "the object changed after its first bytes were written, which cannot be taken back; run the command again",
                ),
            ));
        }
        let out = target.open()?;
        target.started.store(true, Ordering::Release);
        Ok(OrderedSink::over(out, name))
    }

    fn over(out: File, name: PathBuf) -> OrderedSink {
        OrderedSink {
            out: Arc::new(out),
            name,
            turn: watch::Sender::new(Turn::default()),
            in_order: OnceLock::new(),
        }
    }

    pub(super) async fn write(&self, data: Bytes, offset: u64) -> Result<()> {
        let mut turn = self.turn.subscribe();
        let now = *turn
            .wait_for(|turn| turn.stopped || turn.next >= offset)
            .await
            .map_err(|e| Error::io("cannot write", &self.name, io::Error::other(e)))?;
        if now.stopped {
            return Err(Error::io(
                "stopped writing",
                &self.name,
                io::Error::other("an earlier part of the object failed"),
            ));
        }
        if now.next != offset {
            return Err(Error::io(
                "cannot write",
                &self.name,
                io::Error::other(format!(
                    "bytes at {offset} arrived after byte {} was written",
                    now.next
                )),
            ));
        }
        let length = data.len() as u64;
        let (out, md5, name) = (
            self.out.clone(),
            self.in_order.get().cloned(),
            self.name.clone(),
        );
        let written = blocking(move || {
            (&*out)
                .write_all(&data)
                .map_err(|e| Error::io("cannot write", &name, e))?;
            if let Some(md5) = md5 {
                // Our turn: these bytes directly follow everything hashed so far.
                md5.written(offset, length);
                md5.hash_in_order(offset, &data);
            }
            Ok(())
        })
        .await;
        self.turn.send_modify(|turn| match written {
            Ok(()) => turn.next += length,
            Err(_) => turn.stopped = true,
        });
        written
    }

    pub(super) fn flush(self) -> Result<()> {
        (&*self.out)
            .flush()
            .map_err(|e| Error::io("cannot write", &self.name, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::{Digest as _, Md5};

    use crate::disk::sink::Sink;
    #[tokio::test(flavor = "multi_thread")]
    async fn an_ordered_sink_writes_in_order_and_stops_when_a_part_fails() {
        let (mut reader, writer) = io::pipe().unwrap();
        let out = File::from(std::os::fd::OwnedFd::from(writer));
        let sink = Sink::Ordered(OrderedSink::over(out, PathBuf::from("pipe")));
        let md5 = Arc::new(OrderedMd5::default());
        sink.hash_in_write_order(&md5);
        let (later, first) = tokio::join!(
            sink.write_at(Bytes::from_static(b"world"), 6),
            sink.write_at(Bytes::from_static(b"hello "), 0),
        );
        later.unwrap();
        first.unwrap();
        let mut received = [0u8; 11];
        io::Read::read_exact(&mut reader, &mut received).unwrap();
        assert_eq!(&received, b"hello world");
        // Hashed as the bytes went out: nothing needs reading back from the pipe.
        let digest = sink
            .read_back(move |read| md5.finish(11, read))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(digest, <[u8; 16]>::from(Md5::digest(b"hello world")));

        // Bytes after a part that failed for good never get their turn: they stop waiting.
        let (waiting, ()) = tokio::join!(sink.write_at(Bytes::from_static(b"!"), 100), async {
            tokio::task::yield_now().await;
            sink.part_failed();
        });
        let error = waiting.unwrap_err().to_string();
        assert!(
            error.contains("an earlier part of the object failed"),
            "{error}"
        );
    }
}
