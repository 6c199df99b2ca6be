//! Reading raw buffers from files and bytes (not yet written).
