//! The directory store as a destination: every write lands through `disk/`'s gates, is
//! checked by the CRC64NVME sent with it, and leaves nothing behind when it fails.

use std::fs;
use std::os::unix::fs::{symlink, FileTypeExt};
use std::path::Path;

use bytes::Bytes;
use proptest::prelude::*;

use super::*;
use crate::checksum::crc64nvme;
use crate::source::store::Store;

fn key(key: &str) -> S3Url {
    S3Url {
        bucket: String::new(),
        key: key.to_owned(),
    }
}

fn body(bytes: &[u8]) -> WriteBody {
    WriteBody::Memory(Bytes::copy_from_slice(bytes))
}

/// Every name below `root` (depth first), as `/`-joined paths.
fn tree(root: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            names.push(path.strip_prefix(root).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    names.sort();
    names
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

fn no_clobber() -> WriteOptions {
    WriteOptions {
        no_clobber: true,
        ..WriteOptions::default()
    }
}

#[tokio::test]
async fn a_put_lands_whole_and_one_whose_bytes_are_not_the_crc_sent_lands_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(dir.path());
    let data = b"the bytes of one object";
    let written = store
        .put(
            &key("a/b.txt"),
            body(data),
            crc64nvme(data),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(written.crc64nvme, Some(crc64nvme(data)));
    assert_eq!(fs::read(dir.path().join("a/b.txt")).unwrap(), data);

    let error = store
        .put(
            &key("a/c.txt"),
            body(data),
            crc64nvme(b"other"),
            &WriteOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Corrupt { .. }), "{error:?}");
    assert_eq!(
        tree(dir.path()),
        ["a", "a/b.txt"],
        "no c.txt, no temporary file"
    );
}

#[tokio::test]
async fn keys_that_are_not_plain_paths_below_the_root_are_refused() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    fs::create_dir(&root).unwrap();
    let store = LocalStore::new(&root);
    for bad in [
        "../escape",
        "/etc/passwd",
        "a//b",
        "a/./b",
        ".parabyte-0123.tmp",
        "",
    ] {
        let error = store
            .put(
                &key(bad),
                body(b"x"),
                crc64nvme(b"x"),
                &WriteOptions::default(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(error, Error::InvalidInput(_)),
            "{bad:?}: {error:?}"
        );
        let error = store
            .create_upload(&key(bad), &WriteOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(error, Error::InvalidInput(_)),
            "{bad:?}: {error:?}"
        );
    }
    assert_eq!(tree(outer.path()), ["root"]);
}

#[tokio::test]
async fn nothing_is_written_through_a_linked_directory_a_link_or_onto_a_fifo() {
    let outer = tempfile::tempdir().unwrap();
    let (root, outside) = (outer.path().join("root"), outer.path().join("outside"));
    fs::create_dir_all(&root).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("target"), b"theirs").unwrap();
    symlink(&outside, root.join("linked")).unwrap();
    symlink(outside.join("target"), root.join("link")).unwrap();
    mkfifo(&root.join("fifo"));
    let store = LocalStore::new(&root);
    let options = WriteOptions::default();
    for name in ["linked/new", "link", "fifo"] {
        let error = store
            .put(&key(name), body(b"ours"), crc64nvme(b"ours"), &options)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains(name.split('/').next().unwrap()),
            "{error}"
        );
        let error = store.create_upload(&key(name), &options).await.unwrap_err();
        assert!(!matches!(error, Error::Exists { .. }), "{error:?}");
    }
    assert_eq!(tree(&outside), ["target"]);
    assert_eq!(fs::read(outside.join("target")).unwrap(), b"theirs");
    assert!(fs::symlink_metadata(root.join("fifo"))
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(
        tree(&root),
        ["fifo", "link", "linked"],
        "no temporary file stayed"
    );
}

