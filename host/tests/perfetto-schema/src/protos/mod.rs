// @generated

pub mod builtin_clock;
pub mod clock_snapshot;
pub mod counter_descriptor;
pub mod debug_annotation;
pub mod interned_data;
pub mod trace;
pub mod trace_packet;
pub mod trace_packet_defaults;
pub mod track_descriptor;
pub mod track_event;
