//! End-to-end tests of the pipeline: the `relata` binary as separate processes, the real
//! PostgreSQL and RabbitMQ on this machine, and the fault-injecting fake model server.
//!
//! Each test gets its own database and its own queue prefix, so tests run in parallel
//! and leave nothing behind.

// Test harness code: a failed unwrap is a failed test, with its location.
#![allow(clippy::unwrap_used)]

mod answers;
mod backfill;
mod badinput;
mod common;
mod entities;
mod faults;
mod flow;
mod knowledge;
mod questions;
mod real_model;
mod report;
mod resolution;
mod restart;
mod review;
