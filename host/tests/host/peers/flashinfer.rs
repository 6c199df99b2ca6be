//! FlashInfer's profiler with SM ids, re-implemented from flashinfer-ai/flashinfer
//! `include/flashinfer/profiler.cuh` (commit fb28d72; the SM id entered the tag in
//! 238f1d2, PR #1305): `encode_tag`, `ProfilerEntry`, `PROFILER_INIT` and
//! `PROFILER_EVENT_{START,END,INSTANT}`. Its exporter, `flashinfer/profiler/__init__.py`
//! (`decode_tag`) at the same commit, reads the same bits back.
//!
//! Written from those files alone: no constant or function of `ikp_device` is used here.

/// `ProfilerEntry::raw`: a little-endian union of `{nblocks, ngroups}` (the header) or
/// `{tag, delta_time}` (a record), so the second field is the high half.
fn raw(lo: u32, hi: u32) -> u64 {
    (hi as u64) << 32 | lo as u64
}

/// `encode_tag(sm_id, block_id, event_idx, event_type)`: shifts 24, 12, 2 and 0, unmasked
/// 32-bit arithmetic.
pub fn encode_tag(sm_id: u32, block_id: u32, event_idx: u32, event_type: u32) -> u32 {
    (sm_id << 24) | (block_id << 12) | (event_idx << 2) | event_type
}

/// The closure fields `PROFILER_INIT` sets, for the write thread (the lane's leader).
#[derive(Clone, Copy, Debug)]
pub struct Closure {
    write_ptr: usize,
    write_stride: usize,
    tag_base: u32,
}

impl Closure {
    /// `PROFILER_INIT(params, .., group_idx, num_groups, ..)` in block `block_idx` (the
    /// linear `get_block_idx()`) of `num_blocks`, on SM `smid`: block 0 writes the header;
    /// the write pointer starts at `1 + block_idx * num_groups + group_idx` and moves by
    /// `num_blocks * num_groups`; the tag base carries the SM and the block index (not
    /// the group).
    pub fn init(
        buf: &mut [u64],
        num_blocks: u32,
        num_groups: u32,
        block_idx: u32,
        group_idx: u32,
        smid: u32,
    ) -> Self {
        if block_idx == 0 {
            buf[0] = raw(num_blocks, num_groups);
        }
        Closure {
            write_ptr: 1 + (block_idx * num_groups + group_idx) as usize,
            write_stride: (num_blocks * num_groups) as usize,
            tag_base: encode_tag(smid, block_idx, 0, 0),
        }
    }

    fn store(&self, buf: &mut [u64], event: u32, event_type: u32, timestamp: u32) {
        let tag = self.tag_base | (event << 2) | event_type;
        buf[self.write_ptr] = raw(tag, timestamp);
    }

    /// `PROFILER_EVENT_START(closure, event)`: `EVENT_BEGIN` (0), then the pointer moves.
    pub fn event_start(&mut self, buf: &mut [u64], event: u32, timestamp: u32) {
        self.store(buf, event, 0, timestamp);
        self.write_ptr += self.write_stride;
    }

    /// `PROFILER_EVENT_END(closure, event)`: `EVENT_END` (1), then the pointer moves.
    pub fn event_end(&mut self, buf: &mut [u64], event: u32, timestamp: u32) {
        self.store(buf, event, 1, timestamp);
        self.write_ptr += self.write_stride;
    }

    /// `PROFILER_EVENT_INSTANT(closure, event)`: `EVENT_INSTANT` (2), and the pointer does
    /// not move: the lane's next record lands on it.
    pub fn event_instant(&mut self, buf: &mut [u64], event: u32, timestamp: u32) {
        self.store(buf, event, 2, timestamp);
    }
}
