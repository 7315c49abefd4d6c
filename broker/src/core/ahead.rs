//! Pages of a listing made ahead, and asked for without a credential. A listing of
//! 100,000 jobs comes in twenty pages, each asked for once the one before has come:
//! the client's request, its MUNGE credential checked, then the page made, one after
//! the other, twenty times. Once a page is sent, the next is made while the client
//! reads this one, and the client's request for it is answered at once.
//!
//! A page made ahead is the continuation of one listing: given only to the
//! connection that read the page before, for the same caller, filter and cursor,
//! within [`AHEAD_VALID_US`]; any other request from that connection (a listing
//! begun again, a change) drops it, so that a caller that waits for each answer
//! (as `bh` does) never reads, after its own change, a page made before it. At most
//! [`MAX_AHEAD`] pages are held at once; the listings past them are still followed
//! (up to [`MAX_LISTINGS`]), their pages made when asked for.
//!
//! Each page but the last carries the listing's token, 128 bits drawn from the
//! broker's random seed. The next page may be asked for with it in place of a MUNGE
//! credential ([`ClientOp::QueueMore`]): the token, the connection and the cursor
//! must all be the listing's, and the page is made for the caller and filter of the
//! first page, which was authenticated. A credential per page cost the client a
//! round trip to munged before each request, and munged a decode for the broker:
//! forty MUNGE operations for one `squeue` of 100,000 jobs.

use super::*;
use bulkhead_proto::msg::QueueFilter;
use bulkhead_proto::view::EncodedPage;

/// Listings read at once that have a page made ahead, at most (each page is at most
/// a few MiB); past them, a listing's next page is made when asked for.
pub(super) const MAX_AHEAD: usize = 4;
/// Listings read at once that the broker follows (their tokens, callers, filters and
/// cursors: a few hundred bytes each); past them, the oldest goes first, and its
/// client asks for its next page with a credential.
const MAX_LISTINGS: usize = 256;
/// How long a page made ahead is kept for its listing's next request.
pub(super) const AHEAD_VALID_US: u64 = 5_000_000;

/// The next page of one listing: to make (`page` `None`) or made.
#[derive(Debug)]
struct Next {
    peer: PeerId,
    caller: Caller,
    filter: QueueFilter,
    after: JobId,
    /// The listing's token: asks for this page without a credential.
    token: u128,
    page: Option<EncodedPage>,
    since_us: u64,
}

/// The listings' next pages.
#[derive(Debug, Default)]
pub(super) struct PagesAhead {
    next: Vec<Next>,
}

impl PagesAhead {
    /// `peer`'s listing's next page, taken out, when it is still fresh.
    fn take(&mut self, peer: &PeerId, now_us: u64) -> Option<Next> {
        let i = self.next.iter().position(|n| &n.peer == peer)?;
        let n = self.next.swap_remove(i);
        (now_us.saturating_sub(n.since_us) <= AHEAD_VALID_US).then_some(n)
    }

    /// Where `peer`'s listing's next page is, when it is fresh and these are its token
    /// and cursor.
    fn find(&self, peer: &PeerId, token: u128, after: JobId, now_us: u64) -> Option<usize> {
        self.next.iter().position(|n| {
            &n.peer == peer
                && n.token == token
                && n.after == after
                && now_us.saturating_sub(n.since_us) <= AHEAD_VALID_US
        })
    }

    /// How many listings' next pages are made and held.
    fn held(&self) -> usize {
        self.next.iter().filter(|n| n.page.is_some()).count()
    }

    /// Drops what was made or wanted for `peer`'s listing.
    pub(super) fn forget(&mut self, peer: &PeerId) {
        self.next.retain(|n| &n.peer != peer);
    }

    fn want(&mut self, next: Next) {
        self.forget(&next.peer);
        if self.next.len() >= MAX_LISTINGS
            && let Some(oldest) = (0..self.next.len()).min_by_key(|&i| self.next[i].since_us)
        {
            self.next.swap_remove(oldest);
        }
        self.next.push(next);
    }
}

