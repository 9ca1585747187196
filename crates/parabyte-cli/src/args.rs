//! Command-line flags. They fill the library's config structs and nothing else, so the CLI
//! and the Python binding share one meaning for every option.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::{ArgMatches, Args, Parser, Subcommand};
use parabyte::{parse_size, parse_timeout, RetryPolicy, SourceStore, StoreConfig, TransferConfig};

#[derive(Debug, Parser)]
#[command(
    name = "parabyte",
    version,
    about = "parabyte downloads, uploads, copies, syncs and deletes objects, fast and checked: \
        S3-compatible stores, web servers and local disks",
    long_about = "parabyte downloads, uploads, copies, syncs and deletes objects, fast and \
        checked: S3-compatible stores, web servers and local disks.\n\n\
        Credentials, region and endpoint come from the standard AWS chain (environment, \
        ~/.aws/credentials and ~/.aws/config, container and instance roles).\n\n\
        Exit status: 0 all objects arrived, 1 some objects failed (listed at the end) or \
        a prefix or pattern matched nothing (a warning names it), 2 usage or fatal error."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Print each request on stderr as it completes: method, URL (secrets redacted), range,
    /// status and time taken. Turns the progress bar off.
    // Not global: `command()` gives it to each subcommand that sends requests, so
    // `completions` does not list it.
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Download, upload, or copy inside the store: an object, a prefix, a URL, a file or a
    /// directory, or a manifest's worth.
    // Written out: clap's own usage line lists options given through the environment
    // (AWS_ENDPOINT_URL, AWS_REGION) as if they were required.
    #[command(
        override_usage = "parabyte cp [OPTIONS] <SOURCE> <DESTINATION>\n       \
        parabyte cp [OPTIONS] --manifest <FILE> <DESTINATION>"
    )]
    #[command(after_help = "Examples:\n  \
        parabyte cp s3://bucket/model.bin ./model.bin\n  \
        parabyte cp s3://bucket/dataset/ ./data\n  \
        parabyte cp 's3://bucket/imgs/*.jpg' ./jpgs/   # wildcards: * ? [a-z] (quote them)\n  \
        parabyte cp --exclude '*' --include '*.json' s3://bucket/logs/ ./logs\n  \
        parabyte cp --dryrun s3://bucket/dataset/ ./data   # what would be copied; no GET\n  \
        parabyte cp https://example.com/big.iso ./big.iso   # parallel ranges, no HEAD\n  \
        parabyte cp --manifest files.txt ./data\n  \
        parabyte cp --manifest uploads.txt s3://bucket/in/   # local files, objects and URLs to S3\n  \
        parabyte cp -r ./results s3://bucket/results/   # upload a tree, CRC64NVME end to end\n  \
        tar c dir | parabyte cp - s3://bucket/dir.tar   # standard input, multipart as it streams\n  \
        parabyte cp -r s3://bucket/a/ s3://bucket/b/   # copy inside the store, no byte through here\n  \
        parabyte cp /data/src /data/dst   # local tree: files in parallel, links skipped\n  \
        parabyte cp s3://bucket/log.gz - | zcat   # '-': one object to standard output\n  \
        parabyte cp --discard --json s3://bucket/big.bin   # measure throughput, write nothing\n\n\
        A re-run skips what an earlier run left complete at the same version and resumes what\n\
        it left unfinished from the bytes it kept (--force fetches everything again); an\n\
        interrupted upload is resumed by the same command, sending only the missing parts.\n\n\
        Wildcards: '*' matches any run of characters, '/' included ('**' is the same), '?'\n\
        one character, [abc] [a-z] [!a-z] one of a set. The longest literal prefix is listed\n\
        and each key that matches lands at its path after that prefix's last '/'. A key or\n\
        file name that contains these characters: --raw, or [*] [?] [[] in a pattern.\n\
        Filters (--exclude, --include; repeatable): matched against the path below the source;\n\
        everything is included, then the last filter that matches decides.\n\n\
        Manifest (--manifest FILE, or - for stdin): one source per line, SOURCE [DEST_PATH] [SIZE] [ETAG],\n\
        separated by spaces, or by tabs when a path has spaces; '-' leaves a field out.\n\
        Lines starting with '#' are comments. A line may also be JSON:\n  \
        {\"source\": \"s3://b/k\", \"dest\": \"dir/k\", \"size\": 1024, \"etag\": \"...\"}\n\
        Lines of `parabyte ls --recursive --json` work too (the key is the destination path):\n  \
        parabyte ls -r --json s3://b/p/ | jq -c 'select(.size > 0)' | parabyte cp --manifest - ./d\n\
        SOURCE is s3://bucket/key or http(s)://host/path; DEST_PATH is relative to DEST and\n\
        may not leave it (default: the last segment of the source); SIZE in bytes skips the\n\
        first request's probing. Bad lines are reported by number and the rest is copied;\n\
        the exit status is then 1.\n\
        Into s3://bucket/prefix/, SOURCE may also be a local file (uploaded as cp FILE does:\n\
        links, FIFOs and devices refused), an object is copied inside the store and a URL\n\
        streamed into it; DEST_PATH is the key below the prefix (no '..', empty segments or\n\
        leading '/') or a whole s3://bucket/key; SIZE and ETAG are for objects only.")]
    Cp(Box<CpArgs>),
    /// Move: copy as cp does (into a directory, a file or s3://), then delete each source
    /// whose copy was compared with it (the store's checksum or MD5); one whose copy failed
    /// or could not be compared stays, reported. A move onto itself is refused.
    #[command(override_usage = "parabyte mv [OPTIONS] <SOURCE> <DESTINATION>")]
    #[command(after_help = "Examples:\n  \
        parabyte mv ./out/run-7/ s3://bucket/runs/run-7/   # upload, then remove the files\n  \
        parabyte mv -r s3://bucket/incoming/ s3://bucket/done/   # copy inside the store, then delete\n  \
        parabyte mv s3://bucket/export.csv ./export.csv")]
    Mv(Box<MvArgs>),
    /// Make the destination hold what the source holds: send each object missing or
    /// changed there (by default: another size, or a newer source, as aws s3 sync), and
    /// with --delete remove what the source lacks.
    #[command(override_usage = "parabyte sync [OPTIONS] <SOURCE> <DESTINATION>")]
    #[command(after_help = "Examples:\n  \
        parabyte sync s3://bucket/dataset/ ./data   # download what is new or changed\n  \
        parabyte sync ./results s3://bucket/results/   # upload what is new or changed\n  \
        parabyte sync --delete s3://bucket/a/ s3://bucket/b/   # copy inside the store; b ends as a\n  \
        parabyte sync --checksum ./models s3://bucket/models/   # compare contents, not times\n  \
        parabyte sync --delete --dryrun ./site s3://bucket/www/   # what would be sent and deleted\n\n\
        Both sides are listed in key order and compared as the listings arrive: memory stays flat\n\
        and the first difference is sent at once. --delete deletes nothing when either listing\n\
        failed or broke off, when anything in the source was refused or could not be read, or\n\
        when the source holds nothing (--delete-if-source-empty empties the destination then);\n\
        --max-delete N deletes nothing when more than N would go. Filters leave keys out on both sides: an excluded key is\n\
        neither sent nor deleted. --checksum compares CRC64NVME: a file parabyte downloaded by\n\
        its mark, any other file read once (the CRC is kept with it for the next run), an object\n\
        by the checksum the store keeps (one HEAD, only for keys of equal size).")]
    Sync(Box<SyncArgs>),
    /// List objects and "folders" under a prefix, or the buckets.
    // `-h` is --human-readable, as in `aws s3 ls -h`; help is --help alone.
    #[command(
        override_usage = "parabyte ls [OPTIONS] [s3://bucket/prefix]",
        disable_help_flag = true
    )]
    Ls(LsArgs),
    /// How many objects and bytes are under a prefix or match a pattern (as s5cmd's du).
    // `-h` is --human-readable, as in du everywhere; help is --help alone.
    #[command(
        override_usage = "parabyte du [OPTIONS] <s3://bucket/prefix>",
        disable_help_flag = true
    )]
    #[command(after_help = "Examples:\n  \
        parabyte du s3://bucket/dataset/\n  \
        parabyte du -h --group 's3://bucket/logs/*.gz'   # per storage class, in KiB/MiB/GiB")]
    Du(DuArgs),
    /// What the store keeps about one object: size, ETag, time, type, storage class, stored
    /// checksum, metadata (one HEAD).
    #[command(override_usage = "parabyte stat [OPTIONS] <s3://bucket/key>")]
    Stat(StatArgs),
    /// Delete one key, or with -r every key under a prefix (or every key matching a
    /// pattern) that the filters keep, up to 1,000 a request (DeleteObjects). Without -r,
    /// `s3://bucket/dir/` is the one key `dir/`: a key that is not there fails (exit 1), and
    /// so does one with keys under it, which are left alone. Each deleted key is named on
    /// stderr (`delete: s3://...`) unless --quiet.
    #[command(override_usage = "parabyte rm [OPTIONS] <s3://bucket/key or prefix/>")]
    #[command(after_help = "Examples:\n  \
        parabyte rm s3://bucket/old.bin\n  \
        parabyte rm -r s3://bucket/tmp/   # every key under tmp/\n  \
        parabyte rm --dryrun 's3://bucket/logs/*.gz'   # what would be deleted; nothing is\n  \
        parabyte rm -r --exclude '*' --include '*.tmp' s3://bucket/data/")]
    Rm(RmArgs),
    /// Make a bucket (CreateBucket), in the region requests are signed for (--region).
    #[command(override_usage = "parabyte mb [OPTIONS] <s3://bucket>")]
    #[command(after_help = "Examples:\n  \
        parabyte mb s3://bucket\n  \
        parabyte mb --region eu-west-1 s3://bucket")]
    Mb(MakeBucketArgs),
    /// Remove a bucket (DeleteBucket). One that holds objects is refused and kept, unless
    /// --force: then every object is deleted first (1,000 a request), and the bucket after.
    #[command(override_usage = "parabyte rb [OPTIONS] <s3://bucket>")]
    #[command(after_help = "Examples:\n  \
        parabyte rb s3://bucket   # an empty bucket\n  \
        parabyte rb --force s3://bucket   # every object, then the bucket\n\n\
        With --force the whole bucket is listed before anything is deleted: a listing that \
        fails\nor breaks off deletes nothing (exit 1), and a delete that fails keeps the \
        bucket (exit 1).")]
    Rb(RemoveBucketArgs),
    /// Write one object's bytes to standard output, as `cp SOURCE -` does, or those of
    /// every object a quoted wildcard matches, one after another in key order; printing
    /// nothing else but errors.
    #[command(override_usage = "parabyte cat [OPTIONS] <SOURCE>")]
    #[command(after_help = "Examples:\n  \
        parabyte cat s3://bucket/config.json | jq .\n  \
        parabyte cat 's3://bucket/logs/2026-*.txt' | grep ERROR   # the matches, in key order\n  \
        parabyte cat https://example.com/big.iso | sha256sum\n\n\
        A failed object stops cat there (exit 1): what follows would read as its rest. A reader\n\
        that goes away (| head) ends cat quietly with exit status 141, as a shell reports a\n\
        cat that SIGPIPE ended.")]
    Cat(Box<CatArgs>),
    /// Print a shell completion script.
    #[command(after_help = "Examples:\n  \
        parabyte completions bash > ~/.local/share/bash-completion/completions/parabyte\n  \
        parabyte completions zsh > ~/.zfunc/_parabyte   # with fpath+=~/.zfunc in ~/.zshrc\n  \
        parabyte completions fish > ~/.config/fish/completions/parabyte.fish")]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The multipart uploads begun under a prefix and never completed or aborted: list
    /// them, or abort them. An interrupted upload is kept for the same command to resume;
    /// until it is completed or aborted its parts are stored (and, on AWS, billed).
    #[command(after_help = "Examples:\n  \
        parabyte uploads ls s3://bucket/   # every unfinished upload of the bucket\n  \
        parabyte uploads abort s3://bucket/big.bin   # those of keys starting with big.bin\n  \
        parabyte uploads abort --dryrun s3://bucket/tmp/   # what would be aborted")]
    Uploads(UploadsArgs),
}

