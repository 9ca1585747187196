//! From keys to files: which keys can become paths under the destination directory, and
//! which keys collide (a key `a.txt` and a "folder" `a.txt/b` cannot both exist on disk).

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::Access;

use crate::error::{Error, Result};

/// Names beginning with this are parabyte's own temporary files: no key or file may take
/// one, so no key can be mistaken for a temporary file or land on one.
pub(crate) const RESERVED_PREFIX: &str = ".parabyte-";

/// True when `name` is in the pattern parabyte keeps for its temporary files.
pub(crate) fn is_reserved(name: &OsStr) -> bool {
    name.as_bytes().starts_with(RESERVED_PREFIX.as_bytes())
}

/// Why a reserved name cannot be written.
pub(crate) fn reserved_reason(name: &OsStr) -> String {
    format!(
        "its name '{}' begins with '{RESERVED_PREFIX}', which parabyte reserves for its temporary files",
        name.to_string_lossy()
    )
}

/// The path under the destination for the part of a key below the prefix, or why there is
/// none. Only plain names separated by `/` pass: nothing can climb out of the destination.
pub(crate) fn relative_path(relative_key: &str) -> Result<PathBuf, String> {
    if relative_key.is_empty() {
        return Err("its name is empty below the prefix".into());
    }
    if relative_key.starts_with('/') {
        return Err("it starts with '/' (an absolute path)".into());
    }
    let mut path = PathBuf::new();
    for segment in relative_key.split('/') {
        match segment {
            "" => return Err("it has an empty path segment ('//' or a trailing '/')".into()),
            "." | ".." => return Err(format!("it has a '{segment}' path segment")),
            _ if segment.contains('\0') => return Err("it contains a NUL byte".into()),
            _ if is_reserved(OsStr::new(segment)) => {
                return Err(reserved_reason(OsStr::new(segment)))
            }
            _ => path.push(segment),
        }
    }
    Ok(path)
}

/// Fail before anything is fetched when nothing could be written into the directory `path`
/// (to be created if missing): the deepest part of it that exists must be a directory this
/// process may write into. Follows links: it is the user's path. The error names `named`,
/// the path the user gave.
pub(crate) fn check_writable(path: &Path, named: &Path) -> Result<()> {
    let cannot = |source: io::Error| Error::io("cannot write to", named, source);
    let mut existing = path;
    loop {
        match std::fs::metadata(existing) {
            Ok(metadata) if metadata.is_dir() => break,
            Ok(_) => {
                return Err(cannot(io::Error::other(format!(
                    "'{}' is a file where a directory is needed",
                    existing.display()
                ))))
            }
            Err(e)
                if existing != Path::new(".")
                    && matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                    ) =>
            {
                existing = match existing.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => parent,
                    _ => Path::new("."),
                };
            }
            Err(e) => return Err(cannot(e)),
        }
    }
    rustix::fs::access(existing, Access::WRITE_OK | Access::EXEC_OK)
        .map_err(|e| cannot(e.into()))?;
    // Root passes access() where the file system itself refuses files (sysfs, procfs):
    // only creating one tells. The probe's name is in parabyte's own reserved namespace,
    // created exclusively (never through a link or into what is there) and gone at once.
    let probe = existing.join(format!(
        "{RESERVED_PREFIX}probe-{}-{}",
        std::process::id(),
        PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        // Taken by another run's probe: creating names there works.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(cannot(e)),
    }
}

/// Probes made by this process, so two at once never share a name.
static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The first directory between `root` and the file at `relative` that exists as a symbolic
/// link: writing through it could land outside the destination.
pub(crate) fn linked_directory(root: &Path, relative: &Path) -> Option<PathBuf> {
    let mut current = root.to_path_buf();
    let parents = relative.parent()?.components();
    for component in parents {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => return Some(current),
            Ok(_) => {}
            // Not there yet: nothing below it exists either.
            Err(_) => return None,
        }
    }
    None
}

/// What the guard lets through.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict<T> {
    /// No conflict: go ahead.
    Clear(T),
    /// This key needs a path that another key needs as the other kind (file or directory).
    Collides { item: T, other: String },
}

/// Detects file/directory collisions among keys arriving in listing (byte) order, in memory
/// bounded by key depth. All keys starting with `k` directly follow `k` in that order, so a
/// key is only held back while later keys still have it as a prefix; the moment one does
/// not, the held key is known to be a plain file and is released.
#[derive(Debug)]
pub(crate) struct CollisionGuard<T> {
    held: Vec<Held<T>>,
}

