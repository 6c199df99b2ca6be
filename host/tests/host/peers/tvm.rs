//! TVM TIRx's `CudaProfiler` (`tvm.tirx.bench.CudaProfiler`, also the record warpscope
//! decodes and FlashInfer wrote before its SM ids), re-implemented from apache/tvm
//! `docs/tirx/native_basics/cuda/profiling.rst` (commit ccdb898), sections "What each call
//! wraps" and "Usage notes and caveats": the device code each method lowers to.
//!
//! Written from that page alone: no constant or function of `ikp_device` is used here, so
//! a wrong shift in ikp's packer or decoder shows up as a disagreement with this one.

/// The per-thread state `init(group_id)` seeds: the running tag (`BLOCK_GROUP_IDX << 12`)
/// and the write cursor (`1 + BLOCK_GROUP_IDX`), advanced by `write_stride` per record.
/// One per lane: this is its leader thread, the only one that stores.
#[derive(Clone, Copy, Debug)]
pub struct Profiler {
    tag: u32,
    offset: usize,
    stride: usize,
}

impl Profiler {
    /// `CudaProfiler(prof, write_stride=num_blocks * num_groups, num_groups=num_groups)`
    /// then `init(group)` in block `block`: block 0 also writes the header
    /// `num_groups << 32 | num_blocks` at slot 0.
    pub fn init(buf: &mut [u64], num_blocks: u32, num_groups: u32, block: u32, group: u32) -> Self {
        if block == 0 {
            buf[0] = (num_groups as u64) << 32 | num_blocks as u64;
        }
        let block_group_idx = block * num_groups + group;
        Profiler {
            tag: block_group_idx << 12,
            offset: 1 + block_group_idx as usize,
            stride: (num_blocks * num_groups) as usize,
        }
    }

    /// Every record: `(globaltimer_lo << 32) | (tag | event_bits)` at the cursor, then the
    /// cursor moves by the stride.
    fn record(&mut self, buf: &mut [u64], event_bits: u32, globaltimer_lo: u32) {
        buf[self.offset] = (globaltimer_lo as u64) << 32 | (self.tag | event_bits) as u64;
        self.offset += self.stride;
    }

    /// `start(event)`: `event_bits = (event << 2) | 0`.
    pub fn start(&mut self, buf: &mut [u64], event: u32, globaltimer_lo: u32) {
        self.record(buf, event << 2, globaltimer_lo);
    }

    /// `end(event)`: `| 1`.
    pub fn end(&mut self, buf: &mut [u64], event: u32, globaltimer_lo: u32) {
        self.record(buf, event << 2 | 1, globaltimer_lo);
    }

    /// An instant: event type 2, "reserved in the wire format and understood by the
    /// decoder". No `CudaProfiler` method writes one, so the page gives no device code for
    /// it; it is written as the page says every record is (store, then advance). (FlashInfer
    /// before its SM ids, commit 40db3fa, wrote instants without advancing.)
    pub fn instant(&mut self, buf: &mut [u64], event: u32, globaltimer_lo: u32) {
        self.record(buf, event << 2 | 2, globaltimer_lo);
    }

    /// `finalize()`: writes `0x3` (event 0, type 3), the lane's terminal record.
    pub fn finalize(&mut self, buf: &mut [u64], globaltimer_lo: u32) {
        self.record(buf, 0x3, globaltimer_lo);
    }
}
