//! The buffer header: what the host writes before launch and the decoder reads back.
//!
//! See the `# Format` section of [`crate::wire`] for the word layout. [`Layout`] is the
//! host's description of a launch; [`Layout::header_words`] encodes it and
//! [`Header::parse`] validates and decodes it, refusing anything that would make a reader
//! allocate or index beyond the buffer.

use crate::stream;
use crate::wire::{self, hdr, header_flags, Overflow, TimerMode};

/// What the host knows about an instrumented launch.
///
/// `Layout::default()` is one block of one lane with 64 records, globaltimer stamps,
/// drop-newest, one epoch, no names, no async regions and no clock sync: struct literals
/// name what they change and end in `..Layout::default()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Grid dimensions `(x, y, z)` in blocks.
    pub grid: [u32; 3],
    /// Lanes per block (warp groups, or 1).
    pub groups_per_block: u32,
    /// Event records each lane may write before it starts dropping.
    pub records_per_lane: u32,
    /// How the device takes timestamps.
    pub timer: TimerMode,
    /// Region names, indexed by region id.
    pub regions: Vec<String>,
    /// Wait-counter names, indexed by counter id.
    pub counters: Vec<String>,
    /// What a full lane does (a ring needs a power-of-two `records_per_lane`).
    pub overflow: Overflow,
    /// Launches the buffer records, one segment per lane each (at least 1).
    pub epochs: u32,
    /// Region ids recorded as async ranges (begin and end may be in different lanes; the
    /// payload is the token that pairs them). Each below `regions.len()`.
    pub async_regions: Vec<u32>,
    /// The host-clock mapping taken before launch, if any.
    pub clock_sync: Option<ClockSync>,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            grid: [1, 1, 1],
            groups_per_block: 1,
            records_per_lane: 64,
            timer: TimerMode::Globaltimer,
            regions: Vec::new(),
            counters: Vec::new(),
            overflow: Overflow::DropNewest,
            epochs: 1,
            async_regions: Vec::new(),
            clock_sync: None,
        }
    }
}

/// One reading of the host's clocks and the GPU's `%globaltimer` taken together (header
/// words 8..=11 of [`crate::wire`]): device time `g` is host realtime
/// `g - device_globaltimer_ns + host_realtime_ns`, within `round_trip_ns / 2`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockSync {
    /// Host `CLOCK_REALTIME`, ns since the Unix epoch (non-zero).
    pub host_realtime_ns: u64,
    /// Host `CLOCK_MONOTONIC`, ns, read with the realtime clock.
    pub host_monotonic_ns: u64,
    /// The GPU's `%globaltimer`, ns (non-zero).
    pub device_globaltimer_ns: u64,
    /// The kept reading's round trip, ns: the mapping's error is at most half of it.
    pub round_trip_ns: u32,
    /// Readings taken (the one with the shortest round trip was kept).
    pub samples: u32,
}

impl ClockSync {
    /// Host realtime ns of device globaltimer ns `g` (saturating at the ends of `u64`).
    pub fn device_to_realtime(&self, g: u64) -> u64 {
        map_clock(g, self.device_globaltimer_ns, self.host_realtime_ns)
    }

    /// Host monotonic ns of device globaltimer ns `g` (saturating at the ends of `u64`).
    pub fn device_to_monotonic(&self, g: u64) -> u64 {
        map_clock(g, self.device_globaltimer_ns, self.host_monotonic_ns)
    }
}

fn map_clock(g: u64, from: u64, to: u64) -> u64 {
    if g >= from {
        to.saturating_add(g - from)
    } else {
        to.saturating_sub(from - g)
    }
}

