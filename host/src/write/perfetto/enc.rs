//! Hand-written protobuf encoding of the hot packets (slice begin / end, instants, counter
//! values), into a reusable byte buffer, with the varint helpers every packet uses; the
//! packets written once per track or sequence are [`cold`]'s. The field order of a lane
//! event packet is its own (the writer's `# Format`, item 3, "Field order"), valid
//! protobuf in any order; the tests decode the output with the types of
//! `host/tests/perfetto-schema` (imported as `perfetto_protos`).
//!
//! Field numbers are from Perfetto's protos (github.com/google/perfetto):
//! `protos/perfetto/trace/trace.proto`, `trace/trace_packet.proto`,
//! `trace/track_event/track_event.proto`, `trace/track_event/debug_annotation.proto` and
//! `trace/interned_data/interned_data.proto`.

pub(crate) mod cold;

/// Wire type of varint fields.
const VARINT: u8 = 0;
/// Wire type of length-delimited fields.
const LEN: u8 = 2;

/// A field key (tag) that fits in one byte (field numbers 1..=15).
const fn key(field: u8, wire: u8) -> u8 {
    (field << 3) | wire
}

/// `Trace.packet` (field 1, length-delimited).
pub(crate) const TRACE_PACKET: u8 = key(1, LEN);

/// `TracePacket.timestamp` (8).
const PKT_TIMESTAMP: u8 = key(8, VARINT);
/// `TracePacket.trusted_packet_sequence_id` (10).
const PKT_SEQ_ID: u8 = key(10, VARINT);
/// `TracePacket.track_event` (11).
const PKT_TRACK_EVENT: u8 = key(11, LEN);
/// `TracePacket.interned_data` (12).
const PKT_INTERNED: u8 = key(12, LEN);
/// `TracePacket.sequence_flags` (13).
const PKT_SEQ_FLAGS: u8 = key(13, VARINT);

/// `TrackEvent.category_iids` (3).
const TE_CATEGORY_IIDS: u8 = key(3, VARINT);
/// `TrackEvent.debug_annotations` (4).
const TE_DEBUG_ANNOTATIONS: u8 = key(4, LEN);
/// `TrackEvent.type` (9).
const TE_TYPE: u8 = key(9, VARINT);
/// `TrackEvent.name_iid` (10).
const TE_NAME_IID: u8 = key(10, VARINT);
/// `TrackEvent.track_uuid` (11).
const TE_TRACK_UUID: u8 = key(11, VARINT);
/// `TrackEvent.counter_value` (30): a two-byte key.
const TE_COUNTER_VALUE: [u8; 2] = [0xF0, 0x01];
/// `TrackEvent.flow_ids` (47, `repeated fixed64`, not packed: one key per id): a
/// two-byte key, `(47 << 3) | 1`.
const TE_FLOW_IDS: [u8; 2] = [0xF9, 0x02];
/// `TrackEvent.terminating_flow_ids` (48, `repeated fixed64`, not packed): a two-byte key,
/// `(48 << 3) | 1`.
const TE_TERMINATING_FLOW_IDS: [u8; 2] = [0x81, 0x03];
/// Bytes one flow id takes: its two-byte key and 8 bytes of `fixed64`.
pub(crate) const FLOW_ID_BYTES: usize = 10;

/// `DebugAnnotation.name_iid` (1).
const DA_NAME_IID: u8 = key(1, VARINT);
/// `DebugAnnotation.uint_value` (3).
const DA_UINT_VALUE: u8 = key(3, VARINT);

/// `InternedData.event_names` (2).
const ID_EVENT_NAMES: u8 = key(2, LEN);
/// `EventName.iid` (1).
const EN_IID: u8 = key(1, VARINT);
/// `EventName.name` (2).
const EN_NAME: u8 = key(2, LEN);