#[derive(Debug, Args)]
pub struct UploadsArgs {
    #[command(subcommand)]
    pub action: UploadsAction,
}

#[derive(Debug, Subcommand)]
pub enum UploadsAction {
    /// List the unfinished uploads of keys starting with the prefix: the time each was
    /// begun, its key and its upload ID.
    #[command(override_usage = "parabyte uploads ls [OPTIONS] <s3://bucket/prefix>")]
    Ls(UploadsListArgs),
    /// Abort the unfinished uploads of keys starting with the prefix (or the one named by
    /// --upload-id): the store throws their parts away. Each is named on stderr.
    #[command(override_usage = "parabyte uploads abort [OPTIONS] <s3://bucket/prefix>")]
    Abort(UploadsAbortArgs),
}

#[derive(Debug, Args)]
pub struct UploadsListArgs {
    /// s3://bucket/ or s3://bucket/prefix (keys that start with it).
    pub url: String,
    /// One JSON object per upload on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct UploadsAbortArgs {
    /// s3://bucket/ or s3://bucket/prefix (keys that start with it).
    pub url: String,
    /// Only the upload with this ID.
    #[arg(long, value_name = "ID")]
    pub upload_id: Option<String>,
    /// Name what would be aborted; abort nothing.
    #[arg(long)]
    pub dryrun: bool,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct DuArgs {
    /// s3://bucket/prefix to total (everything below it), or a quoted wildcard
    /// ('s3://b/logs/*.gz': the keys that match).
    pub url: String,
    /// One line per storage class.
    #[arg(short, long)]
    pub group: bool,
    /// Sizes in KiB, MiB, GiB... as `aws s3 ls --human-readable` prints them (`-H`,
    /// `--humanize` as in s5cmd).
    #[arg(short = 'h', long, short_alias = 'H', alias = "humanize")]
    pub human_readable: bool,
    /// One JSON object per line on stdout: url, objects, bytes (and storage_class).
    #[arg(long)]
    pub json: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    #[command(flatten)]
    pub listing: ListingArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct StatArgs {
    /// s3://bucket/key.
    pub url: String,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// s3://bucket/prefix/ or a local directory.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// A local directory or s3://bucket/prefix/ (one side must be s3://).
    #[arg(value_name = "DESTINATION")]
    pub destination: PathBuf,
    #[command(flatten)]
    pub selection: SelectionArgs,
    #[command(flatten)]
    pub rules: SyncRuleArgs,
    #[command(flatten)]
    pub upload: UploadArgs,
    #[command(flatten)]
    pub transfer: TransferArgs,
    #[command(flatten)]
    pub listing: ListingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "What counts as changed, and deleting")]
pub struct SyncRuleArgs {
    /// Delete from the destination what the source lacks (not what the filters leave out):
    /// nothing at all when a listing broke off, anything in the source was refused or could
    /// not be read, or the source holds nothing.
    #[arg(long)]
    pub delete: bool,
    /// With --delete: when more than N objects would be deleted, delete none and fail.
    #[arg(long, value_name = "N", requires = "delete")]
    pub max_delete: Option<u64>,
    /// With --delete: a source that holds nothing empties the destination (without it, an
    /// empty or mistyped source deletes nothing and the run fails).
    #[arg(long, requires = "delete")]
    pub delete_if_source_empty: bool,
    /// Send an object only when its size differs.
    #[arg(long, conflicts_with_all = ["exact_timestamps", "checksum"])]
    pub size_only: bool,
    /// Downloads: send an object of the same size unless its time matches to the second.
    #[arg(long, conflicts_with = "checksum")]
    pub exact_timestamps: bool,
    /// Send an object of the same size only when its contents differ (CRC64NVME).
    #[arg(long)]
    pub checksum: bool,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// s3://bucket/key, s3://bucket/prefix/ (with -r: everything under it) or a wildcard
    /// pattern.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// Delete every key under the source as a prefix ('dir' means 'dir/').
    #[arg(short, long, help_heading = "What to delete")]
    pub recursive: bool,
    #[command(flatten)]
    pub selection: SelectionArgs,
    #[command(flatten)]
    pub transfer: DeleteArgs,
    #[command(flatten)]
    pub listing: ListingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, Args)]
