//! Decoder of Proton's (Triton) intra-kernel Chrome trace.
//!
//! # Format
//!
//! As verified in `github.com/triton-lang/triton`, `third_party/proton`:
//!
//! - `common/lib/TraceDataIO/TraceWriter.cpp`, `StreamChromeTraceWriter::writeKernel`
//!   (upstream commit `085a8a5`; the same in flagos-ai/FlagTree `71461e3`; with the
//!   additions of triton PR #8870 in facebookexperimental/triton `89104dd`): one JSON
//!   object `{"displayTimeUnit": "ns", "traceEvents": [...]}` whose events are all
//!   complete events (`"ph": "X"`), one per recorded scope, with `name` the scope name
//!   (`scope_<id>` when it has none), `cat` the kernel name, `pid`
//!   `"<kernel> Core<proc> CTA<block>"` (the processor, an SM on NVIDIA GPUs, and the
//!   CTA), `tid` `"warp <uid> (line <k>)"`: the warp, and a row number that
//!   `assignLineIds` gives each event so that events of one warp which overlap land on
//!   different rows. `ts` and `dur` are microseconds computed from cycles at an assumed
//!   1 GHz (`"Frequency (MHz)": 1000.0` in `args`): `dur` is `(end - start cycle) / 1000`,
//!   `ts` is `(cycle - the CTA's first start cycle + the CTA's init globaltimer - the
//!   earliest CTA's init globaltimer) / 1000`, the init times taken over every CTA of every
//!   kernel in the file. So each CTA's first event sits at the CTA's `%globaltimer` init
//!   time (in ns, relative), and the CTA's cycles follow it as if they were ns. Since
//!   PR #8870, `args` also holds `"Init Time (ns)"`, the CTA's absolute init globaltimer
//!   (and `"Post Final Time (ns)"`); `085a8a5` writes `ts` and `dur` as `float`, later
//!   versions as `double`.
//! - `csrc/lib/Data/TraceData.cpp`, `dumpChromeTrace`: an instrumentation profile (cycle
//!   metrics) is written by that writer alone: one object, CTA = the block id, `proc` =
//!   the processor id, `uid` = the warp; a profile never mixes it with kernel-level
//!   events.
//! - `tutorials/intra_kernel/README.md`: scope durations are cycles, CTA start times ns
//!   from the global timer, and the trace assumes a 1 GHz clock; each CTA's circular
//!   buffer keeps the latest events, the earlier ones being dropped with a warning when
//!   the trace is generated (nothing in the file counts them).
//! - `baseTimeNanoseconds`: triton PR #10949 records, as a top-level integer, the
//!   absolute ns that `ts = 0` stands for in Proton's Chrome traces. The writer versions
//!   above do not write it; ikp uses it when present (see below).
//! - Versions before the global init times (mid-2025, e.g. upstream `c45dfbf`) put every
//!   CTA's first event at the kernel's start and may end the `pid` with
//!   ` [measure in clock cycle (assume 1GHz)]`: ikp accepts the suffix, and such CTAs
//!   start together, as in the file.
//!
//! # Reading it back
//!
//! Every `X` event must have a `pid` and `tid` of the forms above, a `name`, and finite
//! `ts` and `dur`; the first event that does not is an error naming it, so that another
//! tool's Chrome trace (integer `pid`s, say) is refused rather than misread. Events of
//! other phases (Proton writes none) are counted as unknown records. A trace with no `X`
//! event, events of two kernels, or a CTA seen on two processors or with two init times
//! (two launches in one file) is refused: ikp decodes one launch per trace.
//!
//! With `f` the clock rate in MHz ([`super::DecodeOptions::proton_clock_mhz`]; by
//! default the 1000 MHz Proton assumed, which the model states in
//! [`Source::assumed_clock`](crate::model::Source::assumed_clock)):
//!
//! - an event's cycles since its CTA's first event are `round(1000 ts) - o`, where `o`
//!   is the smallest `round(1000 ts)` of the CTA (its first event's), and its length
//!   `round(1000 dur)` cycles; cycles become ns as `cycles x 1000 / f`, rounded;
//! - the CTA's first event is at its init time, as Proton's writer places it: its
//!   `"Init Time (ns)"` (absolute `%globaltimer` ns) when the events carry it; else
//!   `baseTimeNanoseconds + o` when the file has it; else `o` minus the smallest `o` of
//!   the file (ns from the earliest CTA's init). All CTAs must carry an init time, or
//!   none.
//!
//! An event whose `dur` is negative (an end cycle before the start: a wrapped 32-bit
//! clock) gets length 0 and is counted as a backward step. Times are exact to a cycle
//! (the file's `float` values, in `085a8a5`, are not, beyond 2^24 cycles).
//!
//! # The model
//!
//! A lane is one warp of one CTA, all its rows (`line`s) together: `block` the CTA,
//! `group` and `warp` the warp id, `sm` the processor; lane id `block x
//! groups_per_block + warp`, with `groups_per_block` one more than the largest warp id.
//! Proton pairs the records itself, so each event is a span: a lane's spans are sorted by
//! begin (longer first), and a span's depth is the number of the lane's spans still open
//! at its begin. Region ids follow the order in which scope names first appear; the
//! names are the scope names. Lanes start at their first span and end at their last end;
//! `written` counts two records per span (start and end); `dropped` is 0 (the file does
//! not count what the ring lost). The grid is `[largest CTA + 1, 1, 1]`.
//!
//! A warp whose times cannot belong to the launch (one event's `ts` set to 10^15 us, say:
//! its last end more than 2^44 ns after its first begin, the warp more than 2^40 ns from
//! the others, or past 2^63 ns) is set aside, named in the diagnostics, and the trace decodes as if
//! its events were not in the file: they place nothing, not even their CTA's first event
//! ([`super::set_aside`], `# Lanes set aside`). Its scope names keep their region ids.

