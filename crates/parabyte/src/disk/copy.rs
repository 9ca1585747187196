//! Byte ranges copied between files: by the kernel where it can (`copy_file_range`, a
//! reflink or a server-side copy on file systems that have them), else through a buffer.
//! Local tree copies, pieces of one object and the parts of an upload into a directory use it.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

/// Buffer of the read/write fallback.
const FALLBACK_BUFFER: usize = 1024 * 1024;

/// Where a copy reads and where it writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    /// Offset in the source.
    pub from: u64,
    /// Offset in the target.
    pub to: u64,
    pub length: u64,
}

/// `length` bytes at `offset` from `source` to the same offset of `target`.
pub(crate) fn copy_range(source: &File, target: &File, offset: u64, length: u64) -> io::Result<()> {
    copy_span(
        source,
        target,
        Span {
            from: offset,
            to: offset,
            length,
        },
    )
}

/// `span.length` bytes at `span.from` of `source` to `span.to` of `target`, in the kernel
/// when it can (no copy through user space), else through a buffer.
pub(crate) fn copy_span(source: &File, target: &File, span: Span) -> io::Result<()> {
    let (mut from, mut to) = (span.from as libc::loff_t, span.to as libc::loff_t);
    let mut left = span.length;
    while left > 0 {
        // SAFETY: both descriptors are open for the duration of the call; the offsets are
        // ours and the kernel only reads and advances them.
        let copied = unsafe {
            libc::copy_file_range(
                source.as_raw_fd(),
                &mut from,
                target.as_raw_fd(),
                &mut to,
                left as usize,
                0,
            )
        };
        if copied > 0 {
            left -= copied as u64;
            continue;
        }
        if copied == 0 {
            return Err(shrank());
        }
        let error = io::Error::last_os_error();
        return match error.raw_os_error() {
            // Across file systems on older kernels, or file systems that do not offer it.
            Some(libc::EXDEV | libc::ENOSYS | libc::EOPNOTSUPP | libc::EINVAL) => {
                let done = span.length - left;
                let rest = Span {
                    from: span.from + done,
                    to: span.to + done,
                    length: left,
                };
                copy_span_buffered(source, target, rest)
            }
            _ => Err(error),
        };
    }
    Ok(())
}

fn copy_span_buffered(source: &File, target: &File, span: Span) -> io::Result<()> {
    let mut buffer = vec![0u8; FALLBACK_BUFFER.min(span.length as usize)];
    let mut done = 0;
    while done < span.length {
        let want = buffer.len().min((span.length - done) as usize);
        let read = source.read_at(&mut buffer[..want], span.from + done)?;
        if read == 0 {
            return Err(shrank());
        }
        target.write_all_at(&buffer[..read], span.to + done)?;
        done += read as u64;
    }
    Ok(())
}

fn shrank() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the file got shorter while it was copied",
    )
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn both_copy_paths_give_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        fs::write(dir.path().join("src"), &data).unwrap();
        let source = File::open(dir.path().join("src")).unwrap();
        let span = |from, to, length| Span { from, to, length };
        for (name, copy) in [
            (
                "kernel",
                copy_span as fn(&File, &File, Span) -> io::Result<()>,
            ),
            ("buffered", copy_span_buffered),
        ] {
            let target = File::create(dir.path().join(name)).unwrap();
            target.set_len(data.len() as u64).unwrap();
            copy(&source, &target, span(1_000_000, 1_000_000, 2_000_000)).unwrap();
            copy(&source, &target, span(0, 0, 1_000_000)).unwrap();
            assert!(fs::read(dir.path().join(name)).unwrap() == data, "{name}");
            // Elsewhere in the target: the parts of an upload, joined.
            let moved = File::create(dir.path().join(format!("{name}-moved"))).unwrap();
            copy(&source, &moved, span(2_000_000, 0, 1_000_000)).unwrap();
            copy(&source, &moved, span(0, 1_000_000, 5)).unwrap();
            let mut expected = data[2_000_000..].to_vec();
            expected.extend_from_slice(&data[..5]);
            assert!(
                fs::read(dir.path().join(format!("{name}-moved"))).unwrap() == expected,
                "{name}"
            );
            let past_the_end = copy(&source, &target, span(2_999_000, 2_999_000, 2_000));
            assert_eq!(
                past_the_end.unwrap_err().kind(),
                io::ErrorKind::UnexpectedEof,
                "{name}"
            );
        }
    }
}
