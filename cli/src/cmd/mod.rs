//! One module per subcommand: its arguments and the library calls that answer it.
pub mod analyze;
pub mod cost;
pub mod decode;
pub mod diff;
pub mod header;
pub mod instrument;
pub mod merge;
pub mod plot;
pub mod report;
pub mod sample;
pub mod summary;
