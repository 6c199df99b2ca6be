//! The ikp native wire format, version 2: the one source of truth.
//!
//! The device header (`ikp.cuh`), the host decoder and the reference encoder all take
//! their constants from this module; nothing about the layout is written down twice.
//!
//! # Format
//!
//! A buffer is a little-endian array of `u64` words, zeroed by the host, then filled with a
//! **buffer header** (written by the host before the first launch), one **launch counter**
//! per lane, and `epochs` x `lane_count` fixed-size **lane segments**. A lane is one
//! `(block, group)` pair with exactly one writing thread, its leader:
//! `lane = linear_block_id * groups_per_block + group`, where
//! `linear_block_id = x + grid_x * (y + grid_y * z)`. An **epoch** is one launch of the
//! kernel into the same buffer (a launch loop, a CUDA Graph replayed N times): lane `l`
//! of epoch `e` writes segment `e * lane_count + l`.
//!
//! ## Buffer header
//!
//! ```text
//! word  bits 63..32                         bits 31..0
//!  0    MAGIC ("IKPTRACE" as a little-endian u64, all 64 bits)
//!  1    header_words (= first launch-counter word)  version (FORMAT_VERSION)
//!  2    records_per_lane                     lane_count
//!  3    n_counters << 16 | flags << 8 | timer groups_per_block
//!  4    grid_y                               grid_x
//!  5    n_regions                            grid_z
//!  6    names_bytes                          lane_stride (words per lane segment)
//!  7    reserved, 0                          epochs (segments per lane, >= 1)
//!  8    host CLOCK_REALTIME ns at the clock sync          (0: no sync)
//!  9    host CLOCK_MONOTONIC ns at the clock sync
//! 10    device %globaltimer ns at the clock sync
//! 11    sync samples                         sync round trip, ns (the error bound is half)
//! 12..  async-region bitmap: ceil(n_regions / 64) words, bit r of word r / 64 set when
//!       region r is an async range (its payload is a token; see below)
//! then  name table: n_regions region names then n_counters counter names, each UTF-8 and
//!       NUL-terminated, zero-padded to a whole word
//! ```
//! Header flags ([`header_flags`]): `RING`, the lanes of this launch record as rings.
//! The header's `timer` is the one the host declared; the timer is a lane's own choice
//! (ikp.cuh's `Lane<F, T>`), so each lane says which it stamped with (its IDS flag
//! `CLOCK`, [`lane_flags`]), a kernel may mix lanes of both, and a decoder follows the
//! lane.
//!
//! The **clock sync** (words 8..=11) maps the GPU's `%globaltimer` to the host's clocks:
//! the host read both host clocks and the GPU's `%globaltimer` together, `samples` times,
//! and kept the reading with the shortest round trip, so that device time `g` is host
//! realtime `g - word10 + word8` within `round_trip / 2`. All four words are zero when no
//! sync was taken.
//!
//! ## Launch counters (`lane_count` words from `header_words`)
//!
//! With `epochs > 1`, a lane's leader takes its epoch at init by an atomic increment of
//! its launch counter (the value before the increment); a lane whose epoch is `epochs` or
//! more records nothing, and its counter says how many launches there were. With
//! `epochs == 1` the counters are not touched (every launch writes epoch 0).
//!
//! ## Lane segment (`lane_stride = LANE_FIXED_WORDS + records_per_lane + n_counters` words)
//!
//! Segments start at `lane_base = header_words + lane_count`.
//!
//! ```text
//! +0  start %globaltimer, 64-bit ns                 written by the leader at init
//! +1  start clock64 (cycles)                         written by the leader at init
//! +2  LANE_MARK << 40 | flags << 32 | warp << 16 | smid   written at init
//! +3  record cost: cycles (low 32) of one record: two rounds of CALIB_RECORDS
//!     back-to-back records, each round between two %clock reads at init, the shorter
//!     round over CALIB_RECORDS, rounded (ikp.cuh says what one such record holds);
//!     0: not measured
//! +4  records_per_lane event records                 written in order
//! +4+R+0  end %globaltimer, 64-bit ns                written at finalize
//! +4+R+1  end clock64                                 written at finalize
//! +4+R+2  dropped << 32 | written                     written at finalize
//! +4+R+3  n_counters wait-counter totals (u64)        atomic adds: at finalize for the
//!                                                    counts ikp.cuh sums in registers
//!                                                    (IKP_COUNTER_REGS), while running
//!                                                    for the others
//! ```
//! A zero `+2` word means the lane never ran `init`; a zero `+4+R+0` word means it never
//! ran `finalize`. `warp` is the leader's linear thread index / 32 (warp within the block).
//!
//! **Overflow.** A lane counts every record it attempts (a 32-bit cursor). By default
//! (drop-newest) a full lane writes no more: `written = min(cursor, R)` and the rest are
//! `dropped`. A **ring** lane (lane flag `RING`, header flag `RING`, `R` a power of two)
//! writes record `i` at index `i mod R`, so it keeps the newest `R`: `written` is then the
//! records present and `dropped` the records overwritten; the oldest present record is at
//! index `(written + dropped) mod R`, and the ring wrapped `(written + dropped) / R` times.
//! (The cursor is 32 bits: past 2^32 records the position stays right, as `R` divides
//! 2^32, but the overwritten count is modulo 2^32.)
//!
//! ## Event record
//!
//! ```text
//!  63                              32 31                  12 11          2 1  0
//! +----------------------------------+----------------------+-------------+----+
//! |  timestamp (low 32 bits)         |  payload (20 bits)   | region (10) |kind|
//! +----------------------------------+----------------------+-------------+----+
//! ```
//! - `timestamp`: `%globaltimer_lo` in ns ([`TimerMode::Globaltimer`]) or the low 32 bits of
//!   `clock64` in cycles ([`TimerMode::Clock`]). The decoder unwraps it against the lane's
//!   64-bit start stamp, each stamp relative to the one before, so a lane may run for any
//!   time as long as consecutive records are less than 2^31 ticks apart; a stamp up to
//!   2^31 ticks behind the one before is read as the timer stepping back (a `%globaltimer`
//!   resync), which the decoder clamps and counts instead of reading as a jump of almost
//!   2^32 ticks. (A ring lane that wrapped unwraps back from its end stamp instead.)
//! - `kind`: [`Kind`]: begin, end, instant or meta.
//! - `region`: region id, an index into the name table (`0..MAX_REGIONS`).
//! - `payload`: user value (tile index, stage, iteration), `0..=MAX_PAYLOAD`.
//!
//! **Async ranges.** Begin and end records of a region marked in the async-region bitmap
//! are not paired within their lane: their payload is a token, and an end closes the
//! earliest open begin of the same region and token in the whole launch, whichever lane
//! wrote it (a TMA load issued by a producer warp, its completion seen by a consumer).
//!
//! A **meta** record carries no timestamp: its high half is a 32-bit value and its
//! `region` field selects the meta kind ([`MetaKind`]). `MetaKind::CounterSample`
//! (`payload` = counter id, value = iterations of one wait) takes its time from the record
//! before it in the lane (the lane start if none).
//!
//! ## Versioning
//! [`FORMAT_VERSION`] changes with every layout change; [`layout_fingerprint`] hashes every
//! constant of this module and a test pins it against the version, so a change without a
//! version bump fails the test suite. A decoder refuses a buffer whose version is newer
//! ("upgrade ikp"), and one of version 1 (written before epochs, rings, async ranges and
//! the record cost; no ikp release wrote it), naming the version.