use super::set_aside::{self, Skip};
use super::DecodeOptions;
use crate::model::{AssumedClock, Diagnostics, Lane, Names, Source, Spans};
use crate::model::{Trace, WireFormat};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

/// The clock rate Proton's writer assumes, MHz.
pub const PROTON_ASSUMED_MHZ: f64 = 1000.0;

/// The largest clock rate accepted, MHz (no GPU is near 100 GHz: a larger value is a
/// unit mistake).
pub const MAX_CLOCK_MHZ: f64 = 100_000.0;

/// Bytes a format detection looks at.
pub(crate) const SNIFF_BYTES: usize = 64;

/// Whether `head`, a file's first bytes, is JSON text: `{` first after blanks, and no
/// control byte but blanks. No `u64` buffer of another format starts so: a plausible TVM
/// header has a zero byte at offset 3 (blocks < 2^20), and the ikp and yao-jz magics are
/// letters.
pub(crate) fn looks_like_json(head: &[u8]) -> bool {
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    head.iter().find(|&&b| !blank(b)) == Some(&b'{') && head.iter().all(|&b| b >= 0x20 || blank(b))
}

/// Why a Proton trace cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtonError {
    /// Not JSON, or not of the expected shape.
    #[error("not a Chrome trace: {0}")]
    Json(String),
    /// No `traceEvents` array.
    #[error("no \"traceEvents\" array: not a Chrome trace")]
    NoEvents,
    /// No `X` event.
    #[error(
        "no complete event (\"ph\": \"X\") among {0} events: Proton writes one per recorded scope"
    )]
    Empty(u64),
    /// An event that is not Proton's.
    #[error("event {index}: {why}")]
    Event {
        /// Index in `traceEvents`.
        index: u64,
        /// What is wrong.
        why: String,
    },
    /// Events of two kernels.
    #[error("event {index} is of kernel {second:?}, the events before it of kernel {first:?}: ikp decodes one kernel launch per trace")]
    Kernels {
        /// Index in `traceEvents`.
        index: u64,
        /// The first kernel's name.
        first: String,
        /// The other one.
        second: String,
    },
    /// A CTA whose events disagree (two launches in one file).
    #[error("CTA {block}: {why} (two launches of the kernel in one trace?)")]
    Block {
        /// The CTA.
        block: u32,
        /// What disagrees.
        why: String,
    },
    /// Some CTAs carry an init time, others not.
    #[error("CTA {with} carries \"Init Time (ns)\" and CTA {without} does not: their times cannot be put on one axis")]
    MixedInit {
        /// A CTA with one.
        with: u32,
        /// A CTA without.
        without: u32,
    },
    /// A clock rate that is not one.
    #[error("the clock rate given, {0} MHz, is not a number of MHz in (0, 100000]")]
    Clock(String),
    /// More scope names than region ids.
    #[error("more than 65536 distinct scope names")]
    Regions,
    /// Times or ids out of range.
    #[error("{0}")]
    Range(String),
}

