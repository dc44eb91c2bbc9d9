//! relata-producer
