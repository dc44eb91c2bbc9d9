//! relata-testkit: fixtures for tests that must not need a real model.
//!
//! The centre is [`FakeModelServer`], a fault-injecting fake of an OpenAI-compatible server.
//! It is written over a raw [`tokio::net::TcpListener`] with a minimal HTTP/1.1 parser on
//! purpose: a framework would not let a test write half a body and then reset the
//! connection, or accept a request and never answer. Every response is sent with
//! `Connection: close`, so each request arrives on its own connection and a fault on one
//! cannot leak into the next.
//!
//! - `POST …/chat/completions` answers with the next scripted [`Behaviour`] (a queue), or
//!   with the default behaviour once the queue is empty.
//! - `GET …/models` answers with the configured model list.
//! - Every request received is logged ([`RecordedRequest`]) so a test can assert what was
//!   sent and how many times, and the server tracks the highest number of chat requests it
//!   held open at once (for concurrency bounds).
//!
//! [`harness`] is the one fresh-database-and-queue-prefix harness of the store's tests, the
//! end-to-end tests and the benchmarks, with cleanup in drop guards. [`http::get`] reads
//! a server's `/metrics` and probes over a plain socket.
//!
//! The same server runs as a process, `relata-fake-model`, for manual tests (see that
//! binary's `--help`).

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod fake;
pub mod harness;
pub mod http;
pub mod questions;

pub use fake::{Behaviour, FakeModelServer, FakeOptions, RecordedRequest, Route, Script};
