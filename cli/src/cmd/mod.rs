//! One module per subcommand.
pub mod analysis_opts;
pub mod analyze;
pub mod analyze_text;
pub mod cost;
pub mod decode;
pub mod diff;
pub mod header;
pub mod plot;
pub mod report;
pub mod sample;
pub mod summary;