/// `TrackEvent.Type` values.
pub(crate) mod ty {
    /// `TYPE_SLICE_BEGIN`.
    pub const SLICE_BEGIN: u8 = 1;
    /// `TYPE_SLICE_END`.
    pub const SLICE_END: u8 = 2;
    /// `TYPE_INSTANT`.
    pub const INSTANT: u8 = 3;
    /// `TYPE_COUNTER`.
    pub const COUNTER: u8 = 4;
}

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub(crate) const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`.
pub(crate) const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// Bytes a varint of `v` takes: `ceil(bits / 7)`, computed as `(bits * 9 + 64) / 64`.
#[inline(always)]
pub(crate) fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    (bits * 9 + 64) / 64
}

/// Appends `v` as a varint.
#[inline]
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends a varint field with a one-byte key.
#[inline]
fn put_uint_field(buf: &mut Vec<u8>, key: u8, v: u64) {
    buf.push(key);
    put_varint(buf, v);
}

/// Appends one `TrackEvent.debug_annotations` entry `{ name_iid, uint_value }`.
#[inline]
pub(crate) fn put_annotation(buf: &mut Vec<u8>, name_iid: u8, value: u64) {
    debug_assert!(name_iid < 0x80);
    buf.push(TE_DEBUG_ANNOTATIONS);
    buf.push((3 + varint_len(value)) as u8);
    buf.push(DA_NAME_IID);
    buf.push(name_iid);
    buf.push(DA_UINT_VALUE);
    put_varint(buf, value);
}

/// The `interned_data` field of a packet that interns one event name.
pub(crate) fn interned_event_name(iid: u64, name: &str) -> Vec<u8> {
    let en_len = 1 + varint_len(iid) + 1 + varint_len(name.len() as u64) + name.len();
    let id_len = 1 + varint_len(en_len as u64) + en_len;
    let mut b = Vec::with_capacity(1 + varint_len(id_len as u64) + id_len);
    b.push(PKT_INTERNED);
    put_varint(&mut b, id_len as u64);
    b.push(ID_EVENT_NAMES);
    put_varint(&mut b, en_len as u64);
    put_uint_field(&mut b, EN_IID, iid);
    b.push(EN_NAME);
    put_varint(&mut b, name.len() as u64);
    b.extend_from_slice(name.as_bytes());
    b
}

/// `TracePacket.compressed_packets` (field 50, length-delimited): a two-byte key.
const PKT_COMPRESSED: [u8; 2] = [0x92, 0x03];

/// Appends the framing of a `Trace.packet` holding only `compressed_packets` of
/// `zlen` bytes; the compressed bytes follow it.
pub(crate) fn put_compressed_bundle(buf: &mut Vec<u8>, zlen: usize) {
    let body = PKT_COMPRESSED.len() + varint_len(zlen as u64) + zlen;
    buf.push(TRACE_PACKET);
    put_varint(buf, body as u64);
    buf.extend_from_slice(&PKT_COMPRESSED);
    put_varint(buf, zlen as u64);
}

/// The most bytes one event packet written by [`SeqEncoder`] takes, interned data aside,
/// including the slack of its fixed-size copies. Worst cases: packet header (key, length,
/// timestamp field, sequence id and flags as an 8-byte copy, track event key and length)
/// 1 + 10 + 1 + 10 + 8 + 2 = 32; a begin / instant track event: the name head as a 16-byte
/// copy (type 2, name 11, category 2, annotation key 1), payload annotation 9, lane
/// annotations as a 32-byte copy, track 11 = 68; a counter 2 + 11 + 2 + 5 = 20. The `largest_event_fits_the_bound` test writes the largest values
/// into a buffer of exactly this size.
pub(crate) const MAX_EVENT_BYTES: usize = 128;

/// The room a named event with `n` flow ids needs beyond [`MAX_EVENT_BYTES`] (and its
/// interned data): the ids, plus slack for the track event's length, a varint of up to 10
/// bytes instead of one (the header is then at most 41 bytes instead of 32).
#[inline]
pub(crate) fn flows_room(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        n * FLOW_ID_BYTES + 20
    }
}

/// A write cursor into a buffer that was checked to have room for what is written.
struct Cursor {
    p: *mut u8,
    base: *const u8,
}

impl Cursor {
    /// A cursor at `buf[pos]`, after checking that `room` bytes are free from there: the
    /// only check; every write through the cursor stays within those `room` bytes.
    #[inline(always)]
    fn new(buf: &mut [u8], pos: usize, room: usize) -> Self {
        assert!(
            pos <= buf.len() && buf.len() - pos >= room,
            "perfetto encoder: no room for a packet"
        );
        let base = buf.as_mut_ptr();
        // SAFETY: `pos <= buf.len()`, so the pointer is in bounds or one past the end.
        Cursor {
            p: unsafe { base.add(pos) },
            base,
        }
    }

    /// The position after the last byte written, in the buffer given to `new`.
    #[inline(always)]
    fn pos(&self) -> usize {
        self.p as usize - self.base as usize
    }

    /// # Safety
    /// One byte of room must be left (see [`Cursor::new`]).
    #[inline(always)]
    unsafe fn byte(&mut self, b: u8) {
        // SAFETY: the caller guarantees room.
        unsafe {
            self.p.write(b);
            self.p = self.p.add(1);
        }
    }

    /// # Safety
    /// [`varint_len`]`(v)` bytes of room must be left.
    #[inline(always)]
    unsafe fn varint(&mut self, mut v: u64) {
        // SAFETY: the caller guarantees room for the whole varint.
        unsafe {
            while v >= 0x80 {
                self.byte((v as u8) | 0x80);
                v >>= 7;
            }
            self.byte(v as u8);
        }
    }

    /// Copies all `N` bytes of `f`, advancing by its length.
    ///
    /// # Safety
    /// `N` bytes of room must be left.
    #[inline(always)]
    unsafe fn fixed<const N: usize>(&mut self, f: &Fixed<N>) {
        // SAFETY: the caller guarantees room for `N` bytes; `f.len <= N`.
        unsafe {
            std::ptr::copy_nonoverlapping(f.bytes.as_ptr(), self.p, N);
            self.p = self.p.add(f.len);
        }
    }

    /// # Safety
    /// `b.len()` bytes of room must be left.
    #[inline(always)]
    unsafe fn bytes(&mut self, b: &[u8]) {
        // SAFETY: the caller guarantees room for `b`, which cannot overlap the output
        // buffer (it is borrowed immutably while the buffer is borrowed mutably).
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), self.p, b.len());
            self.p = self.p.add(b.len());
        }
    }
}

/// Pre-encoded bytes of at most `N`, copied as a fixed-size block (the window they are
/// copied into always has room for `N`), so no call to `memcpy` per packet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fixed<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Default for Fixed<N> {
    fn default() -> Self {
        Fixed {
            bytes: [0; N],
            len: 0,
        }
    }
}

impl<const N: usize> Fixed<N> {
    fn set(&mut self, src: &[u8]) {
        assert!(src.len() <= N);
        self.bytes[..src.len()].copy_from_slice(src);
        self.len = src.len();
    }
}

/// The pre-encoded start of a named event's `TrackEvent`: `type`, `name_iid`,
/// `category_iids` and the key of the payload's debug annotation; see [`name_head`].
pub(crate) type NameHead = Fixed<16>;

/// The [`NameHead`] of events of type `ty` named `name_iid` in category `category_iid`.
pub(crate) fn name_head(ty: u8, name_iid: u64, category_iid: u8) -> NameHead {
    let mut b = Vec::with_capacity(16);
    b.push(TE_TYPE);
    b.push(ty);
    put_uint_field(&mut b, TE_NAME_IID, name_iid);
    b.push(TE_CATEGORY_IIDS);
    b.push(category_iid);
    b.push(TE_DEBUG_ANNOTATIONS);
    let mut f = Fixed::default();
    f.set(&b);
    f
}

/// Encoder of the event packets of one packet sequence (one lane).
///
/// Every packet it writes is `TracePacket { timestamp: delta, trusted_packet_sequence_id,
/// sequence_flags: SEQ_NEEDS_INCREMENTAL_STATE, track_event, [interned_data] }`, in that
/// field order; the timestamp is a delta on the sequence's incremental clock. Inside a
/// named event the fields are `type, name_iid, category_iids, debug_annotations (payload,
/// then the lane's), [track_uuid]`. Packets are written into `buf[pos..]`, which must have
/// [`MAX_EVENT_BYTES`] bytes free (plus the interned data's length); the methods panic
/// otherwise.
#[derive(Debug, Default)]
pub(crate) struct SeqEncoder {
    /// `trusted_packet_sequence_id` and `sequence_flags` fields.
    seq_flags: Fixed<8>,
    /// `seq_flags`, then a whole `track_event { type: TYPE_SLICE_END }` field.
    end_tail: Fixed<16>,
    /// The lane's constant debug annotations (SM, block, group: at most 3 x 10 bytes).
    lane_annotations: Fixed<32>,
    /// Last absolute timestamp written on the sequence (the incremental clock's value).
    last_ts: u64,
}

impl SeqEncoder {
    /// Starts a sequence: `seq` is its id, `t0` the incremental clock's value at its
    /// clock snapshot, `lane_annotations` the `(name iid, value)` annotations every slice
    /// and instant carries (at most 3, values below 2^32).
    pub(crate) fn reset(&mut self, seq: u32, t0: u64, lane_annotations: &[(u8, u32)]) {
        let mut b = Vec::with_capacity(32);
        put_uint_field(&mut b, PKT_SEQ_ID, seq as u64);
        put_uint_field(&mut b, PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE as u64);
        self.seq_flags.set(&b);
        b.extend_from_slice(&[PKT_TRACK_EVENT, 2, TE_TYPE, ty::SLICE_END]);
        self.end_tail.set(&b);
        b.clear();
        assert!(lane_annotations.len() <= 3);
        for &(iid, v) in lane_annotations {
            put_annotation(&mut b, iid, v as u64);
        }
        self.lane_annotations.set(&b);
        self.last_ts = t0;
    }

    /// The delta to `ts` from the previous packet, advancing the clock. Times go forward
    /// on a sequence by construction; a backward step would wrap to a huge `u64` that a
    /// reader takes, as Perfetto does, for a negative `int64` delta.
    #[inline(always)]
    fn delta(&mut self, ts: u64) -> u64 {
        debug_assert!(ts >= self.last_ts, "time went backwards on a sequence");
        let d = ts.wrapping_sub(self.last_ts);
        self.last_ts = ts;
        d
    }

    /// Writes the packet header up to and including the track event's key and length;
    /// `extra` is the byte count of the fields after the track event.
    ///
    /// # Safety
    /// `1 + 10 + 1 + 10 + 8 + 1 + varint_len(te_len)` bytes of room must be left at `c`:
    /// 32 for a track event under 0x80 bytes.
    #[inline(always)]
    unsafe fn head(&mut self, c: &mut Cursor, ts: u64, te_len: usize, extra: usize) {
        let d = self.delta(ts);
        let te_field = 1 + varint_len(te_len as u64) + te_len;
        let body_len = 1 + varint_len(d) + self.seq_flags.len + te_field + extra;
        // SAFETY: within the room guaranteed by the caller.
        unsafe {
            c.byte(TRACE_PACKET);
            c.varint(body_len as u64);
            c.byte(PKT_TIMESTAMP);
            c.varint(d);
            c.fixed(&self.seq_flags);
            c.byte(PKT_TRACK_EVENT);
            c.varint(te_len as u64);
        }
    }

    /// [`Self::named`] with `flows` as the event's `flow_ids` (after `track_uuid`), so that
    /// the event's slice starts those flows. `buf[pos..]` must have [`MAX_EVENT_BYTES`] +
    /// `interned.len()` + [`flows_room`]`(flows.len())` bytes free.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn named_flows(
        &mut self,
        buf: &mut [u8],
        pos: usize,
        head: &NameHead,
        ts: u64,
        track: u64,
        payload_iid: u8,
        payload: u32,
        interned: &[u8],
        flows: &[u64],
    ) -> usize {
        let mut c = Cursor::new(
            buf,
            pos,
            MAX_EVENT_BYTES + interned.len() + flows_room(flows.len()),
        );
        let payload_len = varint_len(payload as u64);
        let mut te_len = head.len + 1 + 3 + payload_len + self.lane_annotations.len;
        if track != 0 {
            te_len += 1 + varint_len(track);
        }
        te_len += flows.len() * FLOW_ID_BYTES;
        // SAFETY: header 41 (see `flows_room`) + event 68 bytes at most, then the flow ids
        // and the interned bytes: all within the checked room.
        unsafe {
            self.head(&mut c, ts, te_len, interned.len());
            // Type, name and category, the payload annotation, the lane's annotations.
            c.fixed(head);
            c.byte((3 + payload_len) as u8);
            c.byte(DA_NAME_IID);
            c.byte(payload_iid);
            c.byte(DA_UINT_VALUE);
            c.varint(payload as u64);
            c.fixed(&self.lane_annotations);
            if track != 0 {
                c.byte(TE_TRACK_UUID);
                c.varint(track);
            }
            for &id in flows {
                c.bytes(&TE_FLOW_IDS);
                c.bytes(&id.to_le_bytes());
            }
            if !interned.is_empty() {
                c.bytes(interned);
            }
        }
        c.pos()
    }

    /// A named event (slice begin or instant) whose type, name and category are `head`,
    /// with the payload annotation (name iid `payload_iid`) and the lane's annotations,
    /// followed by `interned` (a pre-encoded `interned_data` field, or empty); `track`
    /// overrides the sequence's default track when non-zero. Returns the position after
    /// the packet.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn named(
        &mut self,
        buf: &mut [u8],
        pos: usize,
        head: &NameHead,
        ts: u64,
        track: u64,
        payload_iid: u8,
        payload: u32,
        interned: &[u8],
    ) -> usize {
        self.named_flows(
            buf,
            pos,
            head,
            ts,
            track,
            payload_iid,
            payload,
            interned,
            &[],
        )
    }

    /// A `TYPE_SLICE_END` event; `track` overrides the default track when non-zero, and
    /// `flow`, if any, is the flow it terminates (its `terminating_flow_ids`, after
    /// `track_uuid`).
    #[inline(always)]
    pub(crate) fn end(
        &mut self,
        buf: &mut [u8],
        pos: usize,
        ts: u64,
        track: u64,
        flow: Option<u64>,
    ) -> usize {
        let mut c = Cursor::new(buf, pos, MAX_EVENT_BYTES);
        if track != 0 || flow.is_some() {
            let mut te_len = 2 + flow.map_or(0, |_| FLOW_ID_BYTES);
            if track != 0 {
                te_len += 1 + varint_len(track);
            }
            // SAFETY: 32 + 2 + 11 + 10 bytes at most, within the checked room.
            unsafe {
                self.head(&mut c, ts, te_len, 0);
                c.byte(TE_TYPE);
                c.byte(ty::SLICE_END);
                if track != 0 {
                    c.byte(TE_TRACK_UUID);
                    c.varint(track);
                }
                if let Some(flow) = flow {
                    c.bytes(&TE_TERMINATING_FLOW_IDS);
                    c.bytes(&flow.to_le_bytes());
                }
            }
            return c.pos();
        }
        let d = self.delta(ts);
        let body_len = 1 + varint_len(d) + self.end_tail.len;
        // SAFETY: 1 + 1 + 1 + 10 + 16 bytes at most, within the checked room.
        unsafe {
            c.byte(TRACE_PACKET);
            c.byte(body_len as u8);
            c.byte(PKT_TIMESTAMP);
            c.varint(d);
            c.fixed(&self.end_tail);
        }
        c.pos()
    }

    /// A `TYPE_COUNTER` event on counter track `track`.
    #[inline(always)]
    pub(crate) fn counter(
        &mut self,
        buf: &mut [u8],
        pos: usize,
        ts: u64,
        track: u64,
        value: u32,
    ) -> usize {
        let mut c = Cursor::new(buf, pos, MAX_EVENT_BYTES);
        let te_len = 2 + 1 + varint_len(track) + 2 + varint_len(value as u64);
        // SAFETY: 32 + 20 bytes at most, within the checked room.
        unsafe {
            self.head(&mut c, ts, te_len, 0);
            c.byte(TE_TYPE);
            c.byte(ty::COUNTER);
            c.byte(TE_TRACK_UUID);
            c.varint(track);
            c.byte(TE_COUNTER_VALUE[0]);
            c.byte(TE_COUNTER_VALUE[1]);
            c.varint(value as u64);
        }
        c.pos()
    }
}

