//! The run queue: enqueue, claim, start, park and wake, finalize with retries, cancel, leases,
//! continue-as-new, the boot sweep, tree queries, and the session status mirror.

use seed_agents_store::cbor::Cbor;
use seed_agents_store::payload::*;
use seed_agents_store::runs::*;
use seed_agents_store::schema::runs::{Kind, Queue, Status};
use seed_agents_store::schema::sessions;
use seed_agents_store::Error;
use support::execution::*;

fn no_caps() -> ClaimLimits {
    ClaimLimits::default()
}

mod accounts_listing;
mod enqueue_claim;
mod finalize;
mod lifecycle;
mod park_wake;