/// A string field, or anything else (a `pid` of another tool's trace is an integer).
#[derive(Deserialize)]
#[serde(untagged)]
enum Label<'a> {
    Str(#[serde(borrow)] Cow<'a, str>),
    Other(IgnoredAny),
}

impl Label<'_> {
    fn str(&self) -> Option<&str> {
        match self {
            Label::Str(s) => Some(s),
            Label::Other(_) => None,
        }
    }
}

/// The fields of an event ikp reads (others are skipped without being kept; a field
/// missing is `None`).
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    ph: Option<Label<'a>>,
    #[serde(borrow)]
    name: Option<Label<'a>>,
    #[serde(borrow)]
    pid: Option<Label<'a>>,
    #[serde(borrow)]
    tid: Option<Label<'a>>,
    ts: Option<f64>,
    dur: Option<f64>,
    args: Option<Args>,
}

#[derive(Deserialize)]
struct Args {
    #[serde(rename = "Init Time (ns)")]
    init: Option<u64>,
}

/// One scope of the file, as read.
#[derive(Clone, Copy, Debug)]
struct Rec {
    block: u32,
    warp: u32,
    proc: u32,
    region: u16,
    /// `round(1000 ts)`: cycles plus the CTA's offset.
    c0: i64,
    /// `round(1000 dur)`: cycles.
    d: i64,
    init: Option<u64>,
}

/// What the parse gathers.
#[derive(Default)]
struct Acc {
    recs: Vec<Rec>,
    kernel: Option<String>,
    regions: HashMap<String, u16>,
    names: Vec<String>,
    base: Option<u64>,
    seen_events: bool,
    index: u64,
    unknown: u64,
    /// The first problem, which ends the parse.
    error: Option<ProtonError>,
}

/// Largest `|1000 ts|` accepted: `round` of it fits an `i64` with room for sums.
const MAX_CYCLES: f64 = (1u64 << 62) as f64;