/// A counter value on a sequence without incremental state (absolute timestamp, no flags).
pub(crate) fn put_absolute_counter(out: &mut Vec<u8>, seq: u32, ts: u64, track: u64, value: i64) {
    let te_len = 2 + 1 + varint_len(track) + 2 + varint_len(value as u64);
    let body_len =
        1 + varint_len(ts) + 1 + varint_len(te_len as u64) + te_len + 1 + varint_len(seq as u64);
    out.push(TRACE_PACKET);
    put_varint(out, body_len as u64);
    put_uint_field(out, PKT_TIMESTAMP, ts);
    out.push(PKT_TRACK_EVENT);
    put_varint(out, te_len as u64);
    out.push(TE_TYPE);
    out.push(ty::COUNTER);
    put_uint_field(out, TE_TRACK_UUID, track);
    out.extend_from_slice(&TE_COUNTER_VALUE);
    put_varint(out, value as u64);
    put_uint_field(out, PKT_SEQ_ID, seq as u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use protobuf::Message;

    #[test]
    fn varint_len_matches_encoding() {
        let mut vs = vec![0u64, u64::MAX];
        for b in 1..64 {
            vs.extend([(1u64 << b) - 1, 1u64 << b, (1u64 << b) + 1]);
        }
        for v in vs {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v), "{v}");
        }
    }

    #[test]
    fn hand_encoded_packets_parse_with_the_crate() {
        use perfetto_protos::trace::Trace;
        use perfetto_protos::track_event::track_event::{Name_field, Type};
        let mut buf = vec![0u8; 4 * MAX_EVENT_BYTES + 64];
        let mut e = SeqEncoder::default();
        e.reset(300, 1000, &[(2, 7), (3, 70000)]);
        let interned = interned_event_name(5, "mma");
        let begin = name_head(ty::SLICE_BEGIN, 5, 1);
        let mut p = e.named(&mut buf, 0, &begin, 1000, 0, 1, 123456, &interned);
        p = e.end(&mut buf, p, 1500, 99999, None);
        p = e.counter(&mut buf, p, 2000, 42, u32::MAX);
        let instant = name_head(ty::INSTANT, 1 << 20, 2);
        p = e.named(&mut buf, p, &instant, 2000, 1 << 40, 1, 0, &[]);
        p = e.end(&mut buf, p, 2500, 0, None);
        let mut out = buf[..p].to_vec();
        put_absolute_counter(&mut out, 1, 77, 9, 3);
        let t = Trace::parse_from_bytes(&out).unwrap();
        assert_eq!(t.packet.len(), 6);
        let p = &t.packet[0];
        assert_eq!(p.timestamp, Some(0));
        assert_eq!(p.trusted_packet_sequence_id(), 300);
        assert_eq!(p.sequence_flags, Some(SEQ_NEEDS_INCREMENTAL_STATE));
        let te = p.track_event();
        assert_eq!(te.type_(), Type::TYPE_SLICE_BEGIN);
        assert_eq!(te.name_field, Some(Name_field::NameIid(5)));
        assert_eq!(te.category_iids, vec![1]);
        assert_eq!(te.debug_annotations.len(), 3);
        assert_eq!(te.debug_annotations[0].uint_value(), 123456);
        assert_eq!(te.debug_annotations[2].uint_value(), 70000);
        assert_eq!(p.interned_data.event_names[0].name(), "mma");
        assert_eq!(t.packet[1].timestamp, Some(500));
        assert_eq!(t.packet[1].track_event().track_uuid, Some(99999));
        assert_eq!(t.packet[1].track_event().type_(), Type::TYPE_SLICE_END);
        assert_eq!(t.packet[2].track_event().counter_value(), u32::MAX as i64);
        let te = t.packet[3].track_event();
        assert_eq!(te.type_(), Type::TYPE_INSTANT);
        assert_eq!(te.track_uuid, Some(1 << 40));
        assert_eq!(te.name_field, Some(Name_field::NameIid(1 << 20)));
        let p = &t.packet[4];
        assert_eq!(p.timestamp, Some(500));
        assert_eq!(p.track_event().type_(), Type::TYPE_SLICE_END);
        assert_eq!(p.track_event().track_uuid, None);
        assert_eq!(p.trusted_packet_sequence_id(), 300);
        assert_eq!(p.sequence_flags, Some(SEQ_NEEDS_INCREMENTAL_STATE));
        assert_eq!(t.packet[5].timestamp, Some(77));
        assert_eq!(t.packet[5].track_event().counter_value(), 3);
        assert_eq!(t.packet[5].sequence_flags, None);
    }

    #[test]
    fn flow_ids_parse_with_the_crate() {
        use perfetto_protos::trace::Trace;
        use perfetto_protos::track_event::track_event::Type;
        let mut buf = vec![0u8; 4 * MAX_EVENT_BYTES + flows_room(20) + 64];
        let mut e = SeqEncoder::default();
        e.reset(7, 100, &[(3, 1)]);
        let begin = name_head(ty::SLICE_BEGIN, 2, 1);
        let instant = name_head(ty::INSTANT, 3, 2);
        let interned = interned_event_name(2, "signal.kv");
        let mut p = e.named_flows(&mut buf, 0, &begin, 100, 0, 1, 5, &interned, &[1, u64::MAX]);
        // Enough ids that the track event's length takes two bytes.
        let many: Vec<u64> = (0..20).map(|i| i << 40 | 3).collect();
        p = e.named_flows(&mut buf, p, &instant, 150, 1 << 33, 1, 0, &[], &many);
        p = e.end(&mut buf, p, 200, 0, Some(42));
        p = e.end(&mut buf, p, 250, 300, Some(1 << 63));
        let t = Trace::parse_from_bytes(&buf[..p]).unwrap();
        assert_eq!(t.packet.len(), 4);
        let te = t.packet[0].track_event();
        assert_eq!(te.type_(), Type::TYPE_SLICE_BEGIN);
        assert_eq!(te.flow_ids, vec![1, u64::MAX]);
        assert!(te.terminating_flow_ids.is_empty());
        assert_eq!(te.debug_annotations[0].uint_value(), 5);
        assert_eq!(t.packet[0].interned_data.event_names[0].name(), "signal.kv");
        let te = t.packet[1].track_event();
        assert_eq!(te.type_(), Type::TYPE_INSTANT);
        assert_eq!((te.flow_ids.clone(), te.track_uuid), (many, Some(1 << 33)));
        assert_eq!(t.packet[1].timestamp, Some(50));
        let te = t.packet[2].track_event();
        assert_eq!(te.type_(), Type::TYPE_SLICE_END);
        assert_eq!(
            (te.terminating_flow_ids.clone(), te.track_uuid),
            (vec![42], None)
        );
        assert!(te.flow_ids.is_empty());
        let te = t.packet[3].track_event();
        assert_eq!(te.terminating_flow_ids, vec![1 << 63]);
        assert_eq!(te.track_uuid, Some(300));
        assert_eq!(t.packet[3].timestamp, Some(50));
        assert_eq!(
            t.packet[3].sequence_flags,
            Some(SEQ_NEEDS_INCREMENTAL_STATE)
        );
    }

    #[test]
    fn largest_event_fits_the_bound() {
        // The buffer has a guard zone past the room the encoder checks for: any write past
        // MAX_EVENT_BYTES would land there (in bounds of the Vec) and be seen.
        const GUARD: usize = 64;
        let check = |write: &dyn Fn(&mut SeqEncoder, &mut [u8]) -> usize| {
            let mut buf = vec![0xA5u8; MAX_EVENT_BYTES + GUARD];
            let mut e = SeqEncoder::default();
            e.reset(
                u32::MAX,
                0,
                &[(0x7F, u32::MAX), (0x7F, u32::MAX), (0x7F, u32::MAX)],
            );
            let n = write(&mut e, &mut buf);
            assert!(n <= MAX_EVENT_BYTES, "{n}");
            assert!(
                buf[MAX_EVENT_BYTES..].iter().all(|&b| b == 0xA5),
                "wrote past the bound"
            );
        };
        let head = name_head(ty::SLICE_BEGIN, u64::MAX, 0x7F);
        check(&|e, b| e.named(b, 0, &head, u64::MAX, u64::MAX, 0x7F, u32::MAX, &[]));
        check(&|e, b| e.end(b, 0, u64::MAX, u64::MAX, None));
        check(&|e, b| e.end(b, 0, u64::MAX, 0, None));
        check(&|e, b| e.counter(b, 0, u64::MAX, u64::MAX, u32::MAX));
        check(&|e, b| e.end(b, 0, u64::MAX, u64::MAX, Some(u64::MAX)));
        // With flow ids: the bound plus `flows_room`, for small and long track events.
        for n in [1, 12, 13, 2000] {
            let room = MAX_EVENT_BYTES + flows_room(n);
            let mut buf = vec![0xA5u8; room + GUARD];
            let mut e = SeqEncoder::default();
            e.reset(
                u32::MAX,
                0,
                &[(0x7F, u32::MAX), (0x7F, u32::MAX), (0x7F, u32::MAX)],
            );
            let ids = vec![u64::MAX; n];
            let head = name_head(ty::SLICE_BEGIN, u64::MAX, 0x7F);
            let w = e.named_flows(
                &mut buf,
                0,
                &head,
                u64::MAX,
                u64::MAX,
                0x7F,
                u32::MAX,
                &[],
                &ids,
            );
            assert!(w <= room, "{n}: {w}");
            assert!(
                buf[room..].iter().all(|&b| b == 0xA5),
                "{n}: wrote past the bound"
            );
        }
    }
}
