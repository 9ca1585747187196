//! The planner of an S3 copy: one object, or a listing's worth, each listed key kept or
//! filtered out, checked to be a safe path and held back until it cannot collide with a
//! "folder" of the same name.

use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use tokio::sync::mpsc;

use super::destination::{single_object_path, user_file_target};
use super::planned::{refuse, Planned};
use super::request::{Landing, StoreCopy};
use crate::config::TransferConfig;
use crate::counters::Counters;
use crate::disk::paths::{
    check_writable, linked_directory, relative_path, CollisionGuard, Verdict,
};
use crate::disk::sink::{FilePath, StreamTarget, Target};
use crate::error::{Error, Result};
use crate::location::{ObjectUrl, S3Url};
use crate::pattern::excluded_by;
use crate::report::{Failure, Preview, Reporter};
use crate::retry::{with_retries, RetryPolicy};
use crate::source::listing::{first_key, list, KeyBounds, ListSpec, Listed};
use crate::source::Store;
use crate::source::WriteOptions;
use crate::transfer::engine::{Job, Known};
use crate::transfer::upload::CopyJob;
use crate::validator::Validator;

/// The prefix a recursive request lists: `dir` means `dir/`, as in `aws s3 cp --recursive`;
/// a pattern's literal prefix, as s5cmd lists it.
pub(crate) fn list_prefix(request: &StoreCopy) -> String {
    let key = &request.source.key;
    if let Some(pattern) = &request.pattern {
        pattern.literal_prefix().to_owned()
    } else if key.is_empty() || key.ends_with('/') {
        key.clone()
    } else {
        format!("{key}/")
    }
}

/// The planner of a copy request: one object, or a listing's worth.
pub(crate) fn plan<S: Store<Object = ObjectUrl>>(
    store: Arc<S>,
    counters: Arc<Counters>,
    transfer: TransferConfig,
    request: StoreCopy,
    reporter: Arc<dyn Reporter>,
) -> impl FnOnce(mpsc::Sender<Planned>) -> BoxFuture<'static, Result<()>> {
    move |queue| plan_request(store, counters, transfer, request, queue, reporter).boxed()
}

