//! Pages of a listing made ahead. A listing of 100,000 jobs comes in twenty pages,
//! each asked for once the one before has come: the client's request, its MUNGE
//! credential checked, then the page made, one after the other, twenty times. Once
//! a page is sent, the next is made while the client reads this one, and the
//! client's request for it is answered at once.
//!
//! A page made ahead is the continuation of one listing: given only to the
//! connection that read the page before, for the same caller, filter and cursor,
//! within [`AHEAD_VALID_US`]; any other request from that connection (a listing
//! begun again, a change) drops it, so that a caller never reads, after its own
//! change, a page made before it.

use super::*;
use bulkhead_proto::msg::QueueFilter;
use bulkhead_proto::view::EncodedPage;

/// Listings read at once that have a page made ahead, at most (each page is at most
/// a few MiB); the oldest goes first.
const MAX_AHEAD: usize = 4;
/// How long a page made ahead is kept for its listing's next request.
pub(super) const AHEAD_VALID_US: u64 = 5_000_000;

/// The next page of one listing: to make (`page` `None`) or made.
#[derive(Debug)]
struct Next {
    peer: PeerId,
    caller: Caller,
    filter: QueueFilter,
    after: JobId,
    page: Option<EncodedPage>,
    since_us: u64,
}

/// The listings' next pages.
#[derive(Debug, Default)]
pub(super) struct PagesAhead {
    next: Vec<Next>,
}

impl PagesAhead {
    /// The page made ahead for this request, if it is the one the request asks for.
    fn take(
        &mut self,
        peer: &PeerId,
        caller: &Caller,
        filter: &QueueFilter,
        after: JobId,
        now_us: u64,
    ) -> Option<EncodedPage> {
        let i = self.next.iter().position(|n| &n.peer == peer)?;
        let n = self.next.swap_remove(i);
        let fresh = now_us.saturating_sub(n.since_us) <= AHEAD_VALID_US;
        (fresh && &n.caller == caller && &n.filter == filter && n.after == after)
            .then_some(n.page)
            .flatten()
    }

    /// Drops what was made or wanted for `peer`'s listing.
    pub(super) fn forget(&mut self, peer: &PeerId) {
        self.next.retain(|n| &n.peer != peer);
    }

    fn want(&mut self, next: Next) {
        self.forget(&next.peer);
        if self.next.len() >= MAX_AHEAD
            && let Some(oldest) = (0..self.next.len()).min_by_key(|&i| self.next[i].since_us)
        {
            self.next.swap_remove(oldest);
        }
        self.next.push(next);
    }
}

impl Core {
    /// A page of a listing for `peer`: the one made ahead when it is this one, else
    /// made now; the page after it is to be made ([`Core::make_pages_ahead`]).
    pub(super) fn listing_page(
        &mut self,
        peer: &PeerId,
        caller: &Caller,
        filter: QueueFilter,
        after: Option<JobId>,
        now_us: u64,
    ) -> EncodedPage {
        // A listing begun again has already dropped its page made ahead
        // ([`Core::client`] does for any request but a listing's next page).
        let made = after.and_then(|a| self.ahead.take(peer, caller, &filter, a, now_us));
        let page = made.unwrap_or_else(|| self.queue_page(caller, &filter, after));
        if let Some(after) = page.next {
            self.ahead.want(Next {
                peer: peer.clone(),
                caller: caller.clone(),
                filter,
                after,
                page: None,
                since_us: now_us,
            });
        }
        page
    }

    /// Whether a listing's next page waits to be made.
    pub fn pages_to_make(&self) -> bool {
        self.ahead.next.iter().any(|n| n.page.is_none())
    }

    /// Makes the listings' next pages: for the shell to call once the page before
    /// each has left, so that making one overlaps the client's reading.
    pub fn make_pages_ahead(&mut self, now_us: u64) {
        let mut next = std::mem::take(&mut self.ahead.next);
        next.retain(|n| now_us.saturating_sub(n.since_us) <= AHEAD_VALID_US);
        for n in next.iter_mut().filter(|n| n.page.is_none()) {
            n.page = Some(self.queue_page(&n.caller, &n.filter, Some(n.after)));
            n.since_us = now_us;
        }
        self.ahead.next = next;
    }
}
