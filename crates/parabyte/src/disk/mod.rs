//! Where bytes land and what a later run may trust: temporary files and their commit,
//! resume marks, which keys may become paths, and local tree copies; and the files an
//! upload reads. Knows nothing of servers or of how bytes are fetched.

pub(crate) mod blocking;
pub(crate) mod content_mark;
pub(crate) mod copy;
pub(crate) mod dir;
pub(crate) mod local;
pub(crate) mod mark;
pub(crate) mod paths;
pub(crate) mod resume;
pub(crate) mod sink;
pub(crate) mod source_file;
pub(crate) mod upload_record;