/// Turn the request into jobs on the queue: one object, or a listing's worth.
async fn plan_request<S: Store<Object = ObjectUrl>>(
    store: Arc<S>,
    counters: Arc<Counters>,
    transfer: TransferConfig,
    request: StoreCopy,
    queue: mpsc::Sender<Planned>,
    reporter: Arc<dyn Reporter>,
) -> Result<()> {
    if request.lists() {
        match &request.destination {
            Landing::Stdout => {
                return Err(Error::InvalidInput(format!(
                    "s3://{}/{} is a prefix: its objects cannot all go to stdout; give a directory",
                    request.source.bucket,
                    list_prefix(&request)
                )))
            }
            Landing::Path(root) => check_writable(root, root)?,
            Landing::Discard | Landing::Store { .. } | Landing::Delete => {}
        }
        let prefix = list_prefix(&request);
        let spec = ListSpec {
            bucket: request.source.bucket.clone(),
            prefix: prefix.clone(),
            delimiter: None,
            parallelism: transfer.list_parallelism,
            page_size: transfer.list_page_size,
            bounds: request.bounds.clone(),
        };
        let listing = list(store, counters, transfer.retry, spec);
        return plan_listing(listing, &request, &prefix, &queue, reporter.as_ref()).await;
    }
    // Filters see a single object's name, as the AWS CLI matches its path below the directory.
    let name = request.source.key.rsplit('/').next().unwrap_or_default();
    if let Some(filter) = excluded_by(&request.filters, name) {
        if request.dry_run {
            let source = request.source.to_string();
            reporter.previewed(Preview::Excluded {
                source: &source,
                filter,
            });
        }
        return Ok(());
    }
    if request.destination == Landing::Delete {
        let source = request.source;
        let planned = match named_key_is_there(store, counters, transfer.retry, &source).await {
            Ok(()) => {
                reporter.object_queued(None);
                Planned::Delete(source)
            }
            Err(error) if error.is_fatal() => return Err(error),
            Err(error) => Planned::Refused(Failure {
                source: source.to_string(),
                error,
            }),
        };
        let _ = queue.send(planned).await;
        return Ok(());
    }
    // A dry run of one key looks whether it is there (one HEAD), as aws's does: a key that
    // is not fails as its copy would, naming it.
    if request.dry_run {
        let object = ObjectUrl::S3(request.source.clone());
        let looked = with_retries(&transfer.retry, &counters, || {
            store.describe(&object, None, None)
        })
        .await;
        match looked {
            Ok(_) => {}
            Err(error) if error.is_fatal() => return Err(error),
            Err(error) => {
                let source = request.source.to_string();
                let _ = queue
                    .send(Planned::Refused(Failure { source, error }))
                    .await;
                return Ok(());
            }
        }
    }
    if let Landing::Store { url, options } = &request.destination {
        // Into a prefix (`s3://b/` or `s3://b/dir/`) under the key's name, else to the key.
        let name = request.source.key.rsplit('/').next().unwrap_or_default();
        let key = match url.key.is_empty() || url.key.ends_with('/') {
            true => format!("{}{name}", url.key),
            false => url.key.clone(),
        };
        reporter.object_queued(None);
        let job = CopyJob {
            from: request.source.clone(),
            to: S3Url {
                bucket: url.bucket.clone(),
                key,
            },
            known: None,
            modified: None,
            options: options.clone(),
        };
        let _ = queue.send(Planned::Copy(job)).await;
        return Ok(());
    }
    let target = match &request.destination {
        Landing::Discard => Ok(Target::Discard),
        Landing::Stdout => Ok(Target::Stream(StreamTarget::stdout())),
        // A path the user named that cannot be written is fatal, before any GET; a key
        // whose name cannot be a file there is refused on its own.
        Landing::Path(path) => match single_object_path(path, &request.source.key) {
            Ok(path) => Ok(user_file_target(&path)?),
            Err(reason) => Err(reason),
        },
        Landing::Store { .. } | Landing::Delete => return Ok(()),
    };
    let mut job = Job {
        source: request.source.clone().into(),
        known: None,
        target: Target::Discard,
    };
    let planned = match target {
        Ok(target) => {
            reporter.object_queued(None);
            job.target = target;
            Planned::Job(job)
        }
        Err(reason) => {
            let key = request.source.key;
            refuse(&job, Error::UnsafeKey { key, reason })
        }
    };
    // A closed queue means the downloads stopped (fatal error); nothing to add.
    let _ = queue.send(planned).await;
    Ok(())
}

/// Whether the one key `rm` names is there, since DeleteObjects answers success for a key
/// that is not: one LIST of one key. A key that is not there but names a prefix with keys
/// under it (`dir/`, or `dir` with `dir/...`) is refused: a tree goes only with --recursive.
async fn named_key_is_there<S: Store>(
    store: Arc<S>,
    counters: Arc<Counters>,
    retry: RetryPolicy,
    url: &S3Url,
) -> Result<()> {
    let first_under = |prefix: String| {
        first_key(
            store.clone(),
            counters.clone(),
            retry.clone(),
            &url.bucket,
            prefix,
        )
    };
    // The key itself is the first of the keys it is a prefix of.
    let first = first_under(url.key.clone()).await?;
    if first.as_deref() == Some(url.key.as_str()) {
        return Ok(());
    }
    let (prefix, under) = match url.is_prefix() {
        true => (url.key.clone(), first.is_some()),
        false => {
            let prefix = format!("{}/", url.key);
            let under = first_under(prefix.clone()).await?.is_some();
            (prefix, under)
        }
    };
    Err(match under {
        true => Error::PrefixNotKey {
            url: url.to_string(),
            prefix: format!("s3://{}/{prefix}", url.bucket),
        },
        false => Error::NotFound {
            what: url.to_string(),
            detail: "no such key, so nothing was deleted".to_owned(),
        },
    })
}

/// Where the paths of listed keys start: after the last '/' of a pattern's literal prefix
/// (so `imgs/*.jpg` puts `imgs/a/b.jpg` at `a/b.jpg`, as s5cmd does), else after the prefix.
fn relative_base<'a>(request: &'a StoreCopy, prefix: &'a str) -> &'a str {
    match &request.pattern {
        Some(pattern) => pattern.literal_directory(),
        None => prefix,
    }
}