/// Version of the wire format this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 2;

/// `b"IKPTRACE"` read as a little-endian `u64`: word 0 of every native buffer.
pub const MAGIC: u64 = u64::from_le_bytes(*b"IKPTRACE");

/// Words of the fixed part of the buffer header, before the name table.
pub const HEADER_FIXED_WORDS: u32 = 12;

/// Header word indices.
pub mod hdr {
    /// `MAGIC`.
    pub const MAGIC: usize = 0;
    /// `header_words << 32 | version`.
    pub const VERSION: usize = 1;
    /// `records_per_lane << 32 | lane_count`.
    pub const LANES: usize = 2;
    /// `n_counters << 48 | flags << 40 | timer << 32 | groups_per_block`.
    pub const GROUPS: usize = 3;
    /// `grid_y << 32 | grid_x`.
    pub const GRID_XY: usize = 4;
    /// `n_regions << 32 | grid_z`.
    pub const GRID_Z: usize = 5;
    /// `names_bytes << 32 | lane_stride`.
    pub const STRIDE: usize = 6;
    /// `reserved << 32 | epochs`.
    pub const EPOCHS: usize = 7;
    /// Host `CLOCK_REALTIME` ns at the clock sync (0: no sync).
    pub const SYNC_REALTIME: usize = 8;
    /// Host `CLOCK_MONOTONIC` ns at the clock sync.
    pub const SYNC_MONOTONIC: usize = 9;
    /// Device `%globaltimer` ns at the clock sync.
    pub const SYNC_GLOBALTIMER: usize = 10;
    /// `samples << 32 | round_trip_ns` of the clock sync.
    pub const SYNC_ROUND_TRIP: usize = 11;
    /// First word of the async-region bitmap (then the name table).
    pub const ASYNC_BITMAP: usize = 12;
}