pub struct MakeBucketArgs {
    /// s3://bucket: the bucket to make.
    #[arg(value_name = "s3://bucket")]
    pub url: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct RemoveBucketArgs {
    /// s3://bucket: the bucket to remove.
    #[arg(value_name = "s3://bucket")]
    pub url: String,
    /// Delete every object in the bucket first (each named on stderr), then the bucket.
    #[arg(long)]
    pub force: bool,
    /// Print nothing but errors (no `delete:` line either).
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct CatArgs {
    /// s3://bucket/key, a quoted wildcard ('s3://bucket/logs/*.txt': every key that
    /// matches, in key order) or an http(s):// URL.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    #[command(flatten)]
    pub transfer: CatTransferArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `mv`: `cp`'s options less those a move cannot take (a manifest, standard output,
/// --discard, another store to read from, a cluster).
#[derive(Debug, Args)]
pub struct MvArgs {
    /// Source: s3://bucket/key, s3://bucket/prefix/ for everything under it, or a local
    /// file or directory; each source is deleted once its copy arrived and was compared.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// Destination file or directory (a directory when it exists or ends in '/'), or
    /// s3://bucket/key (s3://bucket/prefix/ for a tree, or to keep the file's name).
    #[arg(value_name = "DESTINATION")]
    pub destination: PathBuf,
    /// Take everything under the source as a prefix, even without a trailing '/'.
    #[arg(short, long, help_heading = "What to move")]
    pub recursive: bool,
    #[command(flatten)]
    pub selection: SelectionArgs,
    #[command(flatten)]
    pub upload: UploadArgs,
    #[command(flatten)]
    pub transfer: TransferArgs,
    #[command(flatten)]
    pub listing: ListingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

impl From<MvArgs> for CpArgs {
    fn from(args: MvArgs) -> CpArgs {
        CpArgs {
            source: Some(args.source),
            destination: Some(args.destination),
            manifest: None,
            recursive: args.recursive,
            selection: args.selection,
            discard: false,
            upload: args.upload,
            transfer: args.transfer,
            listing: args.listing,
            output: args.output,
            store: args.store,
            source_store: SourceStoreArgs::default(),
            cluster: args.cluster,
            dask_split_bytes: None,
        }
    }
}

#[derive(Debug, Args)]
pub struct CpArgs {
    /// Source: s3://bucket/key, s3://bucket/prefix/ for everything under it, an http(s)://
    /// URL, or a local file or directory (its contents are copied; symbolic links are
    /// reported and skipped, never followed). With --manifest, this is the destination.
    #[arg(value_name = "SOURCE", required_unless_present = "manifest")]
    pub source: Option<String>,
    /// Destination file or directory (a directory when it exists or ends in '/'); '-'
    /// writes one object to standard output; s3://bucket/key (or s3://bucket/prefix/ for
    /// a tree, or to keep the file's name) uploads a local source.
    #[arg(required_unless_present_any = ["discard", "manifest"])]
    pub destination: Option<PathBuf>,
    /// Copy every source listed in FILE ('-': standard input; format below) into the
    /// destination directory or s3:// prefix.
    #[arg(long, value_name = "FILE", help_heading = "What to copy")]
    pub manifest: Option<PathBuf>,
    /// Take everything under the source as a prefix, even without a trailing '/'.
    #[arg(short, long, help_heading = "What to copy")]
    pub recursive: bool,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Fetch everything but write nothing: measures the store and network, not the disk.
    #[arg(long, conflicts_with = "destination", help_heading = "Where to")]
    pub discard: bool,
    #[command(flatten)]
    pub upload: UploadArgs,
    #[command(flatten)]
    pub transfer: TransferArgs,
    #[command(flatten)]
    pub listing: ListingArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub source_store: SourceStoreArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// With --dask-scheduler and a destination every worker sees (a shared file system):
    /// objects larger than SIZE are fetched in pieces by tasks of their own, then made
    /// whole and checked by one more.
    #[arg(
        long,
        value_name = "SIZE",
        requires = "dask_scheduler",
        help_heading = "Cluster"
    )]
    pub dask_split_bytes: Option<Size>,
}

/// Running the job on a Dask cluster: `cp`, `sync`, `mv` and `rm` take the same flag.
#[derive(Debug, Args, Default)]
#[command(next_help_heading = "Cluster")]
pub struct ClusterArgs {
    /// Run the job on a Dask cluster, each worker running this engine: its scheduler's
    /// address (tcp://HOST:PORT). Runs in the `parabyte` that `pip install
    /// 'parabyte[dask]'` installs.
    #[arg(long, value_name = "ADDRESS", env = "PARABYTE_DASK_SCHEDULER")]
    pub dask_scheduler: Option<String>,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Uploads")]
pub struct UploadArgs {
    /// Local sources: read a link inside a tree as the file or folder it points to (loops
    /// are refused); by default each is passed over, said, and not a failure.
    #[arg(long, short = 'L', overrides_with = "no_follow_symlinks")]
    pub follow_symlinks: bool,
    /// The default, as aws names it: links inside a local tree are passed over.
    #[arg(long, overrides_with = "follow_symlinks")]
    pub no_follow_symlinks: bool,
    /// Never replace an object: a key that exists is skipped and reported, even when
    /// another writer stores it during the upload (a conditional write, If-None-Match).
    #[arg(long, visible_alias = "ignore-existing")]
    pub no_clobber: bool,
    /// The objects' Content-Type (default: guessed from each file's extension, as aws
    /// does; else the store's, binary/octet-stream).
    #[arg(long, value_name = "TYPE")]
    pub content_type: Option<String>,
    /// Leave Content-Type to the store when --content-type is not given.
    #[arg(long)]
    pub no_guess_mime_type: bool,
    /// The objects' Cache-Control, served back with them.
    #[arg(long, value_name = "VALUE")]
    pub cache_control: Option<String>,
    /// The objects' Content-Encoding (gzip for files already compressed so).
    #[arg(long, value_name = "VALUE")]
    pub content_encoding: Option<String>,
    /// The storage class: STANDARD, STANDARD_IA, INTELLIGENT_TIERING, GLACIER_IR, ...
    #[arg(long, value_name = "CLASS")]
    pub storage_class: Option<String>,
    /// Server-side encryption: AES256 (the store's keys) or aws:kms.
    #[arg(long, value_name = "AES256|aws:kms", value_parser = ["AES256", "aws:kms"])]
    pub sse: Option<String>,
    /// The KMS key for --sse aws:kms (its ID, ARN or alias); the store's default if absent.
    #[arg(long, value_name = "KEY")]
    pub sse_kms_key_id: Option<String>,
    /// Store NAME=VALUE as the objects' user metadata (x-amz-meta-NAME; repeatable;
    /// ASCII). The file's modification time is always kept as `mtime`.
    #[arg(long, value_name = "NAME=VALUE", value_parser = metadata_entry)]
    pub metadata: Vec<(String, String)>,
}

/// One --metadata NAME=VALUE.
fn metadata_entry(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("'{text}' is not NAME=VALUE")),
    }
}

#[derive(Debug, Args)]
#[command(next_help_heading = "What to copy")]
pub struct SelectionArgs {
    /// Leave out objects whose path below the source matches PATTERN (repeatable).
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Take back objects an earlier --exclude left out (repeatable; the last match decides).
    #[arg(long, value_name = "PATTERN")]
    pub include: Vec<String>,
    /// Take the source as written: '*', '?' and '[' are part of the key or file name.
    #[arg(long)]
    pub raw: bool,
    /// Print what would be copied and what skipped, and why; send no GET, write nothing.
    #[arg(long, visible_alias = "dry-run")]
    pub dryrun: bool,
    /// --exclude and --include in the order given (filled by `order_filters`).
    #[arg(skip)]
    pub filters: Vec<FilterArg>,
}

impl SelectionArgs {
    /// --exclude and --include as the library's filters, in the order given.
    pub fn filters(&self) -> Result<Vec<parabyte::Filter>, parabyte::Error> {
        self.filters
            .iter()
            .map(|filter| match filter.include {
                true => parabyte::Filter::include(&filter.pattern),
                false => parabyte::Filter::exclude(&filter.pattern),
            })
            .collect()
    }
}

/// One --exclude or --include as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterArg {
    pub include: bool,
    pub pattern: String,
}