/// Why a layout or header is unusable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    /// Word 0 is not [`wire::MAGIC`].
    #[error("not an ikp buffer (bad magic {0:#018x})")]
    BadMagic(u64),
    /// A stream launch's buffer ([`crate::stream`]) read as a fixed one: its records left
    /// it while the kernel ran, for the stream file the host's drain wrote.
    #[error(
        "a stream launch's buffer, not a trace: its records went to the stream file (.ikps) \
         the host drained them into; decode that file"
    )]
    StreamBuffer,
    /// Written by a newer ikp.
    #[error(
        "buffer has wire format version {found}, this ikp reads up to {supported}: upgrade ikp"
    )]
    NewerVersion {
        /// Version in the buffer.
        found: u32,
        /// [`wire::FORMAT_VERSION`].
        supported: u32,
    },
    /// Version 0 never existed.
    #[error("buffer has invalid wire format version 0")]
    ZeroVersion,
    /// Written by an ikp before the current wire format (version 1 had no epochs, rings,
    /// async ranges or record cost; no release wrote it).
    #[error(
        "buffer has wire format version {found}, which this ikp no longer reads (it reads \
         version {supported}): record it again with this ikp's ikp.cuh"
    )]
    OlderVersion {
        /// Version in the buffer.
        found: u32,
        /// [`wire::FORMAT_VERSION`].
        supported: u32,
    },
    /// Fewer words than the header says it has.
    #[error("buffer is truncated: {need} words needed, {have} present")]
    Truncated {
        /// Words the header implies.
        need: u64,
        /// Words present.
        have: u64,
    },
    /// A field is out of its range.
    #[error("invalid header field {field}: {value} ({why})")]
    Field {
        /// Field name.
        field: &'static str,
        /// Its value.
        value: u64,
        /// What is wrong.
        why: &'static str,
    },
    /// The name table is not what the header says.
    #[error("invalid name table: {0}")]
    Names(&'static str),
}

fn field(field: &'static str, value: u64, why: &'static str) -> LayoutError {
    LayoutError::Field { field, value, why }
}

/// The first of `checks` (bad, field, value, why) that is bad, as [`LayoutError::Field`].
fn first_bad(checks: &[(bool, &'static str, u64, &'static str)]) -> Result<(), LayoutError> {
    match checks.iter().find(|c| c.0) {
        Some(&(_, name, value, why)) => Err(field(name, value, why)),
        None => Ok(()),
    }
}

