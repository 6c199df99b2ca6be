//! Hand-written protobuf encoding of the packets outside the lane event loop, written once
//! per track, lane sequence, launch or metadata event rather than once per recorded event:
//! track descriptors, the packet that opens a lane sequence, host clock snapshots, and the
//! track events of sequence 1 (lifetimes, critical path, async ranges, host events).
//!
//! Each function appends one whole `Trace.packet` field with the bytes the generated
//! protobuf types wrote before (rust-protobuf 3's order: a message's plain fields in
//! declaration order, then its `oneof`s in declaration order; default-valued optional
//! fields omitted), so the output is byte-identical to what those types gave; the golden
//! tests pin it and the integration tests decode it with `host/tests/perfetto-schema`'s
//! types (imported as `perfetto_protos`).
//!
//! Field numbers are cited from the Perfetto protos (github.com/google/perfetto,
//! `protos/perfetto/`): `trace/trace_packet.proto` (P),
//! `trace/track_event/track_descriptor.proto` (D),
//! `trace/track_event/counter_descriptor.proto` (C), `trace/clock_snapshot.proto` (S),
//! `trace/trace_packet_defaults.proto` (PD), `trace/interned_data/interned_data.proto`
//! (I), `trace/track_event/track_event.proto` (E) and
//! `trace/track_event/debug_annotation.proto` (A).

use std::borrow::Cow;

use super::{put_varint, ty, varint_len, TRACE_PACKET};

/// Wire types.
const VARINT: u32 = 0;
const I64: u32 = 1;
const LEN: u32 = 2;

/// `TracePacket` (P): `timestamp` 8, `clock_snapshot` 6, `track_event` 11,
/// `interned_data` 12, `sequence_flags` 13, `trace_packet_defaults` 59,
/// `track_descriptor` 60, `first_packet_on_sequence` 87, `trusted_packet_sequence_id` 10
/// (the last `oneof` of the message, so always written last).
mod pkt {
    pub const TIMESTAMP: u32 = 8;
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const TRACK_EVENT: u32 = 11;
    pub const INTERNED_DATA: u32 = 12;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const DEFAULTS: u32 = 59;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    pub const FIRST_ON_SEQUENCE: u32 = 87;
    pub const SEQUENCE_ID: u32 = 10;
}

/// `TrackDescriptor` (D): `uuid` 1, `parent_uuid` 5, `counter` 8, `child_ordering` 11,
/// `sibling_order_rank` 12 (`int32`), `name` 2 (in the `static_or_dynamic_name` `oneof`,
/// so after the plain fields).
mod desc {
    pub const UUID: u32 = 1;
    pub const PARENT_UUID: u32 = 5;
    pub const COUNTER: u32 = 8;
    pub const CHILD_ORDERING: u32 = 11;
    pub const SIBLING_ORDER_RANK: u32 = 12;
    pub const NAME: u32 = 2;
    /// `ChildTracksOrdering.EXPLICIT`.
    pub const EXPLICIT: u64 = 3;
    /// `CounterDescriptor.unit` 3 (C), `Unit.UNIT_COUNT` = 2.
    pub const COUNTER_UNIT: u32 = 3;
    pub const UNIT_COUNT: u64 = 2;
}

/// `ClockSnapshot.clocks` 1, `Clock.clock_id` 1, `.timestamp` 2, `.is_incremental` 3 (S).
mod clock {
    pub const CLOCKS: u32 = 1;
    pub const ID: u32 = 1;
    pub const TIMESTAMP: u32 = 2;
    pub const INCREMENTAL: u32 = 3;
}

/// `TracePacketDefaults.timestamp_clock_id` 58, `.track_event_defaults` 11 (PD);
/// `TrackEventDefaults.track_uuid` 11 (E).
mod defaults {
    pub const CLOCK_ID: u32 = 58;
    pub const TRACK_EVENT: u32 = 11;
    pub const TRACK_UUID: u32 = 11;
}

/// `InternedData.event_categories` 1, `.debug_annotation_names` 3 (I); both entries
/// (`EventCategory` (E), `DebugAnnotationName` (A)) are `iid` 1, `name` 2.
mod interned {
    pub const CATEGORIES: u32 = 1;
    pub const ANNOTATION_NAMES: u32 = 3;
    pub const IID: u32 = 1;
    pub const NAME: u32 = 2;
}

/// `TrackEvent` (E): `categories` 22, `type` 9, `track_uuid` 11, `flow_ids` 47
/// (`fixed64`, one field per id), `debug_annotations` 4, `name` 23 (in the `name_field`
/// `oneof`, so last).
mod event {
    pub const CATEGORIES: u32 = 22;
    pub const TYPE: u32 = 9;
    pub const TRACK_UUID: u32 = 11;
    pub const FLOW_IDS: u32 = 47;
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const NAME: u32 = 23;
}

