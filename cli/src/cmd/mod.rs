//! One module per subcommand.
pub mod decode;
pub mod header;
pub mod sample;
pub mod summary;
