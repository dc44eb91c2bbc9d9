//! relata-model
