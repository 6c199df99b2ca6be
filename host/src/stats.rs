//! Region statistics (not yet written).
