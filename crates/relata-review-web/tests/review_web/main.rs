//! The review page over HTTP (tower's `oneshot`, no listener) and in a real browser
//! (headless Chromium over WebDriver; ignored by default, run by `scripts/test`'s browser
//! pass).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod browser;
mod evidence;
mod http;
mod memory;
mod store;