#[tokio::test]
async fn a_hard_link_at_the_name_is_replaced_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    fs::create_dir(&root).unwrap();
    fs::write(dir.path().join("elsewhere"), b"old bytes").unwrap();
    fs::hard_link(dir.path().join("elsewhere"), root.join("h")).unwrap();
    let store = LocalStore::new(&root);
    let data = b"new bytes, longer";
    store
        .put(
            &key("h"),
            body(data),
            crc64nvme(data),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(fs::read(root.join("h")).unwrap(), data);
    assert_eq!(
        fs::read(dir.path().join("elsewhere")).unwrap(),
        b"old bytes"
    );
}

#[tokio::test]
async fn no_clobber_keeps_a_file_there_at_the_start_or_one_that_appears_before_the_end() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("there"), b"theirs").unwrap();
    let store = LocalStore::new(dir.path());
    let error = store
        .create_upload(&key("there"), &no_clobber())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Exists { .. }), "{error:?}");
    let error = store
        .put(
            &key("there"),
            body(b"ours"),
            crc64nvme(b"ours"),
            &no_clobber(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Exists { .. }), "{error:?}");

    let id = store
        .create_upload(&key("raced"), &no_clobber())
        .await
        .unwrap();
    let part = store
        .upload_part(&key("raced"), &id, 1, body(b"ours"), crc64nvme(b"ours"))
        .await
        .unwrap();
    fs::write(dir.path().join("raced"), b"another writer's").unwrap();
    let error = store
        .complete_upload(
            &key("raced"),
            &id,
            &[part],
            crc64nvme(b"ours"),
            &no_clobber(),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Exists { .. }), "{error:?}");
    assert_eq!(
        fs::read(dir.path().join("raced")).unwrap(),
        b"another writer's"
    );
    store.abort_upload(&key("raced"), &id).await.unwrap();
    wait_for_tree(dir.path(), &["raced", "there"]).await;
}

#[tokio::test]
async fn a_wrong_whole_crc_or_an_unknown_part_completes_nothing_and_abort_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(dir.path());
    let to = key("object");
    let id = store
        .create_upload(&to, &WriteOptions::default())
        .await
        .unwrap();
    let mut parts = Vec::new();
    for (number, bytes) in [(1, &b"first "[..]), (2, &b"second"[..])] {
        let part = store
            .upload_part(&to, &id, number, body(bytes), crc64nvme(bytes))
            .await
            .unwrap();
        parts.push(part);
    }
    let listed = store.list_parts(&to, &id).await.unwrap().unwrap();
    assert_eq!(
        listed.iter().map(|part| part.size).collect::<Vec<_>>(),
        [6, 6]
    );
    let options = WriteOptions::default();
    let wrong = crc64nvme(b"first other");
    let error = store
        .complete_upload(&to, &id, &parts, wrong, &options)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Corrupt { .. }), "{error:?}");
    let mut unknown = parts.clone();
    unknown[1].etag = "\"0\"".into();
    let whole = crc64nvme(b"first second");
    let error = store
        .complete_upload(&to, &id, &unknown, whole, &options)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("no part 2"), "{error}");
    assert!(!dir.path().join("object").exists());
    store.abort_upload(&to, &id).await.unwrap();
    assert_eq!(store.list_parts(&to, &id).await.unwrap(), None);
    wait_for_tree(dir.path(), &[]).await;
}

#[tokio::test]
async fn a_part_sent_again_replaces_the_one_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(dir.path());
    let to = key("again");
    let options = WriteOptions::default();
    let id = store.create_upload(&to, &options).await.unwrap();
    for bytes in [&b"first try"[..], &b"second"[..]] {
        store
            .upload_part(&to, &id, 1, body(bytes), crc64nvme(bytes))
            .await
            .unwrap();
    }
    let listed = store.list_parts(&to, &id).await.unwrap().unwrap();
    assert_eq!(listed.len(), 1);
    let part = UploadedPart {
        number: 1,
        etag: listed[0].etag.clone(),
        crc64nvme: crc64nvme(b"second"),
    };
    store
        .complete_upload(&to, &id, &[part], crc64nvme(b"second"), &options)
        .await
        .unwrap();
    assert_eq!(fs::read(dir.path().join("again")).unwrap(), b"second");
    wait_for_tree(dir.path(), &["again"]).await;
}

