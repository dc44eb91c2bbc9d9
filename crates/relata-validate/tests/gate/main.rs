//! The gate's integration tests: one binary, one module per concern.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod corpus;
mod knowledge;
mod props;
mod settings;
mod support;
