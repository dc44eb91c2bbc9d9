//! The gate's integration tests: one binary, one module per concern.

mod corpus;
mod props;
mod settings;