impl Layout {
    /// Number of blocks in the grid.
    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&d| d as u64).product()
    }

    /// Number of lanes: blocks times groups per block.
    pub fn lane_count(&self) -> u64 {
        self.blocks() * self.groups_per_block as u64
    }

    /// Words per lane segment.
    pub fn lane_stride(&self) -> u64 {
        let n_counters = self.counters.len() as u32;
        if self.overflow.is_stream() {
            stream::lane_stride(self.records_per_lane, n_counters)
        } else {
            wire::lane_stride(self.records_per_lane, n_counters)
        }
    }

    /// Words of the async-region bitmap.
    fn bitmap_words(&self) -> u64 {
        (self.regions.len() as u64).div_ceil(64)
    }

    /// Whether region `id` is an async range.
    pub fn is_async(&self, id: u32) -> bool {
        self.async_regions.contains(&id)
    }

    fn names_blob(&self) -> Vec<u8> {
        let mut blob = Vec::new();
        for n in self.regions.iter().chain(&self.counters) {
            blob.extend_from_slice(n.as_bytes());
            blob.push(0);
        }
        blob
    }

    /// Checks every limit of [`crate::wire`].
    pub fn validate(&self) -> Result<(), LayoutError> {
        let (records, epochs) = (self.records_per_lane, self.epochs);
        // lane_count(), saturating: every row below is evaluated, so none may overflow.
        let lanes = self
            .grid
            .iter()
            .chain([&self.groups_per_block])
            .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
            .unwrap_or(u64::MAX);
        let stream_ring = !records.is_power_of_two() || records < stream::MIN_RING;
        let bad_async = self
            .async_regions
            .iter()
            .find(|&&r| r as usize >= self.regions.len());
        let bad_sync = self.clock_sync.is_some_and(|s| {
            s.host_realtime_ns == 0 || s.device_globaltimer_ns == 0 || s.samples == 0
        });
        let (n_regions, n_counters) = (self.regions.len() as u64, self.counters.len() as u64);
        #[rustfmt::skip]
        first_bad(&[
            (self.grid.contains(&0), "grid", 0, "every grid dimension must be at least 1"),
            (self.groups_per_block == 0, "groups_per_block", 0, "must be at least 1"),
            (lanes > wire::MAX_LANES as u64, "lane_count", lanes, "more lanes than the format allows"),
            (records == 0 || records > wire::MAX_RECORDS_PER_LANE, "records_per_lane", records as u64, "must be 1..=2^28"),
            (self.overflow == Overflow::Ring && !records.is_power_of_two(), "records_per_lane", records as u64, "a ring needs a power of two"),
            (self.overflow.is_stream() && stream_ring, "records_per_lane", records as u64, "a stream ring needs a power of two of at least 4"),
            (self.overflow.is_stream() && epochs != 1, "epochs", epochs as u64, "a stream launch records one launch"),
            (epochs == 0 || epochs > wire::MAX_EPOCHS, "epochs", epochs as u64, "must be 1..=65536"),
            (lanes.saturating_mul(epochs as u64) > wire::MAX_LANES as u64, "epochs", epochs as u64, "epochs x lanes is more segments than the format allows"),
            (bad_async.is_some(), "async_regions", bad_async.map_or(0, |&r| r as u64), "an async region must be one of the named regions"),
            (bad_sync, "clock_sync", 0, "a clock sync has non-zero host realtime, device time and samples"),
            (n_regions > wire::MAX_REGIONS as u64, "n_regions", n_regions, "at most 1024 regions"),
            (n_counters > wire::MAX_COUNTERS as u64, "n_counters", n_counters, "at most 256 counters"),
        ])?;
        if self
            .regions
            .iter()
            .chain(&self.counters)
            .any(|n| n.contains('\0'))
        {
            return Err(LayoutError::Names("a name contains a NUL byte"));
        }
        if self.names_blob().len() > wire::MAX_NAMES_BYTES as usize {
            return Err(LayoutError::Names("name table larger than 1 MiB"));
        }
        Ok(())
    }

    /// Words of the header including the async bitmap and the padded name table (= word
    /// index of the first launch counter).
    pub fn header_len(&self) -> u64 {
        wire::HEADER_FIXED_WORDS as u64
            + self.bitmap_words()
            + (self.names_blob().len() as u64).div_ceil(8)
    }

    /// Word index of epoch 0's lane 0 segment (after the launch counters).
    pub fn lane_base(&self) -> u64 {
        self.header_len() + self.lane_count()
    }

    /// Words of the whole buffer.
    pub fn buffer_words(&self) -> u64 {
        self.lane_base() + self.epochs as u64 * self.lane_count() * self.lane_stride()
    }

    /// Encodes the header (fixed words and name table).
    pub fn header_words(&self) -> Result<Vec<u64>, LayoutError> {
        self.validate()?;
        let blob = self.names_blob();
        let header_len = self.header_len();
        let mut w = vec![0u64; header_len as usize];
        let flags = match self.overflow {
            Overflow::DropNewest | Overflow::Stream => 0,
            Overflow::Ring => header_flags::RING as u64,
            Overflow::StreamWait => stream::header_flags::WAIT as u64,
        };
        let (magic, version) = if self.overflow.is_stream() {
            (stream::MAGIC, stream::VERSION)
        } else {
            (wire::MAGIC, wire::FORMAT_VERSION)
        };
        let hi = |v: u64| v << wire::HDR_HI_SHIFT;
        w[hdr::MAGIC] = magic;
        w[hdr::VERSION] = hi(header_len) | version as u64;
        w[hdr::LANES] = hi(self.records_per_lane as u64) | self.lane_count();
        w[hdr::GROUPS] = ((self.counters.len() as u64) << wire::HDR_COUNTERS_SHIFT)
            | (flags << wire::HDR_FLAGS_SHIFT)
            | ((self.timer as u64) << wire::HDR_TIMER_SHIFT)
            | self.groups_per_block as u64;
        w[hdr::GRID_XY] = hi(self.grid[1] as u64) | self.grid[0] as u64;
        w[hdr::GRID_Z] = hi(self.regions.len() as u64) | self.grid[2] as u64;
        w[hdr::STRIDE] = hi(blob.len() as u64) | self.lane_stride();
        w[hdr::EPOCHS] = self.epochs as u64;
        if let Some(s) = &self.clock_sync {
            w[hdr::SYNC_REALTIME] = s.host_realtime_ns;
            w[hdr::SYNC_MONOTONIC] = s.host_monotonic_ns;
            w[hdr::SYNC_GLOBALTIMER] = s.device_globaltimer_ns;
            w[hdr::SYNC_ROUND_TRIP] =
                ((s.samples as u64) << wire::SYNC_SAMPLES_SHIFT) | s.round_trip_ns as u64;
        }
        for &r in &self.async_regions {
            w[hdr::ASYNC_BITMAP + r as usize / 64] |= 1 << (r % 64);
        }
        let names = hdr::ASYNC_BITMAP + self.bitmap_words() as usize;
        for (i, chunk) in blob.chunks(8).enumerate() {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            w[names + i] = u64::from_le_bytes(b);
        }
        Ok(w)
    }

    /// The kernel argument for a buffer at device address `buf`.
    pub fn kernel_arg(&self, buf: u64) -> wire::KernelArg {
        wire::KernelArg {
            buf,
            lane_base: self.lane_base() as u32,
            lane_stride: self.lane_stride() as u32,
            records_per_lane: self.records_per_lane,
            groups_per_block: self.groups_per_block,
            lane_count: self.lane_count() as u32,
            n_counters: self.counters.len() as u32,
            epochs: self.epochs,
            flags: stream::arg_flags::STREAM * u32::from(self.overflow.is_stream()),
        }
    }
}