/// clap keeps each flag's values apart; the AWS CLI's rule (the last matching filter wins)
/// needs --exclude and --include in the order they were given.
pub fn order_filters(cli: &mut Cli, matches: &ArgMatches) {
    let (selection, matches) = match (&mut cli.command, matches.subcommand()) {
        (Command::Cp(args), Some(("cp", matches))) => (&mut args.selection, matches),
        (Command::Mv(args), Some(("mv", matches))) => (&mut args.selection, matches),
        (Command::Rm(args), Some(("rm", matches))) => (&mut args.selection, matches),
        (Command::Sync(args), Some(("sync", matches))) => (&mut args.selection, matches),
        _ => return,
    };
    let mut given = Vec::new();
    for (id, include) in [("exclude", false), ("include", true)] {
        if let (Some(indices), Some(patterns)) =
            (matches.indices_of(id), matches.get_many::<String>(id))
        {
            given.extend(indices.zip(patterns).map(|(index, pattern)| {
                let pattern = pattern.clone();
                (index, FilterArg { include, pattern })
            }));
        }
    }
    given.sort_by_key(|(index, _)| *index);
    selection.filters = given.into_iter().map(|(_, filter)| filter).collect();
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// s3://bucket/prefix to list (names relative to its last '/', as `aws s3 ls` shows
    /// them), or a quoted wildcard ('s3://b/imgs/*.jpg': the keys that match); s3:// or
    /// nothing lists the buckets.
    pub url: Option<String>,
    /// Every key below the prefix, instead of one level with folders.
    #[arg(short, long)]
    pub recursive: bool,
    /// One JSON object per line on stdout.
    #[arg(long)]
    pub json: bool,
    /// End with the number of objects and their total size.
    #[arg(long)]
    pub summarize: bool,
    /// Sizes as `aws s3 ls --human-readable` prints them: 1 Byte, 10 Bytes, 2.6 MiB.
    #[arg(short = 'h', long)]
    pub human_readable: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    #[command(flatten)]
    pub listing: ListingArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "How fast")]
