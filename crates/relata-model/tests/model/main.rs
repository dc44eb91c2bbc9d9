//! relata-model against the fake server (and, ignored by default, a real model server).
//! One test binary with modules, so the workspace links it once.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod support;

mod concurrency;
mod dialects;
mod failures;
mod misbehaviour;
mod real_model;
mod redaction;
