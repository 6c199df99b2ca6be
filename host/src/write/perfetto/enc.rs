//! Hand-written protobuf encoding of the hot packets (slice begin / end, instants, counter
//! values). Everything here writes the exact wire bytes the `perfetto_protos` types would,
//! into a reusable byte buffer; the tests decode the output with those types.
//!
//! Field numbers are from `protos/perfetto/trace/trace_packet.proto`,
//! `track_event/track_event.proto` and `track_event/debug_annotation.proto`.

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

/// Bytes a varint of `v` takes.
#[inline]
pub(crate) fn varint_len(v: u64) -> usize {
    // 1 + floor(bits / 7), with bits = 64 - lzcnt(v | 1).
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
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

/// Length of one `DebugAnnotation { name_iid, uint_value }` including its key and length.
#[inline]
fn annotation_len(name_iid: u8, value: u64) -> usize {
    debug_assert!(name_iid < 0x80);
    let body = 2 + 1 + varint_len(value);
    2 + body
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

/// Appends a whole `Trace.packet` whose body is `body`.
pub(crate) fn put_packet(buf: &mut Vec<u8>, body: &[u8]) {
    buf.push(TRACE_PACKET);
    put_varint(buf, body.len() as u64);
    buf.extend_from_slice(body);
}

/// Encoder of the event packets of one packet sequence (one lane).
///
/// Every packet it writes is
/// `TracePacket { timestamp: delta, track_event, [interned_data], trusted_packet_sequence_id,
/// sequence_flags: SEQ_NEEDS_INCREMENTAL_STATE }`, in that field order; the timestamp is
/// a delta on the sequence's incremental clock.
#[derive(Debug, Default)]
pub(crate) struct SeqEncoder {
    /// `trusted_packet_sequence_id` and `sequence_flags` fields, pre-encoded.
    tail: Vec<u8>,
    /// The lane's constant debug annotations (SM, block, group), pre-encoded.
    lane_annotations: Vec<u8>,
    /// Last absolute timestamp written on the sequence (the incremental clock's value).
    last_ts: u64,
}

impl SeqEncoder {
    /// Starts a sequence: `seq` is its id, `t0` the incremental clock's value at its
    /// clock snapshot, `lane_annotations` the annotations every slice and instant carries.
    pub(crate) fn reset(&mut self, seq: u32, t0: u64, lane_annotations: &[(u8, u64)]) {
        self.tail.clear();
        put_uint_field(&mut self.tail, PKT_SEQ_ID, seq as u64);
        put_uint_field(
            &mut self.tail,
            PKT_SEQ_FLAGS,
            SEQ_NEEDS_INCREMENTAL_STATE as u64,
        );
        self.lane_annotations.clear();
        for &(iid, v) in lane_annotations {
            put_annotation(&mut self.lane_annotations, iid, v);
        }
        self.last_ts = t0;
    }

    /// The delta to `ts` from the previous packet, advancing the clock. Times go forward
    /// on a sequence by construction; a backward step would wrap to a huge `u64` that a
    /// reader takes, as Perfetto does, for a negative `int64` delta.
    #[inline]
    fn delta(&mut self, ts: u64) -> u64 {
        debug_assert!(ts >= self.last_ts, "time went backwards on a sequence");
        let d = ts.wrapping_sub(self.last_ts);
        self.last_ts = ts;
        d
    }

    /// Writes the packet framing around a track event of `te_len` bytes that `fill`
    /// appends, plus `interned` bytes (a pre-encoded `interned_data` field or empty).
    #[inline]
    fn packet(
        &mut self,
        out: &mut Vec<u8>,
        ts: u64,
        te_len: usize,
        interned: &[u8],
        fill: impl FnOnce(&mut Vec<u8>),
    ) {
        let d = self.delta(ts);
        let body_len = 1
            + varint_len(d)
            + 1
            + varint_len(te_len as u64)
            + te_len
            + interned.len()
            + self.tail.len();
        out.reserve(body_len + 11);
        out.push(TRACE_PACKET);
        put_varint(out, body_len as u64);
        out.push(PKT_TIMESTAMP);
        put_varint(out, d);
        out.push(PKT_TRACK_EVENT);
        put_varint(out, te_len as u64);
        let start = out.len();
        fill(out);
        debug_assert_eq!(out.len() - start, te_len, "track event length");
        out.extend_from_slice(interned);
        out.extend_from_slice(&self.tail);
    }

    /// A `TYPE_SLICE_BEGIN` or `TYPE_INSTANT` event with the payload and the lane's
    /// annotations; `track` overrides the sequence's default track when non-zero.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn named(
        &mut self,
        out: &mut Vec<u8>,
        ty: u8,
        ts: u64,
        track: u64,
        name_iid: u64,
        category_iid: u8,
        payload_iid: u8,
        payload: u64,
        interned: &[u8],
    ) {
        let track_len = if track != 0 { 1 + varint_len(track) } else { 0 };
        let te_len = 2
            + track_len
            + 1
            + varint_len(name_iid)
            + 2
            + annotation_len(payload_iid, payload)
            + self.lane_annotations.len();
        let lane_annotations = std::mem::take(&mut self.lane_annotations);
        self.packet(out, ts, te_len, interned, |o| {
            o.push(TE_TYPE);
            o.push(ty);
            if track != 0 {
                put_uint_field(o, TE_TRACK_UUID, track);
            }
            put_uint_field(o, TE_NAME_IID, name_iid);
            o.push(TE_CATEGORY_IIDS);
            o.push(category_iid);
            put_annotation(o, payload_iid, payload);
            o.extend_from_slice(&lane_annotations);
        });
        self.lane_annotations = lane_annotations;
    }

    /// A `TYPE_SLICE_END` event; `track` overrides the default track when non-zero.
    #[inline]
    pub(crate) fn end(&mut self, out: &mut Vec<u8>, ts: u64, track: u64) {
        let te_len = 2 + if track != 0 { 1 + varint_len(track) } else { 0 };
        self.packet(out, ts, te_len, &[], |o| {
            o.push(TE_TYPE);
            o.push(ty::SLICE_END);
            if track != 0 {
                put_uint_field(o, TE_TRACK_UUID, track);
            }
        });
    }

    /// A `TYPE_COUNTER` event on counter track `track`.
    #[inline]
    pub(crate) fn counter(&mut self, out: &mut Vec<u8>, ts: u64, track: u64, value: u64) {
        let te_len = 2 + 1 + varint_len(track) + 2 + varint_len(value);
        self.packet(out, ts, te_len, &[], |o| {
            o.push(TE_TYPE);
            o.push(ty::COUNTER);
            put_uint_field(o, TE_TRACK_UUID, track);
            o.extend_from_slice(&TE_COUNTER_VALUE);
            put_varint(o, value);
        });
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
        for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v), "{v}");
        }
    }

    #[test]
    fn hand_encoded_packets_parse_with_the_crate() {
        use perfetto_protos::trace::Trace;
        use perfetto_protos::track_event::track_event::{Name_field, Type};
        let mut out = Vec::new();
        let mut e = SeqEncoder::default();
        e.reset(300, 1000, &[(2, 7), (3, 70000)]);
        let interned = interned_event_name(5, "mma");
        e.named(
            &mut out,
            ty::SLICE_BEGIN,
            1000,
            0,
            5,
            1,
            1,
            123456,
            &interned,
        );
        e.end(&mut out, 1500, 99999);
        e.counter(&mut out, 2000, 42, 1 << 40);
        put_absolute_counter(&mut out, 1, 77, 9, 3);
        let t = Trace::parse_from_bytes(&out).unwrap();
        assert_eq!(t.packet.len(), 4);
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
        assert_eq!(t.packet[2].track_event().counter_value(), 1 << 40);
        assert_eq!(t.packet[3].timestamp, Some(77));
        assert_eq!(t.packet[3].track_event().counter_value(), 3);
        assert_eq!(t.packet[3].sequence_flags, None);
    }
}
