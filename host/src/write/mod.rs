//! Writers over `io::Write`: one module per output format.
pub mod perfetto;