impl Acc {
    fn event(&mut self, e: Event<'_>) -> Result<(), ProtonError> {
        let index = self.index;
        self.index += 1;
        let bad = |why: String| ProtonError::Event { index, why };
        match e.ph.as_ref().and_then(Label::str) {
            Some("X") => {}
            _ => {
                self.unknown += 1;
                return Ok(());
            }
        }
        let pid = (e.pid.as_ref().and_then(Label::str)).ok_or_else(|| {
            bad("its \"pid\" is not a string (Proton's is \"<kernel> Core<SM> CTA<block>\")".into())
        })?;
        let (kernel, proc, block) = parse_pid(pid).ok_or_else(|| {
            bad(format!(
                "its \"pid\" {:?} is not Proton's \"<kernel> Core<SM> CTA<block>\"",
                clip(pid)
            ))
        })?;
        let tid = (e.tid.as_ref().and_then(Label::str)).ok_or_else(|| {
            bad("its \"tid\" is not a string (Proton's is \"warp <n> (line <k>)\")".into())
        })?;
        let warp = parse_tid(tid).ok_or_else(|| {
            bad(format!(
                "its \"tid\" {:?} is not Proton's \"warp <n> (line <k>)\"",
                clip(tid)
            ))
        })?;
        let name = (e.name.as_ref().and_then(Label::str))
            .ok_or_else(|| bad("it has no \"name\" string (the scope)".into()))?;
        let cycles = |v: Option<f64>, what: &str| {
            let v = v.ok_or_else(|| bad(format!("it has no number \"{what}\"")))? * 1000.0;
            if !v.is_finite() || v.abs() > MAX_CYCLES {
                return Err(bad(format!(
                    "its \"{what}\" is not a finite time of at most 2^62 cycles (146 years at \
                     1 GHz)"
                )));
            }
            Ok(v.round() as i64)
        };
        let (c0, d) = (cycles(e.ts, "ts")?, cycles(e.dur, "dur")?);
        match &self.kernel {
            None => self.kernel = Some(kernel.to_owned()),
            Some(k) if k != kernel => {
                return Err(ProtonError::Kernels {
                    index,
                    first: k.clone(),
                    second: kernel.to_owned(),
                })
            }
            Some(_) => {}
        }
        let region = match self.regions.get(name) {
            Some(&r) => r,
            None => {
                let r = u16::try_from(self.names.len()).map_err(|_| ProtonError::Regions)?;
                self.regions.insert(name.to_owned(), r);
                self.names.push(name.to_owned());
                r
            }
        };
        self.recs.push(Rec {
            block,
            warp,
            proc,
            region,
            c0,
            d,
            init: e.args.and_then(|a| a.init),
        });
        Ok(())
    }
}

/// `s`, cut to 80 characters for a message.
fn clip(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_owned(),
    }
}

/// A decimal `u32` of digits only.
fn number(s: &str) -> Option<u32> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `(kernel, proc, block)` of `"<kernel> Core<proc> CTA<block>"`, optionally followed by
/// `" [...]"` (older versions).
fn parse_pid(pid: &str) -> Option<(&str, u32, u32)> {
    let pid = match pid.rfind(" [") {
        Some(i) if pid.ends_with(']') => &pid[..i],
        _ => pid,
    };
    let (rest, block) = pid.rsplit_once(" CTA")?;
    let (kernel, proc) = rest.rsplit_once(" Core")?;
    (!kernel.is_empty()).then_some(())?;
    Some((kernel, number(proc)?, number(block)?))
}

/// The warp of `"warp <n> (line <k>)"`.
fn parse_tid(tid: &str) -> Option<u32> {
    let (warp, line) = tid.strip_prefix("warp ")?.split_once(" (line ")?;
    number(line.strip_suffix(')')?)?;
    number(warp)
}

