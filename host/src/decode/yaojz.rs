//! Decoder of yao-jz/intra-kernel-profiler's per-warp ring buffers.
//!
//! # Format
//!
//! As verified in `github.com/yao-jz/intra-kernel-profiler` (commit `b22ad76`):
//!
//! - `include/intra_kernel_profiler/trace/event.cuh`: an event is
//!   `struct alignas(16) Event { uint64_t ts; uint16_t id; uint16_t type; uint16_t block;
//!   uint16_t warp; }`, 16 bytes: `ts` the raw `%globaltimer` (ns), `id` the region,
//!   `type` 0 begin, 1 end, 2 instant (a mark), `block` `blockIdx.x` (its low 16 bits),
//!   and `warp` the warp in the block in bits 0..6 and the SM id (`%smid`) in bits 6..16.
//!   `GlobalBuffer` is two device pointers: `events` and `counters` (one `uint32_t` per
//!   warp).
//! - `include/intra_kernel_profiler/trace/device_ctx.cuh` (`WarpContext<CAP,
//!   WARPS_PER_BLOCK>`, used by lane 0 of each warp through the `IKP_TRACE_*` macros of
//!   `macros.cuh`): warp `w` of block `b` owns slot `b * WARPS_PER_BLOCK + w`, the events
//!   `slot * CAP .. (slot + 1) * CAP`; its `n`-th record (from 0) goes to index
//!   `n & (CAP - 1)` of them (`CAP` a power of two), so the ring keeps the last `CAP`
//!   records; `IKP_TRACE_CTX_FLUSH` stores the warp's record count `n` into
//!   `counters[slot]`. A warp that never flushes has a count of 0.
//! - `include/intra_kernel_profiler/trace/host_session.hpp` (`HostSession`): `init(cap,
//!   grid_x, threads_per_block)` allocates `grid_x * ceil(threads_per_block / 32)` slots
//!   of `cap` events (never cleared: unwritten events are whatever the memory held) and
//!   zeroes the counters; `write_trace` copies both back and keeps, per slot with count
//!   `n`, `min(n, cap)` events read from index `(start + i) & (cap - 1)`, `i` ascending,
//!   where `start` is `n & (cap - 1)` when `n > cap` and 0 otherwise: the last `cap`
//!   records in the order they were written. The `n - cap` older ones are lost.
//! - `docs/trace_format.md` documents only the Chrome and summary JSON `write_trace`
//!   writes, not the buffers.
//!
//! ikp keeps exactly the events `write_trace` keeps, in the same order. It then pairs
//! each warp's records in that order (as the `u64` wire formats are paired, see
//! [`super`]: a stack per lane), where `write_trace` first sorts all events by time and
//! then pairs per region; the two agree except on records with equal times (which it
//! reorders begin, instant, end) and on a timer that stepped back (which ikp clamps and
//! counts in `backward_steps`). Records of another `type` (the macros write only 0, 1,
//! 2; `write_trace` draws them as instants) are counted as unknown records. The records a
//! full ring overwrote are counted as the lane's `dropped`: ends whose begins were
//! overwritten show up as unmatched ends.
//!
//! # The dump file ikp reads
//!
//! The event buffer alone does not say how many records each warp wrote (so which slots
//! hold records and where each ring starts), nor the ring capacity or the grid: that is
//! in the counters and in the arguments of `HostSession::init`. ikp reads one file
//! holding both buffers behind a 24-byte header, all little-endian:
//!
//! ```text
//! bytes           field
//! 0..8            magic "YJZRING\0"
//! 8..12           u32 version (1)
//! 12..16          u32 per_warp_cap (the ring capacity: a power of two)
//! 16..20          u32 blocks (grid_x)
//! 20..24          u32 warps_per_block (ceil(threads_per_block / 32), at most 32)
//! 24..24+4S       u32 counters[S], S = blocks x warps_per_block
//! ..E             zero bytes, up to E: the next multiple of 16
//! E..E+16*S*cap   the events, as copied from the device
//! ```
//!
//! The file must be exactly `E + 16 * S * per_warp_cap` bytes. Its magic makes it safe
//! to detect automatically (it is neither the ikp magic, nor a plausible TVM header, nor
//! JSON text). Every record read must name the block and warp of its slot (its `block`
//! field the slot's block modulo 2^16, its warp bits the slot's warp), and all records of
//! a warp must carry the same block / warp / SM half (the recorder computes it once, at
//! `init`): a file whose `warps_per_block` differs from the kernel's `WARPS_PER_BLOCK`
//! (or that is not such a dump at all) fails, naming the first record that does not fit,
//! rather than decoding into plausible nonsense. (For blocks from 65536 on, the recorder
//! ORs the block's upper bits into that half: ikp then checks the bits the OR leaves
//! readable and records no SM for the warp.)
//!
//! A user of the tool writes it after the kernel, with the values given to `init`:
//!
//! ```text
//! // After the kernel, with cap, grid_x, threads_per_block as given to sess.init():
//! namespace ikpt = intra_kernel_profiler::trace;
//! const ikpt::GlobalBuffer& g = sess.global_buffer();
//! uint32_t wpb = (threads_per_block + 31) / 32, slots = grid_x * wpb;
//! std::vector<uint32_t> counts(slots);
//! std::vector<ikpt::Event> events(size_t(slots) * cap);
//! cudaMemcpy(counts.data(), g.counters, 4 * counts.size(), cudaMemcpyDeviceToHost);
//! cudaMemcpy(events.data(), g.events, 16 * events.size(), cudaMemcpyDeviceToHost);
//! uint32_t head[4] = {1, cap, grid_x, wpb};
//! std::vector<char> pad((16 - (24 + 4 * size_t(slots)) % 16) % 16, 0);
//! FILE* f = std::fopen("kernel.yjz", "wb");
//! std::fwrite("YJZRING", 1, 8, f);  // the 7 letters and their terminating zero
//! std::fwrite(head, 4, 4, f);
//! std::fwrite(counts.data(), 4, counts.size(), f);
//! std::fwrite(pad.data(), 1, pad.size(), f);
//! std::fwrite(events.data(), 16, events.size(), f);
//! std::fclose(f);
//! ```
//!
//! Region names are not in the buffers (the tool keeps them host-side,
//! `set_region_names`): give them as a names file ([`super::names`]).
//!
//! # The model
//!
//! A warp with records is a lane: `block` its slot's block, `group` and `warp` its warp,
//! `sm` its records' SM, `start` and `end` its first and latest record times, `written`
//! the records kept and `dropped` the records its ring overwrote. `%globaltimer` stamps
//! are 64-bit ns: nothing to unwrap. The grid is `[blocks, 1, 1]`, `groups_per_block` is
//! `warps_per_block` and `records_per_lane` is `per_warp_cap`.
//!
//! One flipped bit in a stamp can throw a warp centuries away: a warp whose stamps cannot
//! belong to the launch (its latest record more than 2^44 ns after its first, more than
//! 2^40 ns from the other warps, or past 2^63 ns) is set aside, named in the diagnostics, and the
//! dump decodes as if it had never run ([`super::set_aside`], `# Lanes set aside`).

