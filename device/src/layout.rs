//! The buffer header: what the host writes before launch and the decoder reads back.
//!
//! See the `# Format` section of [`crate::wire`] for the word layout. [`Layout`] is the
//! host's description of a launch; [`Layout::header_words`] encodes it and
//! [`Header::parse`] validates and decodes it, refusing anything that would make a reader
//! allocate or index beyond the buffer.

use crate::wire::{self, hdr, TimerMode};

/// What the host knows about an instrumented launch.
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
}

/// Why a layout or header is unusable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    /// Word 0 is not [`wire::MAGIC`].
    #[error("not an ikp buffer (bad magic {0:#018x})")]
    BadMagic(u64),
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
        wire::lane_stride(self.records_per_lane, self.counters.len() as u32)
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
        if self.grid.contains(&0) {
            return Err(field("grid", 0, "every grid dimension must be at least 1"));
        }
        if self.groups_per_block == 0 {
            return Err(field("groups_per_block", 0, "must be at least 1"));
        }
        if self.lane_count() > wire::MAX_LANES as u64 {
            return Err(field(
                "lane_count",
                self.lane_count(),
                "more lanes than the format allows",
            ));
        }
        if self.records_per_lane == 0 || self.records_per_lane > wire::MAX_RECORDS_PER_LANE {
            return Err(field(
                "records_per_lane",
                self.records_per_lane as u64,
                "must be 1..=2^28",
            ));
        }
        if self.regions.len() > wire::MAX_REGIONS as usize {
            return Err(field(
                "n_regions",
                self.regions.len() as u64,
                "at most 1024 regions",
            ));
        }
        if self.counters.len() > wire::MAX_COUNTERS as usize {
            return Err(field(
                "n_counters",
                self.counters.len() as u64,
                "at most 256 counters",
            ));
        }
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

    /// Words of the header including the padded name table (= word index of lane 0).
    pub fn header_len(&self) -> u64 {
        wire::HEADER_FIXED_WORDS as u64 + (self.names_blob().len() as u64).div_ceil(8)
    }

    /// Words of the whole buffer.
    pub fn buffer_words(&self) -> u64 {
        self.header_len() + self.lane_count() * self.lane_stride()
    }

    /// Encodes the header (fixed words and name table).
    pub fn header_words(&self) -> Result<Vec<u64>, LayoutError> {
        self.validate()?;
        let blob = self.names_blob();
        let header_len = self.header_len();
        let mut w = vec![0u64; header_len as usize];
        w[hdr::MAGIC] = wire::MAGIC;
        w[hdr::VERSION] = (header_len << 32) | wire::FORMAT_VERSION as u64;
        w[hdr::LANES] = ((self.records_per_lane as u64) << 32) | self.lane_count();
        w[hdr::GROUPS] = ((self.counters.len() as u64) << 48)
            | ((self.timer as u64) << 32)
            | self.groups_per_block as u64;
        w[hdr::GRID_XY] = ((self.grid[1] as u64) << 32) | self.grid[0] as u64;
        w[hdr::GRID_Z] = ((self.regions.len() as u64) << 32) | self.grid[2] as u64;
        w[hdr::STRIDE] = ((blob.len() as u64) << 32) | self.lane_stride();
        for (i, chunk) in blob.chunks(8).enumerate() {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            w[hdr::NAMES + i] = u64::from_le_bytes(b);
        }
        Ok(w)
    }

    /// The kernel argument for a buffer at device address `buf`.
    pub fn kernel_arg(&self, buf: u64) -> wire::KernelArg {
        wire::KernelArg {
            buf,
            lane_base: self.header_len() as u32,
            lane_stride: self.lane_stride() as u32,
            records_per_lane: self.records_per_lane,
            groups_per_block: self.groups_per_block,
            lane_count: self.lane_count() as u32,
            n_counters: self.counters.len() as u32,
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
    /// Word index of lane 0.
    pub lane_base: u64,
    /// Words per lane segment.
    pub lane_stride: u64,
}

impl Header {
    /// Decodes and validates the header of `words`, checking that every lane segment it
    /// declares lies inside `words`.
    pub fn parse(words: &[u64]) -> Result<Header, LayoutError> {
        let have = words.len() as u64;
        let need_fixed = wire::HEADER_FIXED_WORDS as u64;
        if have == 0 {
            return Err(LayoutError::Truncated {
                need: need_fixed,
                have,
            });
        }
        if words[hdr::MAGIC] != wire::MAGIC {
            return Err(LayoutError::BadMagic(words[hdr::MAGIC]));
        }
        if have < need_fixed {
            return Err(LayoutError::Truncated {
                need: need_fixed,
                have,
            });
        }
        let lo = |i: usize| words[i] as u32;
        let hi = |i: usize| (words[i] >> 32) as u32;
        let version = lo(hdr::VERSION);
        if version == 0 {
            return Err(LayoutError::ZeroVersion);
        }
        if version > wire::FORMAT_VERSION {
            return Err(LayoutError::NewerVersion {
                found: version,
                supported: wire::FORMAT_VERSION,
            });
        }
        let header_len = hi(hdr::VERSION) as u64;
        let lane_count = lo(hdr::LANES) as u64;
        let records_per_lane = hi(hdr::LANES);
        let groups_per_block = lo(hdr::GROUPS);
        let timer_id = hi(hdr::GROUPS) & 0xFF;
        let flags = (hi(hdr::GROUPS) >> 8) & 0xFF;
        let n_counters = hi(hdr::GROUPS) >> 16;
        let grid = [lo(hdr::GRID_XY), hi(hdr::GRID_XY), lo(hdr::GRID_Z)];
        let n_regions = hi(hdr::GRID_Z);
        let lane_stride = lo(hdr::STRIDE) as u64;
        let names_bytes = hi(hdr::STRIDE) as u64;

        let timer = TimerMode::from_id(timer_id).ok_or(field(
            "timer",
            timer_id as u64,
            "unknown timer mode",
        ))?;
        if flags != 0 {
            return Err(field(
                "flags",
                flags as u64,
                "no header flags are defined in v1",
            ));
        }
        if words[hdr::RESERVED] != 0 {
            return Err(field(
                "reserved",
                words[hdr::RESERVED],
                "must be zero in v1",
            ));
        }
        if names_bytes > wire::MAX_NAMES_BYTES as u64 {
            return Err(field(
                "names_bytes",
                names_bytes,
                "name table larger than 1 MiB",
            ));
        }
        if header_len != need_fixed + names_bytes.div_ceil(8) {
            return Err(field(
                "header_words",
                header_len,
                "does not match the name table size",
            ));
        }
        if n_counters > wire::MAX_COUNTERS {
            return Err(field(
                "n_counters",
                n_counters as u64,
                "at most 256 counters",
            ));
        }
        // Checked before the name vector is sized from it (found by fuzzing: a 4 M
        // region count in an 864-byte buffer allocated 99 MB).
        if n_regions > wire::MAX_REGIONS {
            return Err(field("n_regions", n_regions as u64, "at most 1024 regions"));
        }
        if records_per_lane == 0 || records_per_lane > wire::MAX_RECORDS_PER_LANE {
            return Err(field(
                "records_per_lane",
                records_per_lane as u64,
                "must be 1..=2^28",
            ));
        }
        if lane_stride != wire::lane_stride(records_per_lane, n_counters) {
            return Err(field(
                "lane_stride",
                lane_stride,
                "does not match records_per_lane and n_counters",
            ));
        }
        if groups_per_block == 0 {
            return Err(field("groups_per_block", 0, "must be at least 1"));
        }
        if grid.contains(&0) {
            return Err(field("grid", 0, "every grid dimension must be at least 1"));
        }
        let blocks = grid.iter().map(|&d| d as u64).product::<u64>();
        if blocks.checked_mul(groups_per_block as u64) != Some(lane_count) {
            return Err(field(
                "lane_count",
                lane_count,
                "is not grid blocks x groups_per_block",
            ));
        }
        let need = header_len + lane_count * lane_stride;
        if have < need {
            return Err(LayoutError::Truncated { need, have });
        }
        if have > need {
            return Err(field(
                "buffer length",
                have,
                "longer than the header declares",
            ));
        }
        // Name table.
        let mut blob = Vec::with_capacity(names_bytes as usize);
        for w in &words[hdr::NAMES..header_len as usize] {
            blob.extend_from_slice(&w.to_le_bytes());
        }
        if blob[names_bytes as usize..].iter().any(|&b| b != 0) {
            return Err(LayoutError::Names(
                "padding after the name table is not zero",
            ));
        }
        blob.truncate(names_bytes as usize);
        let n_names = n_regions as usize + n_counters as usize;
        if blob.last().is_some_and(|&b| b != 0) {
            return Err(LayoutError::Names("last name is not NUL-terminated"));
        }
        let mut names = Vec::with_capacity(n_names);
        if !blob.is_empty() {
            for part in blob[..blob.len() - 1].split(|&b| b == 0) {
                let s = std::str::from_utf8(part)
                    .map_err(|_| LayoutError::Names("a name is not UTF-8"))?;
                names.push(s.to_owned());
            }
        }
        if names.len() != n_names {
            return Err(LayoutError::Names(
                "name count differs from n_regions + n_counters",
            ));
        }
        let counters = names.split_off(n_regions as usize);
        let layout = Layout {
            grid,
            groups_per_block,
            records_per_lane,
            timer,
            regions: names,
            counters,
        };
        layout.validate()?;
        Ok(Header {
            version,
            layout,
            lane_base: header_len,
            lane_stride,
        })
    }

    /// Word range of lane `lane`'s segment.
    pub fn lane_range(&self, lane: u64) -> std::ops::Range<usize> {
        let start = (self.lane_base + lane * self.lane_stride) as usize;
        start..start + self.lane_stride as usize
    }
}
