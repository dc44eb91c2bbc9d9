//! Integration tests against a real RabbitMQ (`scripts/ensure-services.sh` starts the
//! local one; `RELATA_TEST_AMQP_URL` points elsewhere). Each test uses its own queue
//! prefix and deletes its queues at the end.
//!
//! `restart::broker_restart_resumes_consuming` restarts the RabbitMQ application and is
//! ignored by default: run it alone with
//! `cargo test -p relata-queue --test broker -- --ignored broker_restart`.

mod common;
mod consume;
mod publish;
mod restart;
mod topology;