use super::peer::{Built, Pairing};
use super::set_aside::{self, Skip};
use super::DecodeOptions;
use crate::model::{Lane, Source, Trace, WireFormat};
use rayon::prelude::*;

/// Word 0 of a dump file: `"YJZRING\0"`.
pub const MAGIC: u64 = u64::from_le_bytes(*b"YJZRING\0");

/// The dump file version this ikp reads.
pub const VERSION: u32 = 1;

/// Bytes before the counters.
pub const HEADER_BYTES: u64 = 24;

/// Bytes of one event.
pub const EVENT_BYTES: u64 = 16;

/// The most warps a block can have (1024 threads).
pub const MAX_WARPS_PER_BLOCK: u32 = 32;

/// Why a dump file cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum YaoJzError {
    /// Word 0 is not [`MAGIC`].
    #[error("word 0 is {0:#018x}, not the dump magic \"YJZRING\\0\"")]
    Magic(u64),
    /// The header is unusable.
    #[error("header: {0}")]
    Header(String),
    /// The length disagrees with the header.
    #[error("the file is {got} bytes, but a dump of {slots} warps x {cap} events is {} (header, counters, padding to 16 bytes, events)", want.map_or("more than 2^64 bytes".to_owned(), |w| format!("{w} bytes")))]
    Size {
        /// Bytes in the file.
        got: u64,
        /// Bytes the header asks for (`None`: more than fits 64 bits).
        want: Option<u64>,
        /// Warp slots.
        slots: u64,
        /// Events per slot.
        cap: u32,
    },
    /// A padding byte after the counters is not zero.
    #[error("byte {0} (padding after the counters) is not zero: the counters are not where the header puts them")]
    Padding(u64),
    /// A record that does not fit its slot.
    #[error("warp slot {slot} (block {block}, warp {warp}), record {index} (event {event} of the buffer): {why}")]
    Record {
        /// The slot.
        slot: u64,
        /// Its block.
        block: u64,
        /// Its warp.
        warp: u64,
        /// Index of the record among the slot's kept records (0 = oldest).
        index: u64,
        /// Index of the event in the events buffer.
        event: u64,
        /// What is wrong.
        why: String,
    },
}

