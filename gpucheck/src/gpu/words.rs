//! Reading a launch's raw buffer words, for the checks that compare them with what the
//! kernel did (ring, record cost, epochs, async ranges): the decoder's reading of the same
//! words is checked by the host tests, so these checks do not go through it.

use ikp_device::wire::{self, lane as seg};
use ikp_device::Header;
use ikp_host::cuda::HostSession;

use super::Error;
use crate::results::{Check, Status};

/// A segment's `(written, dropped)` (for a ring: present, overwritten) and whether it was
/// finalized.
pub(super) fn counts(seg_words: &[u64], cap: u32) -> (u32, u32, bool) {
    let trailer = (seg::EVENTS + cap) as usize;
    let c = seg_words[trailer + seg::T_COUNT as usize];
    (
        c as u32,
        (c >> wire::COUNT_DROPPED_SHIFT) as u32,
        seg_words[trailer + seg::T_END_GT as usize] != 0,
    )
}

/// The buffer's header, or why it does not parse.
pub(super) fn header(words: &[u64]) -> Result<Header, Vec<String>> {
    Header::parse(words).map_err(|e| vec![format!("the buffer's header does not parse: {e}")])
}

/// The session's buffer words after its launch.
pub(super) fn read(session: &mut HostSession) -> Result<Vec<u64>, Error> {
    session
        .read_back()
        .map(<[u64]>::to_vec)
        .map_err(|e| e.to_string())
}

/// Pass with `pass` when nothing is `bad`, else fail naming every difference.
pub(super) fn verdict(name: &str, bad: Vec<String>, pass: String) -> Check {
    let detail = if bad.is_empty() { pass } else { bad.join("; ") };
    Check::new(name, Status::of(bad.is_empty()), true, detail)
}
