//! relata-model against the fake server (and, ignored by default, a real model server).
//! One test binary with modules, so the workspace links it once.

mod support;

mod concurrency;
mod dialects;
mod failures;
mod real_model;
mod redaction;