/// Map listed objects to jobs: keep the keys the pattern matches and the filters let through,
/// check each key can be a path, hold keys back until they are known not to collide with a
/// "folder" of the same name, and queue them in listing order. A listing that matches
/// nothing ends with a failure that says so.
async fn plan_listing(
    listing: impl Stream<Item = Result<Vec<Listed>>>,
    request: &StoreCopy,
    prefix: &str,
    queue: &mpsc::Sender<Planned>,
    reporter: &dyn Reporter,
) -> Result<()> {
    let mut listing = std::pin::pin!(listing);
    let mut guard = CollisionGuard::default();
    let base = relative_base(request, prefix);
    let mut matched = false;
    // A key named exactly like the pattern: the user may have meant it literally.
    let mut literal_key_listed = false;
    while let Some(page) = listing.next().await {
        let page = match page {
            Ok(page) => page,
            Err(error) => {
                // Keys already listed are still downloaded or reported, then the listing fails.
                for verdict in guard.finish() {
                    let root = request.destination.root();
                    if !send_verdict(queue, verdict, base, root, reporter).await {
                        break;
                    }
                }
                return Err(error);
            }
        };
        for entry in page {
            let Listed::Object(object) = entry else {
                continue;
            };
            // A zero-byte key ending in '/' is a console-made "folder": nothing to write.
            if object.key.ends_with('/') && object.size == 0 {
                continue;
            }
            if let Some(pattern) = &request.pattern {
                if !pattern.matches(&object.key) {
                    literal_key_listed |= object.key == request.source.key;
                    continue;
                }
            }
            matched = true;
            let relative = object
                .key
                .strip_prefix(prefix)
                .and_then(|_| object.key.get(base.len()..))
                .map(str::to_owned);
            if let Some(filter) = relative
                .as_deref()
                .and_then(|relative| excluded_by(&request.filters, relative))
            {
                if request.dry_run {
                    let source = format!("s3://{}/{}", request.source.bucket, object.key);
                    reporter.previewed(Preview::Excluded {
                        source: &source,
                        filter,
                    });
                }
                continue;
            }
            // An unsafe key fails at once, so it can never pass for one side of a collision.
            let unsafe_reason = match (&relative, &request.destination) {
                (None, _) => Some("it is not under the listed prefix".to_owned()),
                (Some(relative), Landing::Path(_)) => relative_path(relative).err(),
                // A prefix never lists for stdout: that is refused before listing. Any key
                // can be a key.
                (
                    Some(_),
                    Landing::Discard | Landing::Stdout | Landing::Store { .. } | Landing::Delete,
                ) => None,
            };
            let refusal = unsafe_reason.map(|reason| Error::UnsafeKey {
                key: object.key.clone(),
                reason,
            });
            let job = Job {
                source: ObjectUrl::S3(S3Url {
                    bucket: request.source.bucket.clone(),
                    key: object.key,
                }),
                known: Some(Known {
                    size: object.size,
                    validator: object.etag.map(Validator::ETag),
                    modified: object.last_modified.map(SystemTime::from),
                }),
                target: Target::Discard,
            };
            if let Some(error) = refusal {
                if queue.send(refuse(&job, error)).await.is_err() {
                    return Ok(());
                }
                continue;
            }
            let relative = relative.unwrap_or_default();
            // Keys deleted, or copied to keys, cannot collide as files and folders do: no guard.
            if request.destination == Landing::Delete {
                reporter.object_queued(Some(object.size));
                let ObjectUrl::S3(url) = job.source else {
                    continue;
                };
                if queue.send(Planned::Delete(url)).await.is_err() {
                    return Ok(());
                }
                continue;
            }
            if let Landing::Store { url, options } = &request.destination {
                let copy = store_copy(&job, url, &relative, options);
                reporter.object_queued(Some(object.size));
                if queue.send(copy).await.is_err() {
                    return Ok(());
                }
                continue;
            }
            let root = request.destination.root();
            for verdict in guard.push(relative.clone(), (relative, job)) {
                if !send_verdict(queue, verdict, base, root, reporter).await {
                    return Ok(());
                }
            }
        }
    }
    for verdict in guard.finish() {
        if !send_verdict(queue, verdict, base, request.destination.root(), reporter).await {
            return Ok(());
        }
    }
    // One range of a prefix (a task's share on a cluster) may hold nothing; the prefix
    // as a whole is what a user named.
    if !matched && request.bounds == KeyBounds::default() {
        let failure = nothing_matched(request, prefix, literal_key_listed);
        let _ = queue.send(Planned::Refused(failure)).await;
    }
    Ok(())
}