pub struct TransferArgs {
    /// Objects copied at the same time (downloaded, uploaded or copied inside the store).
    #[arg(long, value_name = "N", default_value_t = TransferConfig::default().workers)]
    pub workers: usize,
    /// Ranged requests in flight for one large object.
    #[arg(
        long,
        visible_alias = "threads",
        value_name = "N",
        default_value_t = TransferConfig::default().ranges_per_object
    )]
    pub ranges_per_object: usize,
    /// Size of an object's first ranged request (later ones grow in multiples of it, up to
    /// 64 MiB, to keep --ranges-per-object busy): bytes or e.g. 8MiB, 16M.
    #[arg(long, value_name = "SIZE", default_value_t = Size(TransferConfig::default().part_size))]
    pub part_size: Size,
    /// Requests in flight across all objects (bounds connections and memory).
    #[arg(long, value_name = "N", default_value_t = TransferConfig::default().max_requests)]
    pub max_requests: usize,
    /// A copy inside the store of an object larger than this goes in parts (UploadPartCopy,
    /// in parallel), a smaller one in one CopyObject: 5MiB to 5GiB.
    #[arg(long, value_name = "SIZE", default_value_t = Size(TransferConfig::default().copy_cutoff))]
    pub copy_cutoff: Size,
    /// Retries of a failed request before its object fails.
    #[arg(long, value_name = "N", default_value_t = RetryPolicy::default().max_retries)]
    pub retries: u32,
    /// Check sizes only: skip the content check by the store's CRC or the ETag's MD5.
    #[arg(long, help_heading = "Checking and re-runs")]
    pub no_verify: bool,
    /// Copy every object again (download, upload or copy), even those an earlier run left
    /// complete at the same version (a re-run otherwise skips those and resumes what it
    /// left unfinished).
    #[arg(long, help_heading = "Checking and re-runs")]
    pub force: bool,
    /// Pass over objects in an archive tier (GLACIER, DEEP_ARCHIVE) that are not restored,
    /// each with a skip line, instead of failing them (exit 1).
    #[arg(long, help_heading = "Checking and re-runs")]
    pub ignore_glacier_warnings: bool,
}

