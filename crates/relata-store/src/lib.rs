//! relata-store
