//! relata-worker