/// How `rm` deletes: DeleteObjects requests of up to 1,000 keys.
#[derive(Debug, Args)]
#[command(next_help_heading = "How fast")]
pub struct DeleteArgs {
    /// DeleteObjects requests (up to 1,000 keys each) in flight at the same time.
    #[arg(long, value_name = "N", default_value_t = TransferConfig::default().workers)]
    pub workers: usize,
    /// Retries of a failed request before its keys fail.
    #[arg(long, value_name = "N", default_value_t = RetryPolicy::default().max_retries)]
    pub retries: u32,
}

impl DeleteArgs {
    pub fn to_config(&self, listing: &ListingArgs) -> TransferConfig {
        TransferConfig {
            workers: self.workers,
            retry: RetryPolicy {
                max_retries: self.retries,
                ..RetryPolicy::default()
            },
            ..listing.to_config()
        }
    }
}

/// How `cat` reads: one object at a time, in ranges.
#[derive(Debug, Args)]
#[command(next_help_heading = "How fast")]
pub struct CatTransferArgs {
    /// Ranged requests in flight for one large object.
    #[arg(
        long,
        visible_alias = "threads",
        value_name = "N",
        default_value_t = TransferConfig::default().ranges_per_object
    )]
    pub ranges_per_object: usize,
    /// Size of an object's first ranged request (later ones grow in multiples of it, up to
    /// 64 MiB, to keep --ranges-per-object busy): bytes or e.g. 8MiB, 16M.
    #[arg(long, value_name = "SIZE", default_value_t = Size(TransferConfig::default().part_size))]
    pub part_size: Size,
    /// Requests in flight at most (bounds connections and memory).
    #[arg(long, value_name = "N", default_value_t = TransferConfig::default().max_requests)]
    pub max_requests: usize,
    /// Retries of a failed request before its object fails.
    #[arg(long, value_name = "N", default_value_t = RetryPolicy::default().max_retries)]
    pub retries: u32,
    /// Check sizes only: skip the content check by the store's CRC or the ETag's MD5.
    #[arg(long, help_heading = "Checking")]
    pub no_verify: bool,
}

impl CatTransferArgs {
    pub fn to_config(&self) -> TransferConfig {
        TransferConfig {
            ranges_per_object: self.ranges_per_object,
            part_size: self.part_size.0,
            max_requests: self.max_requests,
            retry: RetryPolicy {
                max_retries: self.retries,
                ..RetryPolicy::default()
            },
            verify_content: !self.no_verify,
            ..TransferConfig::default()
        }
    }
}

#[derive(Debug, Args)]
#[command(next_help_heading = "How fast")]
pub struct ListingArgs {
    /// Parts of the key space listed in parallel (1: page after page, still pipelined).
    #[arg(long, value_name = "N", default_value_t = TransferConfig::default().list_parallelism)]
    pub list_parallelism: usize,
    /// Keys per listing request (at most 1000 on S3).
    #[arg(long, value_name = "N", default_value_t = TransferConfig::default().list_page_size)]
    pub list_page_size: usize,
}

impl ListingArgs {
    pub fn to_config(&self) -> TransferConfig {
        TransferConfig {
            list_parallelism: self.list_parallelism,
            list_page_size: self.list_page_size,
            ..TransferConfig::default()
        }
    }
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Store")]
pub struct StoreArgs {
    /// S3-compatible endpoint, e.g. http://127.0.0.1:9000 (path-style addressing).
    #[arg(long, value_name = "URL", env = "AWS_ENDPOINT_URL")]
    pub endpoint_url: Option<String>,
    /// Region to sign requests for [default: from AWS_REGION or the profile, else us-east-1].
    #[arg(long, env = "AWS_REGION")]
    pub region: Option<String>,
    /// Named profile from ~/.aws/config and ~/.aws/credentials.
    #[arg(long, env = "AWS_PROFILE")]
    pub profile: Option<String>,
    /// Use https://host/bucket/key addressing with AWS too.
    #[arg(long)]
    pub path_style: bool,
    /// Send anonymous requests (public buckets); no credentials are looked up.
    #[arg(long)]
    pub no_sign_request: bool,
    /// PEM file of extra certificate authorities to trust (a private CA).
    #[arg(long, value_name = "FILE", env = "AWS_CA_BUNDLE")]
    pub ca_bundle: Option<PathBuf>,
    /// How long to wait for a connection or for the next byte before retrying: seconds, or
    /// a duration such as 5s, 500ms or 2m.
    #[arg(long, value_name = "DURATION", allow_negative_numbers = true,
          default_value_t = Seconds(StoreConfig::default().read_timeout))]
    pub timeout: Seconds,
    /// Local addresses to send from, e.g. 10.0.0.5,10.0.1.5: connections take them in
    /// turn, to use several network interfaces at once.
    #[arg(long, value_name = "ADDR[,ADDR...]", value_delimiter = ',')]
    pub bind: Vec<IpAddr>,
    /// Requester-pays buckets (many public datasets): every request says the requester
    /// pays for it, as aws's option does; `requester` is the one value.
    #[arg(long, value_name = "requester", value_parser = ["requester"])]
    pub request_payer: Option<String>,
}