/// Lane segment word offsets.
pub mod lane {
    /// 64-bit `%globaltimer` at init.
    pub const START_GT: u32 = 0;
    /// 64-bit `clock64` at init.
    pub const START_CLK: u32 = 1;
    /// `LANE_MARK << 40 | flags << 32 | warp << 16 | smid`.
    pub const IDS: u32 = 2;
    /// Cycles of one record measured at init (low 32 bits; 0: not measured).
    pub const CALIB: u32 = 3;
    /// First event record.
    pub const EVENTS: u32 = 4;
    /// Words before the events.
    pub const PROLOGUE_WORDS: u32 = 4;
    /// Trailer, relative to the end of the event area: 64-bit `%globaltimer` at finalize.
    pub const T_END_GT: u32 = 0;
    /// Trailer: 64-bit `clock64` at finalize.
    pub const T_END_CLK: u32 = 1;
    /// Trailer: `dropped << 32 | written`.
    pub const T_COUNT: u32 = 2;
    /// Trailer: first wait-counter total.
    pub const T_COUNTERS: u32 = 3;
    /// Trailer words before the counters.
    pub const TRAILER_WORDS: u32 = 3;
}

/// Fixed words per lane segment besides events and counters.
pub const LANE_FIXED_WORDS: u32 = lane::PROLOGUE_WORDS + lane::TRAILER_WORDS;

/// Marker in bits 63..40 of a lane's IDS word: ASCII "IKP".
pub const LANE_MARK: u32 = 0x49_4B_50;
/// Shift of [`LANE_MARK`] in the IDS word.
pub const IDS_MARK_SHIFT: u32 = 40;
/// Shift of the lane flags ([`lane_flags`]) in the IDS word.
pub const IDS_FLAGS_SHIFT: u32 = 32;
/// Shift of the warp index in the IDS word.
pub const IDS_WARP_SHIFT: u32 = 16;
/// Mask of the SM id and of the warp index in the IDS word.
pub const IDS_FIELD_MASK: u32 = 0xFFFF;
/// Mask of the lane flags in the IDS word (unshifted).
pub const IDS_FLAGS_MASK: u32 = 0xFF;

/// Flags a lane records about how its handle was built (IDS word bits 39..32).
pub mod lane_flags {
    /// Timestamps are clock cycles, not globaltimer ns.
    pub const CLOCK: u32 = 1 << 0;
    /// The handle fences the block around each record.
    pub const BLOCK_FENCE: u32 = 1 << 1;
    /// The lane records as a ring (keeps the newest records; needs the header's `RING`).
    pub const RING: u32 = 1 << 2;
}

/// Flags of the buffer header (word 3, bits 47..40).
pub mod header_flags {
    /// The launch's lanes record as rings: `records_per_lane` is a power of two.
    pub const RING: u32 = 1 << 0;
    /// Every flag this version defines.
    pub const ALL: u32 = RING;
}

