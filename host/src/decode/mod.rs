//! Decoders per wire format, producing the [`crate::model::Trace`] (not yet written).
