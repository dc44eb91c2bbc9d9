//! relata-queue