/// Records a lane makes back to back in each of the two rounds of its record-cost
/// calibration at init, timed between two `%clock` reads; the shorter round's cycles over
/// this count are stored, rounded, in the lane's `CALIB` word.
pub const CALIB_RECORDS: u32 = 4;
/// Shift of the sync sample count in header word 11.
pub const SYNC_SAMPLES_SHIFT: u32 = 32;
/// Shift of the high half of a two-field header word (bits 63..32 of the `# Format` table:
/// words 1, 2, 4, 5, 6 and 7).
pub const HDR_HI_SHIFT: u32 = 32;
/// Shift of the timer id in header word 3 ([`hdr::GROUPS`]; 8 bits).
pub const HDR_TIMER_SHIFT: u32 = 32;
/// Shift of the header flags ([`header_flags`]) in header word 3 (8 bits).
pub const HDR_FLAGS_SHIFT: u32 = 40;
/// Shift of `n_counters` in header word 3 (16 bits).
pub const HDR_COUNTERS_SHIFT: u32 = 48;

/// Bits of the record kind.
pub const KIND_BITS: u32 = 2;
/// Bits of the region id.
pub const REGION_BITS: u32 = 10;
/// Bits of the payload.
pub const PAYLOAD_BITS: u32 = 20;
/// Shift of the region id in the tag.
pub const REGION_SHIFT: u32 = KIND_BITS;
/// Shift of the payload in the tag.
pub const PAYLOAD_SHIFT: u32 = KIND_BITS + REGION_BITS;
/// Shift of the timestamp (or meta value) in the record.
pub const TIME_SHIFT: u32 = 32;
/// Mask of the kind (unshifted).
pub const KIND_MASK: u32 = (1 << KIND_BITS) - 1;
/// Mask of the region id (unshifted).
pub const REGION_MASK: u32 = (1 << REGION_BITS) - 1;
/// Mask of the payload (unshifted).
pub const PAYLOAD_MASK: u32 = (1 << PAYLOAD_BITS) - 1;
/// Number of distinct region ids.
pub const MAX_REGIONS: u32 = 1 << REGION_BITS;
/// Largest payload.
pub const MAX_PAYLOAD: u32 = PAYLOAD_MASK;
/// Largest number of wait counters per buffer.
pub const MAX_COUNTERS: u32 = 256;
/// Largest number of lanes a header may declare.
pub const MAX_LANES: u32 = 1 << 26;
/// Largest number of epochs (launches) a header may declare.
pub const MAX_EPOCHS: u32 = 1 << 16;
/// Largest records per lane a header may declare.
pub const MAX_RECORDS_PER_LANE: u32 = 1 << 28;
/// Largest name table, in bytes.
pub const MAX_NAMES_BYTES: u32 = 1 << 20;

const _: () = assert!(KIND_BITS + REGION_BITS + PAYLOAD_BITS == 32);
const _: () = assert!(MAX_REGIONS >= 1024 && PAYLOAD_BITS >= 16);

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// Opens a region.
    Begin = 0,
    /// Closes the innermost open region with the same id.
    End = 1,
    /// A point in time.
    Instant = 2,
    /// Not a timed record: see [`MetaKind`].
    Meta = 3,
}

impl Kind {
    /// The kind stored in the low [`KIND_BITS`] of a tag.
    pub const fn from_bits(bits: u32) -> Kind {
        match bits & KIND_MASK {
            0 => Kind::Begin,
            1 => Kind::End,
            2 => Kind::Instant,
            _ => Kind::Meta,
        }
    }
}

/// The meta kinds of v1 (the `region` field of a [`Kind::Meta`] record).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum MetaKind {
    /// `payload` = counter id, value = spin iterations of one wait.
    CounterSample = 0,
}

impl MetaKind {
    /// The meta kind with this id, if v1 defines it.
    pub const fn from_id(id: u32) -> Option<MetaKind> {
        match id {
            0 => Some(MetaKind::CounterSample),
            _ => None,
        }
    }
}

/// How timestamps were taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum TimerMode {
    /// `%globaltimer_lo`: nanoseconds, one time axis for the whole GPU.
    #[default]
    Globaltimer = 0,
    /// Low 32 bits of `clock64`: SM cycles, converted to ns per lane from the lane's
    /// (clock64, globaltimer) pairs at start and end.
    Clock = 1,
}