impl Core {
    /// A page of a listing for `peer`, asked for with a credential: the one made ahead
    /// when it is this one, else made now; the page after it is to be made
    /// ([`Core::make_pages_ahead`]).
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
        let made = after
            .and_then(|_| self.ahead.take(peer, now_us))
            .filter(|n| &n.caller == caller && n.filter == filter && Some(n.after) == after);
        let token = match &made {
            Some(n) => n.token,
            None => self.listing_token(peer),
        };
        let page = match made.and_then(|n| n.page) {
            Some(page) => page,
            None => self.queue_page(caller, &filter, after),
        };
        self.go_on(peer, caller.clone(), filter, token, page, now_us)
    }

    /// The next page of `peer`'s listing, asked for with its token instead of a
    /// credential ([`ClientOp::QueueMore`]): made for the listing's caller and
    /// filter. Refused, with nothing said of any listing, when `peer` reads none
    /// whose token and cursor these are.
    pub fn listing_more(
        &mut self,
        peer: PeerId,
        request_id: u64,
        after: JobId,
        token: u128,
        now_us: u64,
    ) -> Effects {
        let Some(at) = self.ahead.find(&peer, token, after, now_us) else {
            tracing::debug!(
                "refused a listing's next page: no listing of that connection, token and cursor"
            );
            let e = err(
                ErrorCode::Unauthenticated,
                "no listing read on this connection goes on from there with that token (it ended, \
                 expired or was begun again): ask for the page with a credential",
            );
            return Effects::refusal(peer, request_id, e);
        };
        // Counted by the caller's rate limit; a refusal leaves the page made ahead for
        // the client's credentialed request that follows.
        let caller = self.ahead.next[at].caller.clone();
        if let Some(fx) = self.slowed(&peer, request_id, &caller, now_us) {
            return fx;
        }
        let n = self.ahead.next.swap_remove(at);
        let page = match n.page {
            Some(page) => page,
            None => self.queue_page(&n.caller, &n.filter, Some(after)),
        };
        let page = self.go_on(&peer, n.caller, n.filter, n.token, page, now_us);
        Effects {
            send: vec![Outbound::Page {
                peer,
                request_id,
                page,
            }],
            ..Default::default()
        }
    }

    /// `page` with the listing's token when a page follows it, which is to be made
    /// ([`Core::make_pages_ahead`]).
    fn go_on(
        &mut self,
        peer: &PeerId,
        caller: Caller,
        filter: QueueFilter,
        token: u128,
        mut page: EncodedPage,
        now_us: u64,
    ) -> EncodedPage {
        if let Some(after) = page.next {
            page.more = Some(token);
            self.ahead.want(Next {
                peer: peer.clone(),
                caller,
                filter,
                after,
                token,
                page: None,
                since_us: now_us,
            });
        }
        page
    }

    /// A new listing's token: 128 bits no one else can tell, from the broker's random
    /// seed ([`Core::nonce`]).
    fn listing_token(&mut self, peer: &PeerId) -> u128 {
        u128::from_le_bytes(self.nonce(b"listing", peer))
    }

    /// How many listings' next pages are made and held.
    #[cfg(test)]
    pub(super) fn ahead_pages_held(&self) -> usize {
        self.ahead.held()
    }

    /// Whether a listing's next page waits to be made (and may be held).
    pub fn pages_to_make(&self) -> bool {
        self.ahead.held() < MAX_AHEAD && self.ahead.next.iter().any(|n| n.page.is_none())
    }

    /// Makes the listings' next pages: for the shell to call once the page before
    /// each has left, so that making one overlaps the client's reading.
    pub fn make_pages_ahead(&mut self, now_us: u64) {
        self.ahead
            .next
            .retain(|n| now_us.saturating_sub(n.since_us) <= AHEAD_VALID_US);
        // At most MAX_AHEAD pages held; the listings past them are followed still,
        // their pages made when asked for.
        let room = MAX_AHEAD.saturating_sub(self.ahead.held());
        let mut next = std::mem::take(&mut self.ahead.next);
        for n in next.iter_mut().filter(|n| n.page.is_none()).take(room) {
            n.page = Some(self.queue_page(&n.caller, &n.filter, Some(n.after)));
            n.since_us = now_us;
        }
        self.ahead.next = next;
    }
}