/// Abort removes part files on the blocking pool: wait for it, bounded.
async fn wait_for_tree(root: &Path, expected: &[&str]) {
    for _ in 0..1000 {
        if tree(root) == expected {
            return;
        }
        tokio::task::yield_now().await;
        tokio::task::spawn_blocking(|| ()).await.unwrap();
    }
    assert_eq!(tree(root), expected);
}

/// A cut of `data` into parts, the order they are sent in, and which one (if any) arrives
/// with a byte flipped under the CRC of the right bytes.
fn uploads() -> impl Strategy<Value = (Vec<u8>, Vec<usize>, Vec<usize>, Option<usize>)> {
    (1usize..6)
        .prop_flat_map(|parts| {
            (
                prop::collection::vec(any::<u8>(), parts..600),
                prop::collection::vec(1usize..200, parts - 1),
                Just((0..parts).collect::<Vec<usize>>()).prop_shuffle(),
                prop::option::of(0..parts),
            )
        })
        .prop_map(|(data, mut cuts, order, corrupt)| {
            cuts.iter_mut()
                .for_each(|cut| *cut = (*cut).min(data.len() - 1).max(1));
            cuts.sort_unstable();
            (data, cuts, order, corrupt)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Parts sent in any order join in number order into exactly the object; a part whose
    /// bytes are not the ones its CRC was sent for fails itself, and then nothing ever
    /// takes the object's name. Nothing hidden stays either way.
    #[test]
    fn parts_in_any_order_join_exactly_and_a_changed_part_lands_nothing(
        (data, cuts, order, corrupt) in uploads()
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let store = LocalStore::new(dir.path());
            let to = key("d/object");
            let options = WriteOptions::default();
            let mut bounds = vec![0];
            bounds.extend(cuts.iter().copied().filter(|cut| *cut < data.len()));
            bounds.push(data.len());
            bounds.dedup();
            let pieces: Vec<&[u8]> = bounds.windows(2).map(|w| &data[w[0]..w[1]]).collect();
            let id = store.create_upload(&to, &options).await.unwrap();
            let mut sent = vec![None; pieces.len()];
            for &index in order.iter().filter(|index| **index < pieces.len()) {
                let piece = pieces[index];
                let mut bytes = piece.to_vec();
                if corrupt == Some(index) {
                    bytes[0] ^= 0x40;
                }
                let number = index as u32 + 1;
                let answer = store
                    .upload_part(&to, &id, number, body(&bytes), crc64nvme(piece))
                    .await;
                match (corrupt == Some(index), answer) {
                    (false, Ok(part)) => sent[index] = Some(part),
                    (true, Err(Error::Corrupt { .. })) => {}
                    (changed, answer) => panic!("part {number} (changed: {changed}): {answer:?}"),
                }
            }
            let parts: Vec<UploadedPart> = sent.iter().flatten().cloned().collect();
            let completed = store
                .complete_upload(&to, &id, &parts, crc64nvme(&data), &options)
                .await;
            let path = dir.path().join("d/object");
            match corrupt.filter(|index| *index < pieces.len()) {
                None => {
                    completed.unwrap();
                    assert_eq!(fs::read(&path).unwrap(), data);
                }
                Some(_) => {
                    assert!(completed.is_err());
                    assert!(!path.exists(), "a changed part's object took its name");
                }
            }
            store.abort_upload(&to, &id).await.unwrap();
            let expected: &[&str] = match path.exists() {
                true => &["d", "d/object"],
                false => &["d"],
            };
            wait_for_tree(dir.path(), expected).await;
        });
    }
}