/// The header fields.
#[derive(Clone, Copy, Debug)]
struct Header {
    cap: u32,
    blocks: u32,
    wpb: u32,
    slots: u64,
    /// Word index of the first event.
    events: usize,
}

/// Parses and checks the header against the length of `words`.
fn header(words: &[u64]) -> Result<Header, YaoJzError> {
    let w0 = words.first().copied().unwrap_or(0);
    if w0 != MAGIC {
        return Err(YaoJzError::Magic(w0));
    }
    if words.len() < 3 {
        return Err(YaoJzError::Header(format!(
            "the file is {} bytes, shorter than the 24-byte header",
            words.len() * 8
        )));
    }
    let (version, cap) = (words[1] as u32, (words[1] >> 32) as u32);
    let (blocks, wpb) = (words[2] as u32, (words[2] >> 32) as u32);
    let bad = |why: String| Err(YaoJzError::Header(why));
    if version != VERSION {
        return bad(format!(
            "version {version}; this ikp reads version {VERSION}"
        ));
    }
    if cap == 0 || !cap.is_power_of_two() {
        return bad(format!(
            "per_warp_cap {cap} is not a power of two (the tool requires one)"
        ));
    }
    if blocks == 0 {
        return bad("blocks is 0".to_owned());
    }
    if wpb == 0 || wpb > MAX_WARPS_PER_BLOCK {
        return bad(format!(
            "warps_per_block {wpb} is not 1..{MAX_WARPS_PER_BLOCK} (a block has at most 1024 threads)"
        ));
    }
    let slots = blocks as u64 * wpb as u64;
    if slots > u32::MAX as u64 {
        return bad(format!(
            "{blocks} blocks x {wpb} warps exceed the tool's 32-bit slot index"
        ));
    }
    let events_at = (HEADER_BYTES + 4 * slots).next_multiple_of(EVENT_BYTES);
    let want = (slots.checked_mul(cap as u64))
        .and_then(|n| n.checked_mul(EVENT_BYTES))
        .and_then(|n| n.checked_add(events_at));
    let got = words.len() as u64 * 8;
    if want != Some(got) {
        return Err(YaoJzError::Size {
            got,
            want,
            slots,
            cap,
        });
    }
    Ok(Header {
        cap,
        blocks,
        wpb,
        slots,
        events: (events_at / 8) as usize,
    })
}

/// Warp slots decoded per rayon task (a few thousand records each at least).
const CHUNK_SLOTS: usize = 256;

/// Decodes a dump file's words (module docs), setting aside the warps whose stamps cannot
/// belong to the launch ([`super::set_aside`]).
pub(crate) fn decode(words: &[u64], opts: &DecodeOptions) -> Result<Trace, YaoJzError> {
    set_aside::without_lanes_set_aside(Default::default(), |skip, unused| {
        drop(unused);
        decode_skipping(words, opts, skip)
    })
}