/// The failure of a prefix or pattern under which nothing was listed: it names what was
/// asked for and what was looked at.
fn nothing_matched(request: &StoreCopy, prefix: &str, literal_key_listed: bool) -> Failure {
    let bucket = &request.source.bucket;
    let (what, detail) = match &request.pattern {
        Some(pattern) if literal_key_listed => (
            format!("s3://{bucket}/{pattern}"),
            "no key matches this wildcard pattern, but a key of exactly this name exists; \
             add --raw to copy that key"
                .to_owned(),
        ),
        Some(pattern) => (
            format!("s3://{bucket}/{pattern}"),
            format!(
                "no key matches this wildcard pattern (every key under s3://{bucket}/{prefix} \
                 was compared); --raw takes '*', '?' and '[' literally"
            ),
        ),
        None => (
            format!("s3://{bucket}/{prefix}"),
            "no object under this prefix; check the spelling of the bucket and prefix".to_owned(),
        ),
    };
    Failure {
        source: what.clone(),
        error: Error::NothingMatched { what, detail },
    }
}

/// The copy inside the store of a listed key, to `relative` under the destination's prefix.
fn store_copy(job: &Job, url: &S3Url, relative: &str, options: &Arc<WriteOptions>) -> Planned {
    let ObjectUrl::S3(from) = &job.source else {
        return refuse(job, Error::InvalidInput("only S3 keys are listed".into()));
    };
    let prefix = match url.key.as_str() {
        "" => String::new(),
        key if key.ends_with('/') => key.to_owned(),
        key => format!("{key}/"),
    };
    let known = job
        .known
        .as_ref()
        .map(|known| (known.size, known.validator.clone()));
    Planned::Copy(CopyJob {
        from: from.clone(),
        to: S3Url {
            bucket: url.bucket.clone(),
            key: format!("{prefix}{relative}"),
        },
        known,
        modified: job.known.as_ref().and_then(|known| known.modified),
        options: options.clone(),
    })
}

