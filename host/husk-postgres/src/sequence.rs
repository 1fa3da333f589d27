//! Outcome `seq`s: the outcome stream's cursor, which must never skip an
//! outcome that commits late.
//!
//! Transactions that end jobs draw their outcomes' `seq`s from a sequence
//! (`husk_outcome_seq`), which is not transactional: a transaction may draw
//! 10, another 11 and commit first. A reader that returned 11 and moved its
//! cursor past it would never see 10. A counter row locked until commit
//! prevents that, but it also serializes every such commit through its WAL
//! flush — no two can share a flush. Instead, each writer marks itself
//! before drawing: `husk_next_seqs(n)` takes a shared advisory lock keyed by
//! the highest seq drawn so far (tagged with the deployment's schema), then
//! draws `n` seqs, all above that mark; the lock is released when the
//! transaction ends, after its rows are visible. A reader first asks
//! `husk_seq_committed()` — the highest seq drawn, read first, lowered to
//! the lowest mark still held — and then, in a later statement (a snapshot
//! taken after), reads only outcomes at or below it. Every seq at or below
//! that bound belongs to a transaction that had ended before the bound was
//! computed: committed and visible, or rolled back (a gap). The functions
//! are in migration 4 (`crate::migrations`).

use crate::pool::Tx;

/// The highest seq at or below which every outcome is committed or never
/// will be (see the module docs). Read it in a statement of its own, before
/// reading outcomes.
pub(crate) fn committed(tx: &mut Tx<'_>) -> Result<i64, postgres::Error> {
    Ok(tx.query_one("SELECT husk_seq_committed()", &[])?.get(0))
}
