//! Every file below a directory, in key order, in pages read by one walk: how a sync reads
//! its destination directory. A listing's pages (`list_page`) each walk the tree again from
//! its start to find where the page before ended, which reads a directory of 100,000 files
//! a hundred times over; this walk reads each directory once, a page at a time, with at
//! most two pages waiting for the reader.

use std::path::PathBuf;

use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::entry;
use super::tree_keys::Window;
use super::walk::{walk, Kind, Next};
use crate::error::{Error, Result};
use crate::source::listing::{KeyBounds, Listed};

/// Pages waiting for the reader: the walk stays at most this far ahead.
const PAGES_AHEAD: usize = 2;

/// The files below `root` as `Listed::Object`s, `page_size` a page, in S3's key order
/// (links, FIFOs and devices left out, as a listing leaves them), those of the range
/// `bounds` (paths below `root`) only. A directory that cannot be read ends the pages with
/// its error; a reader that goes away stops the walk.
pub(crate) fn files_in_key_order(
    root: PathBuf,
    page_size: usize,
    bounds: KeyBounds,
) -> BoxStream<'static, Result<Vec<Listed>>> {
    let page_size = page_size.max(1);
    let (pages, mut received) = mpsc::channel::<Result<Vec<Listed>>>(PAGES_AHEAD);
    tokio::task::spawn_blocking(move || {
        let mut page = Vec::with_capacity(page_size);
        let mut stopped = false;
        let window = Window {
            after: bounds.after.as_deref().map(str::as_bytes),
            until_after: bounds.until_after.as_deref().map(str::as_bytes),
            ..Window::default()
        };
        walk(&root, window, |walked| {
            // A name that is no UTF-8 is no key: never compared, never deleted.
            let Some(key) = walked.relative.to_str() else {
                return Next::PassBy;
            };
            match walked.kind {
                Kind::Directory | Kind::Other(_) => Next::Continue,
                Kind::File(metadata) => {
                    page.push(Listed::Object(entry(key.to_owned(), &metadata)));
                    if page.len() < page_size {
                        return Next::Continue;
                    }
                    let full = std::mem::replace(&mut page, Vec::with_capacity(page_size));
                    stopped = pages.blocking_send(Ok(full)).is_err();
                    if stopped {
                        Next::Stop
                    } else {
                        Next::Continue
                    }
                }
                Kind::Unreadable(error) => {
                    let path = root.join(&walked.relative);
                    let _ = pages.blocking_send(Err(Error::io("cannot list", path, error)));
                    stopped = true;
                    Next::Stop
                }
            }
        });
        if !stopped && !page.is_empty() {
            let _ = pages.blocking_send(Ok(page));
        }
    });
    futures::stream::poll_fn(move |context| received.poll_recv(context)).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    fn keys(pages: &[Vec<Listed>]) -> Vec<String> {
        pages
            .iter()
            .flatten()
            .map(|listed| match listed {
                Listed::Object(object) => object.key.clone(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn files_come_in_key_order_in_pages_of_the_size_asked() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b", "a/z", "a.txt", "a/b/c", "c"] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, name).unwrap();
        }
        std::os::unix::fs::symlink("b", dir.path().join("link")).unwrap();
        let pages: Vec<Vec<Listed>> =
            files_in_key_order(dir.path().to_owned(), 2, KeyBounds::default())
                .try_collect()
                .await
                .unwrap();
        assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
        // `a.txt` sorts before `a/`, as S3 lists `a.txt` before `a/b/c`.
        assert_eq!(keys(&pages), ["a.txt", "a/b/c", "a/z", "b", "c"]);
    }

    #[tokio::test]
    async fn an_unreadable_directory_ends_the_pages_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-directory");
        std::fs::write(&file, b"x").unwrap();
        let pages: Vec<Result<Vec<Listed>>> = files_in_key_order(file, 10, KeyBounds::default())
            .collect()
            .await;
        assert!(matches!(pages.as_slice(), [Err(_)]), "{pages:?}");
    }
}