/// [`decode`], leaving out the warp slots `skip` names (as if they had never run).
fn decode_skipping(
    words: &[u64],
    opts: &DecodeOptions,
    skip: Skip<'_>,
) -> Result<Trace, YaoJzError> {
    let h = header(words)?;
    let bytes: &[u8] = bytemuck::cast_slice(words);
    let counters_end = (HEADER_BYTES + 4 * h.slots) as usize;
    if let Some(k) = bytes[counters_end..h.events * 8]
        .iter()
        .position(|&b| b != 0)
    {
        return Err(YaoJzError::Padding((counters_end + k) as u64));
    }
    let count = |s: usize| {
        let at = HEADER_BYTES as usize + 4 * s;
        u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
    };
    let slots = h.slots as usize;
    let chunk = |r: std::ops::Range<usize>| -> Result<Built, YaoJzError> {
        let mut b = Built::default();
        for s in r {
            let n = count(s);
            if n > 0 && !skip.skips(s as u32) {
                slot(&h, words, s, n, &mut b)?;
            }
        }
        Ok(b)
    };
    let ranges: Vec<std::ops::Range<usize>> = (0..slots)
        .step_by(CHUNK_SLOTS)
        .map(|s| s..(s + CHUNK_SLOTS).min(slots))
        .collect();
    let parts: Vec<Built> = if opts.single_threaded || ranges.len() < 2 {
        ranges.into_iter().map(chunk).collect::<Result<_, _>>()?
    } else {
        ranges
            .into_par_iter()
            .map(chunk)
            .collect::<Result<_, _>>()?
    };
    let mut all = Built::default();
    for p in parts {
        all.append(p);
    }
    Ok(Trace {
        source: Source {
            format: WireFormat::YaoJz,
            version: VERSION,
            grid: [h.blocks, 1, 1],
            groups_per_block: h.wpb,
            records_per_lane: h.cap,
            time_base: all.time_base(),
            ..Default::default()
        },
        lanes: all.lanes,
        spans: all.spans,
        instants: all.instants,
        diagnostics: all.diag,
        ..Default::default()
    })
}

/// Decodes warp slot `s`, which wrote `n` records, into `b`.
fn slot(h: &Header, words: &[u64], s: usize, n: u32, b: &mut Built) -> Result<(), YaoJzError> {
    let cap = h.cap;
    let (block, warp) = (s as u64 / h.wpb as u64, s as u64 % h.wpb as u64);
    let kept = n.min(cap);
    let start = if n > cap { n & (cap - 1) } else { 0 };
    // The block's bits above 16, which the recorder ORs into the warp / SM half of its
    // `info` word (`b | packed << 16` with a 32-bit `b`): set there whatever the warp.
    let forced = (block >> 16) as u16;
    let mut info = None;
    let mut p = Pairing::new(b, s as u32);
    for i in 0..kept {
        let event = s as u64 * cap as u64 + ((start + i) & (cap - 1)) as u64;
        let at = h.events + 2 * event as usize;
        let (ts, meta) = (words[at], words[at + 1]);
        let (id, kind, word) = (meta as u16, (meta >> 16) as u16, (meta >> 32) as u32);
        let wrong = |why: String| YaoJzError::Record {
            slot: s as u64,
            block,
            warp,
            index: i as u64,
            event,
            why,
        };
        match info {
            None => {
                let (b16, hi) = (word as u16, (word >> 16) as u16);
                let w = hi & 0x3F & !forced;
                if b16 != block as u16 || hi & forced != forced || w != warp as u16 & 0x3F & !forced
                {
                    return Err(wrong(format!(
                        "it names block {b16} (mod 2^16), warp {}: warps_per_block {} does not match the kernel's, or this is not such a dump",
                        hi & 0x3F,
                        h.wpb
                    )));
                }
                info = Some(word);
            }
            Some(first) if first != word => {
                return Err(wrong(format!(
                    "its block / warp / SM word {word:#010x} differs from the warp's first record's {first:#010x} (the recorder writes one per warp)"
                )));
            }
            Some(_) => {}
        }
        match kind {
            0 => p.begin(id, ts),
            1 => p.end(id, ts),
            2 => p.instant(id, ts),
            _ => p.unknown(ts),
        }
    }
    let f = p.finish();
    let (start, end) = f.times.unwrap_or_default();
    b.lanes.push(Lane {
        id: s as u32,
        block: block as u32,
        group: warp as u32,
        // The SM bits are readable only when no block bit was ORed into them.
        sm: info.filter(|_| forced == 0).map(|w| w >> 22),
        warp: Some(warp as u32),
        start,
        end,
        finalized: true,
        written: kept as u64,
        dropped: (n - kept) as u64,
        spans: f.spans,
        instants: f.instants,
        ..Default::default()
    });
    Ok(())
}