/// A validated header: the layout plus where lanes start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Version found in the buffer (at most [`wire::FORMAT_VERSION`]).
    pub version: u32,
    /// The launch layout, names included.
    pub layout: Layout,
    /// Word index of the first launch counter (= header words).
    pub counters_base: u64,
    /// Word index of epoch 0's lane 0 segment.
    pub lane_base: u64,
    /// Words per lane segment.
    pub lane_stride: u64,
}

impl Header {
    /// Decodes and validates the header of `words`, checking that every lane segment it
    /// declares lies inside `words`.
    pub fn parse(words: &[u64]) -> Result<Header, LayoutError> {
        Header::parse_as(words, false, true)
    }

    /// [`Header::parse`] of the header words alone (a buffer whose lane segments are
    /// elsewhere or of other lengths): everything but the buffer's length is checked.
    pub fn parse_header(words: &[u64]) -> Result<Header, LayoutError> {
        Header::parse_as(words, false, false)
    }

    /// [`Header::parse`] for a stream buffer ([`crate::stream`]), whose magic, version,
    /// flags and lane stride are the stream format's.
    pub fn parse_stream(words: &[u64]) -> Result<Header, LayoutError> {
        Header::parse_as(words, true, true)
    }

    /// [`Header::parse_stream`] of the header words alone (a stream file keeps the header
    /// without the lane segments): everything but the buffer's length is checked.
    pub fn parse_stream_header(words: &[u64]) -> Result<Header, LayoutError> {
        Header::parse_as(words, true, false)
    }