/// Where an S3 source lives when it is not where the destination is: another endpoint,
/// region or account. The copy then streams through parabyte (ranged GETs feed the part
/// uploads, nothing on disk) instead of being copied inside the store.
#[derive(Debug, Args, Default)]
#[command(next_help_heading = "Store")]
pub struct SourceStoreArgs {
    /// The S3 source's endpoint, when it is not the destination's.
    #[arg(long, value_name = "URL")]
    pub source_endpoint_url: Option<String>,
    /// The region the S3 source is signed for, when it is not the destination's.
    #[arg(long, value_name = "REGION")]
    pub source_region: Option<String>,
    /// The profile whose credentials (and region) read the S3 source: another account.
    #[arg(long, value_name = "NAME")]
    pub source_profile: Option<String>,
    /// Read the S3 source anonymously (a public bucket), whatever signs the writes.
    #[arg(long)]
    pub source_no_sign_request: bool,
}

impl SourceStoreArgs {
    /// The source's store, when any flag names one apart from `destination`'s.
    pub fn to_config(&self, destination: &StoreConfig) -> Option<StoreConfig> {
        SourceStore {
            endpoint_url: self.source_endpoint_url.clone(),
            region: self.source_region.clone(),
            profile: self.source_profile.clone(),
            no_sign_request: self.source_no_sign_request,
        }
        .config(destination)
    }
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Print the summary as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Stream one JSON line per object on stdout as each finishes: source, destination,
    /// bytes, status (copied, resumed, skipped, failed, deleted), verification, error. With
    /// --json the summary follows as the last line.
    #[arg(long)]
    pub json_lines: bool,
    /// Print nothing but errors (no `delete:` line either).
    #[arg(short, long, visible_alias = "only-show-errors")]
    pub quiet: bool,
    /// Show no progress bar (it shows on a terminal otherwise); the summary still prints.
    #[arg(long)]
    pub no_progress: bool,
    /// One line per object on stderr, as aws and s5cmd print them (`upload: a to s3://b/a`,
    /// `download:`, `copy:`, `move:`, `delete:`). auto: each copy where no progress bar is
    /// drawn (stderr is not a terminal, --no-progress, -v), each move and delete always;
    /// always: each copy above the bar too; never: the summary and errors only.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub object_lines: crate::progress::ObjectLines,
}

/// A size in bytes as `--part-size` takes it (`8MiB`, `16M`, bytes), shown in `--help` the
/// way users write it, so the default lives only in `TransferConfig::default()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl FromStr for Size {
    type Err = String;

    fn from_str(text: &str) -> Result<Size, String> {
        parse_size(text).map(Size).map_err(|e| e.to_string())
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        match units
            .iter()
            .find(|(unit, _)| self.0 >= *unit && self.0 % unit == 0)
        {
            Some((unit, name)) => write!(f, "{}{name}", self.0 / unit),
            None => write!(f, "{}", self.0),
        }
    }
}

/// `--timeout`: seconds or a duration with its unit (`parabyte::parse_timeout`, the one
/// parser Python's `timeout=` goes through too), above 0 and at most a day (`inf`, `NaN`
/// or `1e30` are usage errors, not a panic), shown in `--help` from `StoreConfig::default()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seconds(pub Duration);

impl FromStr for Seconds {
    type Err = String;

