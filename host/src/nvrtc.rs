//! NVRTC compilation helper (not yet written).
