//! HostSession: allocate, launch argument, read back (not yet written).
