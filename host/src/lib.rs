//! ikp-host