impl TimerMode {
    /// The mode with this id, if v1 defines it.
    pub const fn from_id(id: u32) -> Option<TimerMode> {
        match id {
            0 => Some(TimerMode::Globaltimer),
            1 => Some(TimerMode::Clock),
            _ => None,
        }
    }
}

/// What a lane does once its `records_per_lane` records are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Overflow {
    /// Keep the oldest records; count the rest as dropped (the default: the start of a
    /// kernel, and the order of its regions, stay whole).
    #[default]
    DropNewest,
    /// Keep the newest records, overwriting the oldest (the end of a long or persistent
    /// kernel); `records_per_lane` must be a power of two.
    Ring,
    /// Keep every record the host drains in time: a stream launch ([`crate::stream`]); a
    /// full ring drops and counts, never slowing the kernel for the host.
    Stream,
    /// A stream launch whose full rings wait for the host to make room: no loss, at the
    /// cost of stalls, which are counted and timed.
    StreamWait,
}

impl Overflow {
    /// True for the stream policies ([`crate::stream`]).
    pub const fn is_stream(self) -> bool {
        matches!(self, Overflow::Stream | Overflow::StreamWait)
    }
}

/// Packs a tag (the low 32 bits of a record). Fields are masked, never bled into neighbours.
#[inline]
pub const fn pack_tag(kind: Kind, region: u32, payload: u32) -> u32 {
    (kind as u32 & KIND_MASK)
        | ((region & REGION_MASK) << REGION_SHIFT)
        | ((payload & PAYLOAD_MASK) << PAYLOAD_SHIFT)
}

/// Packs a record from its time (or meta value) and tag.
#[inline]
pub const fn pack_record(time_lo: u32, tag: u32) -> u64 {
    ((time_lo as u64) << TIME_SHIFT) | tag as u64
}

/// A record split into its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Timestamp low 32 bits, or the value of a meta record.
    pub time_lo: u32,
    /// Record kind.
    pub kind: Kind,
    /// Region id (meta kind for meta records).
    pub region: u32,
    /// User payload (counter id for counter samples).
    pub payload: u32,
}

/// Splits a record into its fields.
#[inline]
pub const fn unpack_record(word: u64) -> Record {
    let tag = word as u32;
    Record {
        time_lo: (word >> TIME_SHIFT) as u32,
        kind: Kind::from_bits(tag),
        region: (tag >> REGION_SHIFT) & REGION_MASK,
        payload: (tag >> PAYLOAD_SHIFT) & PAYLOAD_MASK,
    }
}

/// Packs a lane's IDS word.
#[inline]
pub const fn pack_ids(smid: u32, warp: u32, flags: u32) -> u64 {
    ((LANE_MARK as u64) << IDS_MARK_SHIFT)
        | (((flags & IDS_FLAGS_MASK) as u64) << IDS_FLAGS_SHIFT)
        | (((warp & IDS_FIELD_MASK) as u64) << IDS_WARP_SHIFT)
        | (smid & IDS_FIELD_MASK) as u64
}

/// A lane's IDS word split into its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneIds {
    /// `%smid` of the leader at init.
    pub smid: u32,
    /// Leader's linear thread index / 32.
    pub warp: u32,
    /// [`lane_flags`].
    pub flags: u32,
}

/// Splits an IDS word; `None` if the lane never ran init (or the word is not an IDS word).
#[inline]
pub const fn unpack_ids(word: u64) -> Option<LaneIds> {
    if (word >> IDS_MARK_SHIFT) as u32 != LANE_MARK {
        return None;
    }
    Some(LaneIds {
        smid: word as u32 & IDS_FIELD_MASK,
        warp: (word >> IDS_WARP_SHIFT) as u32 & IDS_FIELD_MASK,
        flags: (word >> IDS_FLAGS_SHIFT) as u32 & IDS_FLAGS_MASK,
    })
}

/// Shift of the dropped count in the trailer count word (written is the low half).
pub const COUNT_DROPPED_SHIFT: u32 = 32;

/// Packs the trailer count word.
#[inline]
pub const fn pack_count(written: u32, dropped: u32) -> u64 {
    ((dropped as u64) << COUNT_DROPPED_SHIFT) | written as u64
}

/// Words in one lane segment.
#[inline]
pub const fn lane_stride(records_per_lane: u32, n_counters: u32) -> u64 {
    LANE_FIXED_WORDS as u64 + records_per_lane as u64 + n_counters as u64
}