#[derive(Debug)]
struct Held<T> {
    key: String,
    item: T,
    collides_with: Option<String>,
}

impl<T> Default for CollisionGuard<T> {
    fn default() -> Self {
        CollisionGuard { held: Vec::new() }
    }
}

impl<T> CollisionGuard<T> {
    /// Accept the next relative key; returns what is now safe to decide.
    pub(crate) fn push(&mut self, key: String, item: T) -> Vec<Verdict<T>> {
        let mut decided = Vec::new();
        while let Some(top) = self.held.last() {
            if key.starts_with(&top.key) {
                break;
            }
            decided.push(self.release_top());
        }
        let mut collides_with = None;
        for held in &mut self.held {
            // Held keys are all prefixes of `key`; those followed by '/' are its directories.
            if key.as_bytes().get(held.key.len()) == Some(&b'/') {
                held.collides_with.get_or_insert_with(|| key.clone());
                collides_with.get_or_insert_with(|| held.key.clone());
            }
        }
        self.held.push(Held {
            key,
            item,
            collides_with,
        });
        decided
    }

    /// Release everything still held (the listing has ended).
    pub(crate) fn finish(mut self) -> Vec<Verdict<T>> {
        let mut decided = Vec::with_capacity(self.held.len());
        while !self.held.is_empty() {
            decided.push(self.release_top());
        }
        decided
    }

    fn release_top(&mut self) -> Verdict<T> {
        let held = self.held.pop().expect("release_top on an empty guard");
        match held.collides_with {
            None => Verdict::Clear(held.item),
            Some(other) => Verdict::Collides {
                item: held.item,
                other,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_keys_become_paths() {
        assert_eq!(
            relative_path("a/b c/ü+%.txt").unwrap(),
            PathBuf::from("a/b c/ü+%.txt")
        );
        assert_eq!(
            relative_path("..hidden/x..y").unwrap(),
            PathBuf::from("..hidden/x..y")
        );
    }

    #[test]
    fn links_inside_the_destination_are_found() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("real/deeper")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.path().join("real/link")).unwrap();
        let found = |relative: &str| linked_directory(root.path(), Path::new(relative));
        assert_eq!(found("real/link/file"), Some(root.path().join("real/link")));
        assert_eq!(found("real/link/a/b"), Some(root.path().join("real/link")));
        assert_eq!(found("real/deeper/file"), None);
        assert_eq!(found("new/dir/file"), None);
        assert_eq!(found("top-level-file"), None);
    }

    #[test]
    fn keys_that_could_escape_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "../up",
            "a/../../b",
            "a//b",
            "a/./b",
            "dir/",
            "nul\0byte",
            ".parabyte-0123.tmp",
            "dir/.parabyte-x",
        ] {
            assert!(relative_path(bad).is_err(), "{bad:?} should be refused");
        }
    }

    fn run(keys: &[&str]) -> (Vec<String>, Vec<(String, String)>) {
        let mut guard = CollisionGuard::default();
        let mut verdicts = Vec::new();
        for key in keys {
            verdicts.extend(guard.push(key.to_string(), key.to_string()));
        }
        verdicts.extend(guard.finish());
        let mut clear = Vec::new();
        let mut collided = Vec::new();
        for verdict in verdicts {
            match verdict {
                Verdict::Clear(key) => clear.push(key),
                Verdict::Collides { item, other } => collided.push((item, other)),
            }
        }
        clear.sort();
        collided.sort();
        (clear, collided)
    }

    #[test]
    fn a_key_and_a_folder_of_the_same_name_are_both_reported() {
        let (clear, collided) = run(&["a.txt", "a.txt-1", "a.txt.bak", "a.txt/b", "a.txt/c", "b"]);
        assert_eq!(clear, vec!["a.txt-1", "a.txt.bak", "b"]);
        assert_eq!(
            collided,
            vec![
                ("a.txt".to_string(), "a.txt/b".to_string()),
                ("a.txt/b".to_string(), "a.txt".to_string()),
                ("a.txt/c".to_string(), "a.txt".to_string()),
            ]
        );
    }

    #[test]
    fn prefixes_without_a_slash_do_not_collide() {
        let (clear, collided) = run(&["data", "data0", "data00", "data1", "datb/x"]);
        assert_eq!(clear.len(), 5);
        assert!(collided.is_empty());
    }

    #[test]
    fn memory_stays_bounded_by_depth() {
        let mut guard = CollisionGuard::default();
        for i in 0..10_000 {
            guard.push(format!("dir/{i:05}"), ());
            assert!(guard.held.len() <= 2);
        }
    }
}