/// The top-level object: `traceEvents` streamed into the accumulator, so that no event is
/// held beyond its own parse.
struct Top<'a>(&'a mut Acc);

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object with \"traceEvents\"")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        while let Some(k) = m.next_key::<Label<'de>>()? {
            match k.str() {
                Some("traceEvents") => {
                    self.0.seen_events = true;
                    m.next_value_seed(Events(&mut *self.0))?;
                }
                Some("baseTimeNanoseconds") => self.0.base = Some(m.next_value()?),
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

struct Events<'a>(&'a mut Acc);

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of events")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while let Some(e) = s.next_element::<Event<'de>>()? {
            if let Err(err) = self.0.event(e) {
                let msg = err.to_string();
                self.0.error = Some(err);
                return Err(de::Error::custom(msg));
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

/// What the events of one CTA agree on.
#[derive(Clone, Copy, Debug)]
struct Cta {
    proc: u32,
    /// Its first event's `round(1000 ts)`.
    off: i64,
    init: Option<u64>,
}

/// The clock rate to convert with, kHz, and whether it was given.
fn clock(opts: &DecodeOptions) -> Result<AssumedClock, ProtonError> {
    let Some(mhz) = opts.proton_clock_mhz else {
        return Ok(AssumedClock {
            khz: (PROTON_ASSUMED_MHZ * 1e3) as u64,
            given: false,
        });
    };
    let khz = (mhz * 1e3).round();
    if !(mhz > 0.0 && mhz <= MAX_CLOCK_MHZ && khz >= 1.0) {
        return Err(ProtonError::Clock(mhz.to_string()));
    }
    Ok(AssumedClock {
        khz: khz as u64,
        given: true,
    })
}

/// Decodes a Proton trace's bytes (module docs).
pub(crate) fn decode(bytes: &[u8], opts: &DecodeOptions) -> Result<Trace, ProtonError> {
    let rate = clock(opts)?;
    let mut acc = Acc::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Top(&mut acc).deserialize(&mut de).and_then(|()| de.end());
    if let Some(e) = acc.error.take() {
        return Err(e);
    }
    parsed.map_err(|e| ProtonError::Json(e.to_string()))?;
    if !acc.seen_events {
        return Err(ProtonError::NoEvents);
    }
    if acc.recs.is_empty() {
        return Err(ProtonError::Empty(acc.index));
    }
    set_aside::without_lanes_set_aside(Default::default(), |skip, unused| {
        drop(unused);
        build(&acc, rate, skip)
    })
}

/// The model of the scopes read (module docs, `# Reading it back`, `# The model`), without
/// the lanes `skip` names: their scopes place nothing (not even their CTA's first event).
fn build(acc: &Acc, rate: AssumedClock, skip: Skip<'_>) -> Result<Trace, ProtonError> {
    let mut ctas: BTreeMap<u32, Cta> = BTreeMap::new();
    for r in &acc.recs {
        let c = ctas.entry(r.block).or_insert(Cta {
            proc: r.proc,
            off: i64::MAX,
            init: r.init,
        });
        let why = if c.proc != r.proc {
            format!("its events name processors {} and {}", c.proc, r.proc)
        } else if c.init != r.init {
            format!(
                "its events give init times {:?} and {:?} ns",
                c.init, r.init
            )
        } else {
            continue;
        };
        return Err(ProtonError::Block {
            block: r.block,
            why,
        });
    }
    let with = ctas.iter().find(|(_, c)| c.init.is_some()).map(|(&b, _)| b);
    let without = ctas.iter().find(|(_, c)| c.init.is_none()).map(|(&b, _)| b);
    if let (Some(with), Some(without)) = (with, without) {
        return Err(ProtonError::MixedInit { with, without });
    }
    let ns = |cycles: i128| (cycles * 1_000_000 + rate.khz as i128 / 2) / rate.khz as i128;
    // Lane ids follow the CTAs and warps of every scope, whatever is set aside.
    let groups = acc.recs.iter().map(|r| r.warp).max().unwrap_or(0) as u64 + 1;
    let max_block = ctas.keys().next_back().copied().unwrap_or(0);
    if max_block as u64 * groups + groups - 1 > u32::MAX as u64 {
        return Err(ProtonError::Range(format!(
            "CTA {max_block} x {groups} warps exceeds the 2^32 lane ids of the model"
        )));
    }
    let lane_of = |r: &Rec| (r.block as u64 * groups + r.warp as u64) as u32;
    let kept = || acc.recs.iter().filter(|r| !skip.skips(lane_of(r)));
    for r in kept() {
        let c = ctas.get_mut(&r.block).expect("every CTA was entered above");
        c.off = c.off.min(r.c0);
    }
    let min_off = (ctas.values().map(|c| c.off))
        .filter(|&o| o != i64::MAX)
        .min()
        .unwrap_or(0);
    // Each CTA's first event, in ns (module docs).
    let anchor = |c: &Cta| -> i128 {
        match (c.init, acc.base) {
            (Some(init), _) => init as i128,
            (None, Some(base)) => base as i128 + c.off as i128,
            (None, None) => c.off as i128 - min_off as i128,
        }
    };
    let mut backward = 0u64;
    let mut rows: Vec<(u32, u64, u64, u16)> = Vec::with_capacity(acc.recs.len());
    for r in kept() {
        let c = &ctas[&r.block];
        let d = if r.d < 0 {
            backward += 1;
            0
        } else {
            r.d
        };
        let since = (r.c0 - c.off) as i128;
        let begin = anchor(c) + ns(since);
        let end = anchor(c) + ns(since + d as i128);
        let (Ok(begin), Ok(end)) = (u64::try_from(begin), u64::try_from(end)) else {
            return Err(ProtonError::Range(format!(
                "CTA {}: times from {begin} to {end} ns do not fit 0..2^64 ns",
                r.block
            )));
        };
        rows.push((lane_of(r), begin, end, r.region));
    }
    rows.sort_unstable_by_key(|&(lane, b, e, region)| (lane, b, std::cmp::Reverse(e), region));

    let mut spans = Spans::default();
    let mut lanes: Vec<Lane> = Vec::new();
    let mut open: Vec<u64> = Vec::new();
    for (k, &(lane, begin, end, region)) in rows.iter().enumerate() {
        if lanes.last().is_none_or(|l| l.id != lane) {
            open.clear();
            let (block, warp) = (lane / groups as u32, lane % groups as u32);
            lanes.push(Lane {
                id: lane,
                block,
                group: warp,
                sm: Some(ctas[&block].proc),
                warp: Some(warp),
                start: begin,
                end,
                finalized: true,
                spans: k..k,
                ..Default::default()
            });
        }
        open.retain(|&e| e > begin);
        let depth = open.len().min(u16::MAX as usize - 1) as u16;
        open.push(end);
        spans.push(lane, region, depth, 0, begin, end);
        let l = lanes.last_mut().expect("pushed above");
        l.end = l.end.max(end);
        l.written += 2;
        l.spans.end = k + 1;
    }
    let time_base = lanes.iter().map(|l| l.start).min().unwrap_or(0);
    Ok(Trace {
        source: Source {
            format: WireFormat::Proton,
            version: 1,
            timer: ikp_device::TimerMode::Clock,
            assumed_clock: Some(rate),
            grid: [max_block + 1, 1, 1],
            groups_per_block: groups as u32,
            time_base,
            ..Default::default()
        },
        names: Names {
            regions: acc.names.clone(),
            counters: Vec::new(),
        },
        lanes,
        spans,
        diagnostics: Diagnostics {
            unknown_records: acc.unknown,
            backward_steps: backward,
            ..Default::default()
        },
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::{looks_like_json, parse_pid, parse_tid};

    #[test]
    fn pid_and_tid_are_read_from_the_right() {
        assert_eq!(
            parse_pid("matmul Core 1 Core3 CTA12"),
            Some(("matmul Core 1", 3, 12))
        );
        assert_eq!(
            parse_pid("k Core0 CTA7 [measure in clock cycle (assume 1GHz)]"),
            Some(("k", 0, 7))
        );
        for bad in [
            "Core3 CTA1",
            "k Core CTA1",
            "k Core3 CTA",
            "k Core-3 CTA1",
            "124",
        ] {
            assert_eq!(parse_pid(bad), None, "{bad}");
        }
        assert_eq!(parse_tid("warp 5 (line 2)"), Some(5));
        for bad in [
            "warp 5",
            "warp x (line 1)",
            "warp 5 (line 1",
            "block 0 warp 2",
        ] {
            assert_eq!(parse_tid(bad), None, "{bad}");
        }
    }

    #[test]
    fn json_is_told_from_every_u64_buffer_by_its_first_bytes() {
        assert!(looks_like_json(b"{\"displayTimeUnit\":\"ns\""));
        assert!(looks_like_json(b" \n\t{ \"traceEvents\": ["));
        // A TVM header of 8827 blocks (0x227b: `{"` in its first two bytes).
        let tvm = (3u64 << 32 | 0x227b).to_le_bytes();
        assert!(!looks_like_json(&tvm));
        assert!(!looks_like_json(&ikp_device::wire::MAGIC.to_le_bytes()));
        assert!(!looks_like_json(&super::super::yaojz::MAGIC.to_le_bytes()));
        assert!(!looks_like_json(b"[1, 2]"));
        assert!(!looks_like_json(b""));
    }
}