/// A hash of every layout constant. Pinned per version by a test: change a constant and
/// you must bump [`FORMAT_VERSION`] and re-pin. [`CALIB_RECORDS`] is not one: it is how the
/// device measures the `CALIB` word, whose meaning (cycles of one record) a decoder reads
/// the same whatever it is.
pub const fn layout_fingerprint() -> u64 {
    let parts: [u64; 39] = [
        MAGIC,
        HEADER_FIXED_WORDS as u64,
        hdr::MAGIC as u64,
        hdr::VERSION as u64,
        hdr::LANES as u64,
        hdr::GROUPS as u64,
        hdr::GRID_XY as u64,
        hdr::GRID_Z as u64,
        hdr::STRIDE as u64,
        hdr::EPOCHS as u64,
        hdr::SYNC_REALTIME as u64,
        hdr::SYNC_MONOTONIC as u64,
        hdr::SYNC_GLOBALTIMER as u64,
        hdr::SYNC_ROUND_TRIP as u64,
        hdr::ASYNC_BITMAP as u64,
        header_flags::RING as u64,
        SYNC_SAMPLES_SHIFT as u64,
        lane::CALIB as u64,
        lane::START_GT as u64,
        lane::START_CLK as u64,
        lane::IDS as u64,
        lane::EVENTS as u64,
        lane::T_END_GT as u64,
        lane::T_END_CLK as u64,
        lane::T_COUNT as u64,
        lane::T_COUNTERS as u64,
        LANE_MARK as u64,
        IDS_MARK_SHIFT as u64 | (IDS_FLAGS_SHIFT as u64) << 8 | (IDS_WARP_SHIFT as u64) << 16,
        IDS_FIELD_MASK as u64,
        lane_flags::CLOCK as u64
            | (lane_flags::BLOCK_FENCE as u64) << 8
            | (lane_flags::RING as u64) << 16,
        KIND_BITS as u64,
        REGION_BITS as u64,
        PAYLOAD_BITS as u64,
        TIME_SHIFT as u64,
        Kind::Begin as u64
            | (Kind::End as u64) << 8
            | (Kind::Instant as u64) << 16
            | (Kind::Meta as u64) << 24,
        MetaKind::CounterSample as u64,
        TimerMode::Globaltimer as u64 | (TimerMode::Clock as u64) << 8,
        MAX_COUNTERS as u64 | (MAX_EPOCHS as u64) << 32,
        std::mem::size_of::<KernelArg>() as u64,
    ];
    fnv1a(&parts)
}

/// FNV-1a over the little-endian bytes of `parts`: the layout fingerprints' hash.
pub(crate) const fn fnv1a(parts: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < parts.len() {
        let mut b = 0;
        while b < 8 {
            h ^= (parts[i] >> (8 * b)) & 0xFF;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
            b += 1;
        }
        i += 1;
    }
    h
}

/// The kernel argument: how a lane finds its segment. Passed by value to the kernel as
/// `ikp::Arg` (same layout, `#[repr(C)]`, 40 bytes, generated into `ikp.cuh`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KernelArg {
    /// Device address of word 0 of the buffer.
    pub buf: u64,
    /// Word index of epoch 0's lane 0 segment (`header_words + lane_count`; the launch
    /// counters are the `lane_count` words before it).
    pub lane_base: u32,
    /// Words per lane segment.
    pub lane_stride: u32,
    /// Event records per lane.
    pub records_per_lane: u32,
    /// Groups (lanes) per block.
    pub groups_per_block: u32,
    /// Number of lanes; lanes at or past it do not record.
    pub lane_count: u32,
    /// Number of wait counters.
    pub n_counters: u32,
    /// Segments per lane: launches this buffer records (1: every launch writes epoch 0).
    pub epochs: u32,
    /// [`crate::stream::arg_flags`]; zero for a native buffer (it also keeps the struct a
    /// whole number of 8-byte words).
    pub flags: u32,
}

const _: () = assert!(std::mem::size_of::<KernelArg>() == 40);
const _: () = assert!(std::mem::align_of::<KernelArg>() == 8);
