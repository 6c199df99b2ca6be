//! yao-jz/intra-kernel-profiler's recorder and host session, re-implemented from
//! `include/intra_kernel_profiler/trace/{event.cuh, device_ctx.cuh, host_session.hpp}`
//! (commit b22ad76), and the dump file ikp reads (`ikp_host::decode::yaojz`).

/// `HostSession` after `init(cap, grid_x, threads_per_block)`: the device buffers.
#[derive(Clone, Debug)]
pub struct Session {
    pub cap: u32,
    pub blocks: u32,
    pub warps_per_block: u32,
    /// `blocks * warps_per_block * cap` events of 16 bytes.
    pub events: Vec<u8>,
    /// One count per warp slot.
    pub counters: Vec<u32>,
}

impl Session {
    /// `init` + `reset`: the counters are zeroed, the events are not (`cudaMalloc`
    /// memory): they start as `junk`'s bytes.
    pub fn init(cap: u32, grid_x: u32, threads_per_block: u32, junk: &mut super::Rng) -> Self {
        assert!(cap.is_power_of_two());
        let wpb = threads_per_block.div_ceil(32);
        let slots = (grid_x * wpb) as usize;
        let events = (0..slots * cap as usize * 16)
            .map(|_| junk.next() as u8)
            .collect();
        Session {
            cap,
            blocks: grid_x,
            warps_per_block: wpb,
            events,
            counters: vec![0; slots],
        }
    }

    /// The dump file (`ikp_host::decode::yaojz`, `# The dump file ikp reads`).
    pub fn dump(&self) -> Vec<u8> {
        let mut f = Vec::with_capacity(self.events.len() + 64);
        f.extend_from_slice(b"YJZRING\0");
        for v in [1, self.cap, self.blocks, self.warps_per_block] {
            f.extend_from_slice(&u32::to_le_bytes(v));
        }
        for c in &self.counters {
            f.extend_from_slice(&c.to_le_bytes());
        }
        while f.len() % 16 != 0 {
            f.push(0);
        }
        f.extend_from_slice(&self.events);
        f
    }
}

/// `pack_warp_smid`.
pub fn pack_warp_smid(warp: u16, smid: u16) -> u16 {
    (warp & 0x3F) | ((smid & 0x3FF) << 6)
}

/// `WarpContext<CAP, WARPS_PER_BLOCK>` of one warp (its leader lane).
#[derive(Clone, Copy, Debug)]
pub struct Warp {
    base: u32,
    cnt: u32,
    slot: u32,
    info: u32,
    mask: u32,
}

impl Warp {
    /// `init()` in warp `warp` of block `block` on SM `smid`.
    pub fn init(cap: u32, warps_per_block: u32, block: u32, warp: u32, smid: u32) -> Self {
        let slot = block * warps_per_block + warp;
        let packed = pack_warp_smid(warp as u16, smid as u16);
        Warp {
            base: slot * cap,
            cnt: 0,
            slot,
            info: block | (packed as u32) << 16,
            mask: cap - 1,
        }
    }

    /// `record(buf, id, type)` at `%globaltimer` = `ts`: one 16-byte vector store of
    /// `{ts lo, ts hi, id | type << 16, info}`.
    pub fn record(&mut self, s: &mut Session, id: u16, kind: u16, ts: u64) {
        let idx = (self.base + (self.cnt & self.mask)) as usize;
        let words = [
            ts as u32,
            (ts >> 32) as u32,
            id as u32 | (kind as u32) << 16,
            self.info,
        ];
        for (k, w) in words.iter().enumerate() {
            s.events[idx * 16 + 4 * k..][..4].copy_from_slice(&w.to_le_bytes());
        }
        self.cnt = self.cnt.wrapping_add(1);
    }

    /// `flush(buf)`.
    pub fn flush(&self, s: &mut Session) {
        s.counters[self.slot as usize] = self.cnt;
    }
}

/// The records `HostSession::write_trace` keeps for warp slot `slot`, in its order:
/// `(ts, id, type)`.
pub fn kept(s: &Session, slot: usize) -> Vec<(u64, u16, u16)> {
    let (cap, cnt) = (s.cap, s.counters[slot]);
    let n = cnt.min(cap);
    let start = if cnt > cap { cnt & (cap - 1) } else { 0 };
    (0..n)
        .map(|i| {
            let idx = slot * cap as usize + ((start + i) & (cap - 1)) as usize;
            let e = &s.events[idx * 16..][..16];
            let u = |k: usize| u16::from_le_bytes([e[k], e[k + 1]]);
            (u64::from_le_bytes(e[..8].try_into().unwrap()), u(8), u(10))
        })
        .collect()
}