    fn parse_as(words: &[u64], streamed: bool, whole: bool) -> Result<Header, LayoutError> {
        use LayoutError::Names;
        let (magic, supported, known_flags) = if streamed {
            (stream::MAGIC, stream::VERSION, stream::header_flags::ALL)
        } else {
            (wire::MAGIC, wire::FORMAT_VERSION, header_flags::ALL)
        };
        let have = words.len() as u64;
        let need_fixed = wire::HEADER_FIXED_WORDS as u64;
        let truncated = |need| LayoutError::Truncated { need, have };
        if have == 0 {
            return Err(truncated(need_fixed));
        }
        if !streamed && words[hdr::MAGIC] == stream::MAGIC {
            return Err(LayoutError::StreamBuffer);
        }
        if words[hdr::MAGIC] != magic {
            return Err(LayoutError::BadMagic(words[hdr::MAGIC]));
        }
        if have < need_fixed {
            return Err(truncated(need_fixed));
        }
        let lo = |i: usize| words[i] as u32;
        let hi = |i: usize| (words[i] >> wire::HDR_HI_SHIFT) as u32;
        let version = lo(hdr::VERSION);
        if version == 0 {
            return Err(LayoutError::ZeroVersion);
        }
        if version < supported {
            return Err(LayoutError::OlderVersion {
                found: version,
                supported,
            });
        }
        if version > supported {
            return Err(LayoutError::NewerVersion {
                found: version,
                supported,
            });
        }
        let header_len = hi(hdr::VERSION) as u64;
        let lane_count = lo(hdr::LANES) as u64;
        let records_per_lane = hi(hdr::LANES);
        let groups_per_block = lo(hdr::GROUPS);
        let timer_id = (words[hdr::GROUPS] >> wire::HDR_TIMER_SHIFT) as u32 & 0xFF;
        let flags = (words[hdr::GROUPS] >> wire::HDR_FLAGS_SHIFT) as u32 & 0xFF;
        let n_counters = (words[hdr::GROUPS] >> wire::HDR_COUNTERS_SHIFT) as u32 & 0xFFFF;
        let grid = [lo(hdr::GRID_XY), hi(hdr::GRID_XY), lo(hdr::GRID_Z)];
        let n_regions = hi(hdr::GRID_Z);
        let lane_stride = lo(hdr::STRIDE) as u64;
        let names_bytes = hi(hdr::STRIDE) as u64;
        let timer = TimerMode::from_id(timer_id);
        let epochs = lo(hdr::EPOCHS);
        let bitmap_words = (n_regions as u64).div_ceil(64);
        let header_fits = header_len == need_fixed + bitmap_words + names_bytes.div_ceil(8);
        #[rustfmt::skip]
        first_bad(&[
            (timer.is_none(), "timer", timer_id as u64, "unknown timer mode"),
            (flags & !known_flags != 0, "flags", flags as u64, "a header flag this version does not define"),
            (hi(hdr::EPOCHS) != 0, "reserved", words[hdr::EPOCHS], "the high half of word 7 must be zero"),
            (epochs == 0 || epochs > wire::MAX_EPOCHS, "epochs", epochs as u64, "must be 1..=65536"),
            (names_bytes > wire::MAX_NAMES_BYTES as u64, "names_bytes", names_bytes, "name table larger than 1 MiB"),
            (n_regions > wire::MAX_REGIONS, "n_regions", n_regions as u64, "at most 1024 regions"),
            (!header_fits, "header_words", header_len, "does not match the async bitmap and name table sizes"),
        ])?;
        if have < header_len {
            return Err(truncated(header_len));
        }
        let expected_stride = if streamed {
            stream::lane_stride(records_per_lane, n_counters)
        } else {
            wire::lane_stride(records_per_lane, n_counters)
        };
        let blocks = grid.iter().try_fold(1u64, |b, &d| b.checked_mul(d as u64));
        // In u128: epochs x lanes x stride can pass 2^64 in a hostile header.
        let need = (header_len as u128
            + lane_count as u128
            + epochs as u128 * lane_count as u128 * lane_stride as u128)
            .min(u64::MAX as u128) as u64;
        let records = records_per_lane;
        #[rustfmt::skip]
        first_bad(&[
            (n_counters > wire::MAX_COUNTERS, "n_counters", n_counters as u64, "at most 256 counters"),
            (records == 0 || records > wire::MAX_RECORDS_PER_LANE, "records_per_lane", records as u64, "must be 1..=2^28"),
            (lane_stride != expected_stride, "lane_stride", lane_stride, "does not match records_per_lane and n_counters"),
            (groups_per_block == 0, "groups_per_block", 0, "must be at least 1"),
            (grid.contains(&0), "grid", 0, "every grid dimension must be at least 1"),
            (blocks.and_then(|b| b.checked_mul(groups_per_block as u64)) != Some(lane_count), "lane_count", lane_count, "is not grid blocks x groups_per_block"),
            // Exclusive with the Truncated error below, which it therefore never hides.
            (whole && have > need, "buffer length", have, "longer than the header declares"),
        ])?;
        if whole && have < need {
            return Err(truncated(need));
        }
        let clock_sync = match (
            words[hdr::SYNC_REALTIME],
            words[hdr::SYNC_MONOTONIC],
            words[hdr::SYNC_GLOBALTIMER],
            words[hdr::SYNC_ROUND_TRIP],
        ) {
            (0, 0, 0, 0) => None,
            (realtime, monotonic, gt, rt) => Some(ClockSync {
                host_realtime_ns: realtime,
                host_monotonic_ns: monotonic,
                device_globaltimer_ns: gt,
                round_trip_ns: rt as u32,
                samples: (rt >> wire::SYNC_SAMPLES_SHIFT) as u32,
            }),
        };
        // Async bitmap: bits past n_regions must be clear.
        let async_regions: Vec<u32> = (0..bitmap_words as u32 * 64)
            .filter(|&r| words[hdr::ASYNC_BITMAP + r as usize / 64] >> (r % 64) & 1 == 1)
            .collect();
        if async_regions.last().is_some_and(|&r| r >= n_regions) {
            return Err(Names("the async bitmap marks a region past n_regions"));
        }
        // Name table.
        let names_at = hdr::ASYNC_BITMAP + bitmap_words as usize;
        let mut blob = Vec::with_capacity(names_bytes as usize);
        for w in &words[names_at..header_len as usize] {
            blob.extend_from_slice(&w.to_le_bytes());
        }
        if blob[names_bytes as usize..].iter().any(|&b| b != 0) {
            return Err(Names("padding after the name table is not zero"));
        }
        blob.truncate(names_bytes as usize);
        let n_names = n_regions as usize + n_counters as usize;
        if blob.last().is_some_and(|&b| b != 0) {
            return Err(Names("last name is not NUL-terminated"));
        }
        let mut names = Vec::with_capacity(n_names);
        if !blob.is_empty() {
            for part in blob[..blob.len() - 1].split(|&b| b == 0) {
                let s = std::str::from_utf8(part).map_err(|_| Names("a name is not UTF-8"))?;
                names.push(s.to_owned());
            }
        }
        if names.len() != n_names {
            return Err(Names("name count differs from n_regions + n_counters"));
        }
        let counters = names.split_off(n_regions as usize);
        let layout = Layout {
            grid,
            groups_per_block,
            records_per_lane,
            timer: timer.expect("checked above"),
            regions: names,
            counters,
            overflow: match (streamed, flags) {
                (true, f) if f & stream::header_flags::WAIT != 0 => Overflow::StreamWait,
                (true, _) => Overflow::Stream,
                (false, f) if f & header_flags::RING != 0 => Overflow::Ring,
                (false, _) => Overflow::DropNewest,
            },
            epochs,
            async_regions,
            clock_sync,
        };
        layout.validate()?;
        Ok(Header {
            version,
            layout,
            counters_base: header_len,
            lane_base: header_len + lane_count,
            lane_stride,
        })
    }

    /// Word range of lane `lane`'s segment in epoch 0 (the whole buffer's lanes when it
    /// records one launch).
    pub fn lane_range(&self, lane: u64) -> std::ops::Range<usize> {
        self.segment_range(0, lane)
    }

    /// Word range of lane `lane`'s segment in epoch `epoch`.
    pub fn segment_range(&self, epoch: u32, lane: u64) -> std::ops::Range<usize> {
        let seg = epoch as u64 * self.layout.lane_count() + lane;
        let start = (self.lane_base + seg * self.lane_stride) as usize;
        start..start + self.lane_stride as usize
    }

    /// Word index of lane `lane`'s launch counter.
    pub fn launch_counter(&self, lane: u64) -> usize {
        (self.counters_base + lane) as usize
    }
}
