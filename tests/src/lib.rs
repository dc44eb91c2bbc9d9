//! relata's system tests live in this package's test targets; the library is empty.
//!
//! - `pipeline/`: the `relata` binary as separate processes against the real PostgreSQL
//!   and RabbitMQ, with the fault-injecting fake model server (and, in tests whose name
//!   holds `real_model`, the real one). Each test takes a fresh database and queue prefix
//!   from `relata_testkit::harness`, removed when the test ends, pass or fail.
//! - `layout/`: the workspace's dependency rules, read from `cargo metadata`.
//!
//! Unit tests and each crate's own integration tests stay beside the crate's code.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]
