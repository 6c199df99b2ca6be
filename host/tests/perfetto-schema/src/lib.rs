//! The Perfetto trace messages that ikp's Perfetto writer emits, as rust-protobuf 3 types:
//! the tests decode the writer's hand-encoded bytes with them, an independent check that
//! the output is valid Perfetto. The host and CLI crates take this crate as the
//! dev-dependency `perfetto_protos`, so the paths are those of the crates.io crate of that
//! name (`perfetto_protos::trace::Trace`, `perfetto_protos::track_event::track_event::Type`).
//!
//! `src/protos/` is generated from `protos/` (a reduced copy of Perfetto's `.proto` files,
//! see README.md) by `scripts/perfetto-schema.sh`; do not edit it by hand.

mod protos;

pub use protos::*;