    fn from_str(text: &str) -> Result<Seconds, String> {
        parse_timeout(text).map(Seconds).map_err(|e| e.to_string())
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

impl StoreArgs {
    pub fn to_config(&self) -> StoreConfig {
        let defaults = StoreConfig::from_env();
        StoreConfig {
            region: self.region.clone(),
            endpoint_url: self.endpoint_url.clone(),
            profile: self.profile.clone(),
            path_style: self.path_style,
            no_sign_request: self.no_sign_request,
            credentials: None,
            ca_bundle: self.ca_bundle.clone().or(defaults.ca_bundle.clone()),
            local_addresses: self.bind.clone(),
            request_payer: self.request_payer.is_some(),
            ..defaults
        }
        .with_timeout(self.timeout.0)
    }
}

impl Command {
    /// The most requests the command's settings let be in flight at once, for those that
    /// move or delete objects.
    pub fn requests_in_flight(&self) -> Option<usize> {
        match self {
            Command::Cp(args) => Some(args.transfer.requests_in_flight()),
            Command::Mv(args) => Some(args.transfer.requests_in_flight()),
            Command::Sync(args) => Some(args.transfer.requests_in_flight()),
            Command::Rm(args) => Some(args.transfer.workers.max(1)),
            Command::Cat(args) => Some(
                args.transfer
                    .max_requests
                    .min(args.transfer.ranges_per_object)
                    .max(1),
            ),
            _ => None,
        }
    }
}

/// The command line as parabyte reads it: clap's, from the derive above, with `-v` given
/// to each subcommand that sends requests (not `completions`) and the words of shared
/// options fitted to `rm`, which deletes what they would copy.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let cli = Cli::command();
    let verbose = cli
        .get_arguments()
        .find(|arg| arg.get_id() == "verbose")
        .cloned()
        .expect("the top level has -v");
    let names: Vec<String> = cli
        .get_subcommands()
        .map(|command| command.get_name().to_owned())
        .filter(|name| name != "completions")
        .collect();
    let mut cli = cli;
    for name in names {
        cli = cli.mut_subcommand(&name, |command| {
            let leaves: Vec<String> = command
                .get_subcommands()
                .map(|leaf| leaf.get_name().to_owned())
                .collect();
            match leaves.is_empty() {
                true => command.arg(verbose.clone()),
                false => leaves.iter().fold(command, |command, leaf| {
                    command.mut_subcommand(leaf, |leaf| leaf.arg(verbose.clone()))
                }),
            }
        });
    }
    cli.mut_subcommand("rm", |rm| {
        let heading = "What to delete";
        rm.mut_arg("exclude", |arg| arg.help_heading(heading))
            .mut_arg("include", |arg| arg.help_heading(heading))
            .mut_arg("raw", |arg| arg.help_heading(heading))
            .mut_arg("dryrun", |arg| {
                arg.help_heading(heading)
                    .help("Name each key that would be deleted; send no DELETE")
            })
            // No bar is drawn for deletes; still accepted, as before.
            .mut_arg("no_progress", |arg| arg.hide(true))
    })
    .mut_subcommand("mv", |mv| {
        let heading = "What to move";
        mv.mut_arg("exclude", |arg| arg.help_heading(heading))
            .mut_arg("include", |arg| arg.help_heading(heading))
            .mut_arg("raw", |arg| arg.help_heading(heading))
            .mut_arg("dryrun", |arg| {
                arg.help_heading(heading).help(
                    "Print what would be copied and deleted, and why; send no GET, write and \
                     delete nothing",
                )
            })
    })
}

/// Whether `-v` was given: to the subcommand (or its own subcommand), or before it.
pub fn verbose_given(matches: &ArgMatches) -> bool {
    let here = matches!(matches.try_get_one::<bool>("verbose"), Ok(Some(true)));
    here || matches
        .subcommand()
        .is_some_and(|(_, sub)| verbose_given(sub))
}

impl TransferArgs {
    /// The most requests the settings let be in flight at once.
    pub fn requests_in_flight(&self) -> usize {
        let per_object = self.workers.saturating_mul(self.ranges_per_object);
        self.max_requests.min(per_object).max(1)
    }
    pub fn to_config(&self, listing: &ListingArgs) -> TransferConfig {
        TransferConfig {
            list_parallelism: listing.list_parallelism,
            list_page_size: listing.list_page_size,
            ..self.to_config_unlisted()
        }
    }

    fn to_config_unlisted(&self) -> TransferConfig {
        TransferConfig {
            workers: self.workers,
            ranges_per_object: self.ranges_per_object,
            part_size: self.part_size.0,
            max_requests: self.max_requests,
            copy_cutoff: self.copy_cutoff.0,
            retry: RetryPolicy {
                max_retries: self.retries,
                ..RetryPolicy::default()
            },
            verify_content: !self.no_verify,
            skip_unchanged: !self.force,
            ignore_archived: self.ignore_glacier_warnings,
            ..TransferConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cp_help_groups_options_by_what_people_look_for() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let help = cli
            .find_subcommand_mut("cp")
            .expect("cp")
            .render_help()
            .to_string();
        let headings = [
            "What to copy:",
            "Where to:",
            "Uploads:",
            "How fast:",
            "Checking and re-runs:",
            "Output:",
            "Store:",
            "Cluster:",
        ];
        let at: Vec<usize> = headings
            .iter()
            .map(|heading| {
                help.find(heading)
                    .unwrap_or_else(|| panic!("{heading}\n{help}"))
            })
            .collect();
        assert!(at.windows(2).all(|pair| pair[0] < pair[1]), "{help}");
        for told in ["'-'", "A re-run skips", "resumes"] {
            assert!(help.contains(told), "{told}\n{help}");
        }
    }

    #[test]
    fn the_command_with_each_subcommands_words_is_well_formed() {
        let cli = command();
        cli.clone().debug_assert();
        let find = |name: &str| {
            cli.find_subcommand(name)
                .unwrap_or_else(|| panic!("{name}"))
                .get_arguments()
                .any(|arg| arg.get_id() == "verbose")
        };
        assert!(!find("completions"));
        assert!(find("cp") && find("rm") && find("mb"));
    }

    #[test]
    fn sizes_show_as_users_write_them_and_parse_back() {
        for (bytes, shown) in [(8 << 20, "8MiB"), (512 << 10, "512KiB"), (1536, "1536")] {
            assert_eq!(Size(bytes).to_string(), shown);
            assert_eq!(shown.parse::<Size>(), Ok(Size(bytes)));
        }
    }

    #[test]
    fn filters_keep_their_command_line_order() {
        let argv = [
            "parabyte",
            "cp",
            "--include",
            "a",
            "--exclude",
            "b",
            "s3://b/p/",
            "--include",
            "c",
            "out",
            "--exclude",
            "d",
        ];
        let matches = <Cli as clap::CommandFactory>::command().get_matches_from(argv);
        let mut cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap();
        order_filters(&mut cli, &matches);
        let Command::Cp(args) = cli.command else {
            panic!("cp parses as cp");
        };
        let order: Vec<_> = args
            .selection
            .filters
            .iter()
            .map(|f| (f.include, f.pattern.as_str()))
            .collect();
        assert_eq!(
            order,
            vec![(true, "a"), (false, "b"), (true, "c"), (false, "d")]
        );
    }

    #[test]
    fn threads_is_still_accepted_for_ranges_per_object() {
        for flag in ["--ranges-per-object", "--threads"] {
            let cli =
                Cli::try_parse_from(["parabyte", "cp", flag, "3", "s3://b/k", "out"]).unwrap();
            let Command::Cp(args) = cli.command else {
                panic!("cp parses as cp");
            };
            assert_eq!(args.transfer.ranges_per_object, 3, "{flag}");
        }
    }
}