/// Queue one decided key; false when the downloads have stopped listening.
async fn send_verdict(
    queue: &mpsc::Sender<Planned>,
    verdict: Verdict<(String, Job)>,
    prefix: &str,
    root: Option<&std::path::Path>,
    reporter: &dyn Reporter,
) -> bool {
    let planned = match verdict {
        Verdict::Collides {
            item: (relative, job),
            other,
        } => {
            let key = format!("{prefix}{relative}");
            // The shorter key is the one that wants to be a file where the other needs a directory.
            let path = if relative.len() < other.len() {
                relative
            } else {
                other.clone()
            };
            let collision = Error::Collision {
                key,
                other: format!("{prefix}{other}"),
                path,
            };
            refuse(&job, collision)
        }
        Verdict::Clear((relative, mut job)) => match root {
            // Discarded (a prefix never plans for stdout: refused before listing).
            None => Planned::Job(job),
            Some(root) => match relative_path(&relative) {
                Ok(path) => match linked_directory(root, &path) {
                    None => {
                        job.target = Target::File(FilePath::below(root, &path));
                        Planned::Job(job)
                    }
                    Some(link) => {
                        let reason = format!(
                            "'{}' in the destination is a symbolic link, and parabyte never writes through links",
                            link.display()
                        );
                        refuse(
                            &job,
                            Error::UnsafeKey {
                                key: format!("{prefix}{relative}"),
                                reason,
                            },
                        )
                    }
                },
                Err(reason) => refuse(
                    &job,
                    Error::UnsafeKey {
                        key: format!("{prefix}{relative}"),
                        reason,
                    },
                ),
            },
        },
    };
    if let Planned::Job(job) = &planned {
        reporter.object_queued(job.known.as_ref().map(|k| k.size));
    }
    queue.send(planned).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    use crate::pattern::{has_wildcard, Filter, Pattern};
    use crate::report::Silent;
    use crate::source::listing::{KeyBounds, ObjectEntry};
    fn object(key: &str, size: u64) -> Listed {
        Listed::Object(ObjectEntry {
            key: key.to_owned(),
            size,
            etag: Some("\"e\"".to_owned()),
            last_modified: None,
            storage_class: None,
        })
    }

    /// Plan a synthetic listing under `prefix/` into `/dest`; returns (key -> path) and failures.
    async fn plan_keys(pages: Vec<Vec<Listed>>) -> (Vec<(String, PathBuf)>, Vec<Failure>) {
        let (planned, listing) = plan_pages(pages.into_iter().map(Ok).collect()).await;
        listing.unwrap();
        planned
    }

    /// The same, for pages that may fail; also returns how the listing ended.
    async fn plan_pages(
        pages: Vec<Result<Vec<Listed>>>,
    ) -> ((Vec<(String, PathBuf)>, Vec<Failure>), Result<()>) {
        plan_request_pages("prefix/", Vec::new(), pages).await
    }

    /// Plan `pages` as listed for the source key `key` (a prefix, or a pattern when it has
    /// wildcards) with `filters`.
    async fn plan_request_pages(
        key: &str,
        filters: Vec<Filter>,
        pages: Vec<Result<Vec<Listed>>>,
    ) -> ((Vec<(String, PathBuf)>, Vec<Failure>), Result<()>) {
        let request = StoreCopy {
            source: S3Url {
                bucket: "b".into(),
                key: key.into(),
            },
            destination: Landing::Path("/dest".into()),
            recursive: false,
            pattern: has_wildcard(key).then(|| Pattern::new(key).unwrap()),
            filters,
            dry_run: false,
            bounds: KeyBounds::default(),
        };
        let prefix = list_prefix(&request);
        let (queue, mut planned) = mpsc::channel(100);
        let listing = futures::stream::iter(pages);
        let ended = plan_listing(listing, &request, &prefix, &queue, &Silent).await;
        drop(queue);
        let (mut jobs, mut failures) = (Vec::new(), Vec::new());
        while let Some(item) = planned.recv().await {
            match item {
                Planned::Job(Job {
                    source,
                    target: Target::File(path),
                    ..
                }) => jobs.push((source.to_string(), path.to_path_buf())),
                Planned::Refused(failure) => failures.push(failure),
                other => panic!("{other:?} is not a job of a listing to files"),
            }
        }
        ((jobs, failures), ended)
    }

    #[tokio::test]
    async fn keys_listed_before_a_failed_page_are_all_planned() {
        let broken = Error::BadListing {
            bucket: "b".into(),
            prefix: "prefix/".into(),
            detail: "page 2 failed".into(),
        };
        // `prefix/a` is held back until a key shows it is no folder: page 2 never comes.
        let ((jobs, failures), ended) = plan_pages(vec![
            Ok(vec![object("prefix/0", 1), object("prefix/a", 1)]),
            Err(broken),
        ])
        .await;
        let keys: Vec<_> = jobs.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, vec!["s3://b/prefix/0", "s3://b/prefix/a"]);
        assert!(failures.is_empty());
        assert!(matches!(ended, Err(Error::BadListing { .. })));
    }

    #[tokio::test]
    async fn a_key_outside_the_prefix_is_refused_not_sliced() {
        let (jobs, failures) = plan_keys(vec![vec![
            object("elsewhere", 1),
            object("prefiü", 1),
            object("prefix/ok", 1),
        ]])
        .await;
        assert_eq!(jobs.len(), 1);
        assert_eq!(failures.len(), 2);
        assert!(
            failures[1]
                .error
                .to_string()
                .contains("not under the listed prefix"),
            "{failures:?}"
        );
    }

    #[tokio::test]
    async fn a_dot_segment_key_is_unsafe_not_a_collision() {
        let (jobs, failures) = plan_keys(vec![vec![
            object("prefix/x", 1),
            object("prefix/x/..", 1),
            object("prefix/y", 1),
        ]])
        .await;
        let keys: Vec<_> = jobs.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, vec!["s3://b/prefix/x", "s3://b/prefix/y"]);
        assert_eq!(failures.len(), 1);
        assert!(
            failures[0].error.to_string().contains("'..' path segment"),
            "{failures:?}"
        );
    }

    #[tokio::test]
    async fn unsafe_keys_fail_alone_and_the_rest_goes_on() {
        let (jobs, failures) = plan_keys(vec![
            vec![
                object("prefix/../escape", 1),
                object("prefix/a//b", 1),
                object("prefix/ok.txt", 1),
            ],
            vec![
                object("prefix//abs", 1),
                object("prefix/sub/", 0),
                object("prefix/z/./y", 1),
            ],
        ])
        .await;
        assert_eq!(
            jobs,
            vec![(
                "s3://b/prefix/ok.txt".to_owned(),
                PathBuf::from("/dest/ok.txt")
            )]
        );
        let failed: Vec<_> = failures.iter().map(|f| f.source.as_str()).collect();
        assert_eq!(
            failed,
            vec![
                "s3://b/prefix/../escape",
                "s3://b/prefix/a//b",
                "s3://b/prefix//abs",
                "s3://b/prefix/z/./y"
            ]
        );
        let first = failures[0].error.to_string();
        assert!(first.contains("'..' path segment"), "{first}");
    }

    #[tokio::test]
    async fn a_key_and_a_folder_of_the_same_name_both_fail() {
        let (jobs, failures) = plan_keys(vec![
            vec![object("prefix/a.txt", 1), object("prefix/a.txt.bak", 1)],
            vec![object("prefix/a.txt/b", 1), object("prefix/c", 1)],
        ])
        .await;
        let keys: Vec<_> = jobs.iter().map(|(key, _)| key.as_str()).collect();
        assert_eq!(keys, vec!["s3://b/prefix/a.txt.bak", "s3://b/prefix/c"]);
        assert_eq!(failures.len(), 2);
        for failure in &failures {
            let error = failure.error.to_string();
            assert!(error.contains("collides with key 'prefix/a.txt"), "{error}");
            assert!(error.contains("'a.txt'"), "{error}");
        }
    }

    #[tokio::test]
    async fn a_pattern_keeps_its_matches_below_the_literal_directory() {
        let keys = vec![
            object("prefix/a.txt", 1),
            object("prefix/b/c.txt", 1),
            object("prefix/b/skip.txt", 1),
            object("prefix/d.bin", 1),
            object("prefix2/e.txt", 1),
        ];
        let filters = vec![Filter::exclude("*skip*").unwrap()];
        let ((jobs, failures), ended) =
            plan_request_pages("prefix/*.txt", filters, vec![Ok(keys)]).await;
        ended.unwrap();
        assert!(failures.is_empty(), "{failures:?}");
        let paths: Vec<_> = jobs.iter().map(|(_, path)| path.clone()).collect();
        assert_eq!(
            paths,
            vec![PathBuf::from("/dest/a.txt"), "/dest/b/c.txt".into()]
        );
        // A literal prefix without '/': the whole key is the path.
        let ((jobs, _), _) = plan_request_pages(
            "pre*/e.txt",
            Vec::new(),
            vec![Ok(vec![object("prefix2/e.txt", 1)])],
        )
        .await;
        assert_eq!(jobs[0].1, PathBuf::from("/dest/prefix2/e.txt"));
    }

    #[tokio::test]
    async fn nothing_matched_is_one_failure_naming_the_source() {
        for (key, says) in [
            ("prefix/*.gif", "no key matches this wildcard pattern"),
            ("prefix/", "no object under this prefix"),
        ] {
            let ((jobs, failures), ended) =
                plan_request_pages(key, Vec::new(), vec![Ok(vec![object("prefix/", 0)])]).await;
            ended.unwrap();
            assert!(jobs.is_empty());
            assert_eq!(failures.len(), 1, "{key}");
            assert_eq!(failures[0].source, format!("s3://b/{key}"));
            let error = failures[0].error.to_string();
            assert!(error.contains(says), "{error}");
        }
        // Filters that leave nothing are not "nothing matched": the source did match.
        let excluded = vec![Filter::exclude("*").unwrap()];
        let ((_, failures), _) =
            plan_request_pages("prefix/", excluded, vec![Ok(vec![object("prefix/a", 1)])]).await;
        assert!(failures.is_empty(), "{failures:?}");
    }
}