/// `DebugAnnotation` (A): `name` 10, then the value: `bool_value` 2, `uint_value` 3,
/// `int_value` 4, `double_value` 5, `string_value` 6.
mod ann {
    pub const NAME: u32 = 10;
    pub const BOOL: u32 = 2;
    pub const UINT: u32 = 3;
    pub const INT: u32 = 4;
    pub const DOUBLE: u32 = 5;
    pub const STRING: u32 = 6;
}

/// A message being appended to a buffer, field by field in the order written.
struct Msg<'b>(&'b mut Vec<u8>);

impl Msg<'_> {
    fn key(&mut self, field: u32, wire: u32) {
        put_varint(self.0, ((field << 3) | wire) as u64);
    }

    /// A `uint32` / `uint64` / enum field.
    fn uint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        put_varint(self.0, v);
    }

    /// An `int32` / `int64` field: negative values sign-extended to 10 bytes.
    fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, I64);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn str(&mut self, field: u32, s: &str) {
        self.key(field, LEN);
        put_varint(self.0, s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    /// A message field whose body `body` writes; its length is patched in afterwards.
    fn nested(&mut self, field: u32, body: impl FnOnce(&mut Msg<'_>)) {
        self.key(field, LEN);
        let at = self.0.len();
        self.0.push(0);
        body(&mut Msg(self.0));
        let len = self.0.len() - at - 1;
        if len < 0x80 {
            self.0[at] = len as u8;
        } else {
            let mut head = Vec::with_capacity(varint_len(len as u64));
            put_varint(&mut head, len as u64);
            self.0.splice(at..at + 1, head);
        }
    }
}

/// Appends one `Trace.packet` whose fields `body` writes.
fn packet(out: &mut Vec<u8>, body: impl FnOnce(&mut Msg<'_>)) {
    debug_assert_eq!(TRACE_PACKET, 1 << 3 | LEN as u8);
    Msg(out).nested(1, body);
}

/// A track's descriptor: `uuid`, `parent` (0: a root), `name`, `rank` among its siblings;
/// `explicit_children` orders its children by their ranks, `counter` makes it a counter
/// track counting in `UNIT_COUNT`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Track<'a> {
    pub uuid: u64,
    pub parent: u64,
    pub name: &'a str,
    pub rank: i32,
    pub explicit_children: bool,
    pub counter: bool,
}

/// Appends the `TracePacket { track_descriptor }` of `t` on sequence `seq`.
pub(crate) fn track_descriptor(out: &mut Vec<u8>, seq: u32, t: &Track<'_>) {
    packet(out, |p| {
        p.nested(pkt::TRACK_DESCRIPTOR, |d| {
            d.uint(desc::UUID, t.uuid);
            if t.parent != 0 {
                d.uint(desc::PARENT_UUID, t.parent);
            }
            if t.counter {
                d.nested(desc::COUNTER, |c| {
                    c.uint(desc::COUNTER_UNIT, desc::UNIT_COUNT)
                });
            }
            if t.explicit_children {
                d.uint(desc::CHILD_ORDERING, desc::EXPLICIT);
            }
            d.int(desc::SIBLING_ORDER_RANK, t.rank as i64);
            d.str(desc::NAME, t.name);
        });
        p.uint(pkt::SEQUENCE_ID, seq as u64);
    });
}

/// One clock of a `ClockSnapshot`: its id, its value, whether it is incremental.
pub(crate) type Clock = (u32, u64, bool);

fn clocks(m: &mut Msg<'_>, clocks: &[Clock]) {
    for &(id, ts, incremental) in clocks {
        m.nested(clock::CLOCKS, |c| {
            c.uint(clock::ID, id as u64);
            c.uint(clock::TIMESTAMP, ts);
            if incremental {
                c.uint(clock::INCREMENTAL, 1);
            }
        });
    }
}

/// Appends a `TracePacket { clock_snapshot }` of `snapshot` on sequence `seq`.
pub(crate) fn clock_snapshot(out: &mut Vec<u8>, seq: u32, snapshot: &[Clock]) {
    packet(out, |p| {
        p.nested(pkt::CLOCK_SNAPSHOT, |s| clocks(s, snapshot));
        p.uint(pkt::SEQUENCE_ID, seq as u64);
    });
}

/// The `interned_data` field (key included) interning `categories` and the debug
/// annotation names `annotations`, as `(iid, name)`: the base every lane sequence starts
/// with.
pub(crate) fn interned_names(categories: &[(u64, &str)], annotations: &[(u64, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    Msg(&mut b).nested(pkt::INTERNED_DATA, |i| {
        for (field, entries) in [
            (interned::CATEGORIES, categories),
            (interned::ANNOTATION_NAMES, annotations),
        ] {
            for &(iid, name) in entries {
                i.nested(field, |e| {
                    e.uint(interned::IID, iid);
                    e.str(interned::NAME, name);
                });
            }
        }
    });
    b
}

/// The packet that opens a lane sequence (the writer's `# Format`, item 3).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SequenceStart<'a> {
    /// `trusted_packet_sequence_id`.
    pub seq: u32,
    /// `sequence_flags` (`SEQ_INCREMENTAL_STATE_CLEARED`).
    pub flags: u32,
    /// `trace_packet_defaults.timestamp_clock_id`.
    pub clock_id: u32,
    /// `trace_packet_defaults.track_event_defaults.track_uuid`.
    pub track: u64,
    /// The `interned_data` field, pre-encoded ([`interned_names`]).
    pub interned: &'a [u8],
    /// The `clock_snapshot`.
    pub clocks: &'a [Clock],
}

/// Appends the packet of `s`, with `first_packet_on_sequence`.
pub(crate) fn sequence_start(out: &mut Vec<u8>, s: &SequenceStart<'_>) {
    packet(out, |p| {
        p.0.extend_from_slice(s.interned);
        p.uint(pkt::SEQUENCE_FLAGS, s.flags as u64);
        p.nested(pkt::DEFAULTS, |d| {
            d.uint(defaults::CLOCK_ID, s.clock_id as u64);
            d.nested(defaults::TRACK_EVENT, |t| {
                t.uint(defaults::TRACK_UUID, s.track)
            });
        });
        p.uint(pkt::FIRST_ON_SEQUENCE, 1);
        p.nested(pkt::CLOCK_SNAPSHOT, |c| clocks(c, s.clocks));
        p.uint(pkt::SEQUENCE_ID, s.seq as u64);
    });
}

/// A debug annotation's value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value<'a> {
    Uint(u64),
    Int(i64),
    Bool(bool),
    Double(f64),
    Str(Cow<'a, str>),
}

/// A track event with a plain name, on the metadata sequence: a slice begin or an
/// instant (`ty`, one of [`ty`]) on `track`, in `category`, with its debug annotations
/// and the flow it starts (if any).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event<'a> {
    pub ty: u8,
    pub track: u64,
    pub name: &'a str,
    pub category: &'a str,
    pub annotations: &'a [(&'a str, Value<'a>)],
    pub flow: Option<u64>,
}

fn annotation(m: &mut Msg<'_>, name: &str, v: &Value<'_>) {
    m.nested(event::DEBUG_ANNOTATIONS, |a| {
        a.str(ann::NAME, name);
        match v {
            Value::Bool(b) => a.uint(ann::BOOL, *b as u64),
            Value::Uint(u) => a.uint(ann::UINT, *u),
            Value::Int(i) => a.int(ann::INT, *i),
            Value::Double(d) => a.fixed64(ann::DOUBLE, d.to_bits()),
            Value::Str(s) => a.str(ann::STRING, s),
        }
    });
}

/// Appends `TracePacket { timestamp: ts, track_event: e }` on sequence `seq` (absolute
/// time, no sequence flags).
pub(crate) fn event(out: &mut Vec<u8>, seq: u32, ts: u64, e: &Event<'_>) {
    packet(out, |p| {
        p.uint(pkt::TIMESTAMP, ts);
        p.nested(pkt::TRACK_EVENT, |t| {
            t.str(event::CATEGORIES, e.category);
            t.uint(event::TYPE, e.ty as u64);
            t.uint(event::TRACK_UUID, e.track);
            if let Some(id) = e.flow {
                t.fixed64(event::FLOW_IDS, id);
            }
            for (name, v) in e.annotations {
                annotation(t, name, v);
            }
            t.str(event::NAME, e.name);
        });
        p.uint(pkt::SEQUENCE_ID, seq as u64);
    });
}

/// Appends the `TYPE_SLICE_END` of a slice of `track` at absolute time `ts` on sequence
/// `seq`.
pub(crate) fn slice_end(out: &mut Vec<u8>, seq: u32, ts: u64, track: u64) {
    packet(out, |p| {
        p.uint(pkt::TIMESTAMP, ts);
        p.nested(pkt::TRACK_EVENT, |t| {
            t.uint(event::TYPE, ty::SLICE_END as u64);
            t.uint(event::TRACK_UUID, track);
        });
        p.uint(pkt::SEQUENCE_ID, seq as u64);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_lengths_take_as_many_bytes_as_they_need() {
        for n in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let s = "x".repeat(n);
            let mut b = Vec::new();
            Msg(&mut b).nested(2, |m| m.0.extend_from_slice(s.as_bytes()));
            let mut want = vec![0x12];
            put_varint(&mut want, n as u64);
            want.extend_from_slice(s.as_bytes());
            assert_eq!(b, want, "{n}");
        }
    }

    #[test]
    fn negative_ranks_are_ten_byte_varints() {
        let mut b = Vec::new();
        Msg(&mut b).int(12, -1);
        assert_eq!(
            b,
            [0x60, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]
        );
    }
}
