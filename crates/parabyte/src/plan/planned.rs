//! What a planner queues for the engine: a job, or an object refused on its own.

use crate::disk::local::LocalJob;
use crate::error::Error;
use crate::report::Failure;
use crate::transfer::engine::Job;

/// One planned item: an object to fetch, a local file to copy, or one that cannot be.
#[derive(Debug)]
pub(crate) enum Planned {
    Job(Job),
    Local(LocalJob),
    Refused(Failure),
}

pub(super) fn refuse(job: &Job, error: Error) -> Planned {
    Planned::Refused(Failure {
        source: job.source.to_string(),
        error,
    })
}
