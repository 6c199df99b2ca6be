//! The profiler of Mirage's persistent kernel (MPK), re-implemented from
//! mirage-project/mirage `include/mirage/persistent_kernel/profiler.h` (commit de8745d):
//! `encode_tag`, `make_event_tag_{start,end,instant}`, `ProfilerEntry`, `PROFILER_INIT` and
//! `PROFILER_EVENT_{START,END,INSTANT}`. The persistent kernel
//! (`include/mirage/persistent_kernel/persistent_kernel.cuh`, same commit) calls
//! `PROFILER_INIT(buffer, 0, 1, ..)` (one group) and passes the worker's `task_counter`
//! as the event number; `python/mirage/mpk/profiler_persistent.py` (`decode_tag`) reads
//! the bits back.
//!
//! Written from those files alone: no constant or function of `ikp_device` is used here.

/// `ProfilerEntry::raw`: `{nblocks, ngroups}` or `{tag, delta_time}`, little-endian.
fn raw(lo: u32, hi: u32) -> u64 {
    (hi as u64) << 32 | lo as u64
}

/// `encode_tag(block_group_idx, event_idx, event_type)`: shifts 11, 2 and 0.
pub fn encode_tag(block_group_idx: u32, event_idx: u32, event_type: u32) -> u32 {
    (block_group_idx << 11) | (event_idx << 2) | event_type
}

/// `make_event_tag_*(base_tag, event_id, event_no)`: the event number at bit 19, unmasked
/// 32-bit arithmetic (bits shifted past 31 are lost).
pub fn make_event_tag(base_tag: u32, event_id: u32, event_no: u32, event_type: u32) -> u32 {
    base_tag | (event_id << 2) | (event_no << 19) | event_type
}

/// The closure fields `PROFILER_INIT` sets, for the write thread (the lane's leader).
#[derive(Clone, Copy, Debug)]
pub struct Closure {
    write_ptr: usize,
    write_stride: usize,
    tag_base: u32,
}

impl Closure {
    /// `PROFILER_INIT(buffer, group_idx, num_groups, ..)` in block `block_idx` of
    /// `num_blocks`: block 0 writes the header; the write pointer starts at
    /// `1 + block_idx * num_groups + group_idx` and moves by `num_blocks * num_groups`;
    /// the tag base is `encode_tag(block_idx * num_groups + group_idx, 0, 0)`.
    pub fn init(
        buf: &mut [u64],
        num_blocks: u32,
        num_groups: u32,
        block_idx: u32,
        group_idx: u32,
    ) -> Self {
        if block_idx == 0 {
            buf[0] = raw(num_blocks, num_groups);
        }
        let block_group_idx = block_idx * num_groups + group_idx;
        Closure {
            write_ptr: 1 + block_group_idx as usize,
            write_stride: (num_blocks * num_groups) as usize,
            tag_base: encode_tag(block_group_idx, 0, 0),
        }
    }

    fn store(&self, buf: &mut [u64], event: u32, event_no: u32, ty: u32, timestamp: u32) {
        let tag = make_event_tag(self.tag_base, event, event_no, ty);
        buf[self.write_ptr] = raw(tag, timestamp);
    }

    /// `PROFILER_EVENT_START(event, event_no)`: `EVENT_BEGIN` (0), then the pointer moves.
    pub fn event_start(&mut self, buf: &mut [u64], event: u32, event_no: u32, timestamp: u32) {
        self.store(buf, event, event_no, 0, timestamp);
        self.write_ptr += self.write_stride;
    }

    /// `PROFILER_EVENT_END(event, event_no)`: `EVENT_END` (1), then the pointer moves.
    pub fn event_end(&mut self, buf: &mut [u64], event: u32, event_no: u32, timestamp: u32) {
        self.store(buf, event, event_no, 1, timestamp);
        self.write_ptr += self.write_stride;
    }

    /// `PROFILER_EVENT_INSTANT(event, event_no)`: `EVENT_INSTANT` (2), and the pointer
    /// does not move: the lane's next record lands on it.
    pub fn event_instant(&mut self, buf: &mut [u64], event: u32, event_no: u32, timestamp: u32) {
        self.store(buf, event, event_no, 2, timestamp);
    }
}
