//! relata-testkit
