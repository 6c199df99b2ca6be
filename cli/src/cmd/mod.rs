//! One module per subcommand.
pub mod header;
