//! `QueueError`: what went wrong talking to the broker, and whether trying again can help.

use lapin::protocol::{AMQPErrorKind, AMQPHardError, AMQPSoftError};

/// An error from the broker layer.
///
/// The kind is decided once, here, at the boundary: [`QueueError::is_retryable`] says
/// whether the same operation may succeed later (a lost connection, a closed channel, a
/// confirm that did not arrive) or never will (a topology mismatch, an unroutable
/// message, a refused login).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The connection could not be opened or was lost.
    #[error("broker connection failed: {0}")]
    Connection(String),
    /// A channel operation failed because the channel (or its connection) ended.
    #[error("broker channel failed: {0}")]
    Channel(String),
    /// A queue already exists with arguments different from what relata declares.
    ///
    /// relata never deletes a queue to resolve this: the queue may hold jobs.
    #[error(
        "queue {queue:?} already exists with different arguments than relata declares \
         (argument {argument}): {detail}. relata does not delete queues; drain and delete \
         it by hand (rabbitmqctl delete_queue {queue}) or change the configured prefix"
    )]
    TopologyMismatch {
        queue: String,
        /// The argument the broker named, or `"unknown"`.
        argument: String,
        /// The broker's own words.
        detail: String,
    },
    /// A mandatory publish matched no queue and was returned by the broker.
    #[error(
        "message to exchange {exchange:?} with routing key {routing_key:?} was returned as unroutable ({reply})"
    )]
    Unroutable {
        exchange: String,
        routing_key: String,
        reply: String,
    },
    /// The broker negatively acknowledged a publish: it did not take responsibility for it.
    #[error("broker refused (nack) the message to {routing_key:?}")]
    Nacked { routing_key: String },
    /// No confirm arrived in time; the message may or may not have been stored.
    #[error("no publisher confirm for the message to {routing_key:?} within {timeout_ms} ms")]
    ConfirmTimeout {
        routing_key: String,
        timeout_ms: u64,
    },
    /// The broker refused the credentials, the virtual host or an operation.
    #[error("broker refused access: {0}")]
    AccessRefused(String),
    /// A retry tier that the topology does not declare.
    #[error("no retry queue is declared for a delay of {delay_ms} ms; declared tiers: {declared}")]
    UnknownRetryTier { delay_ms: u64, declared: String },
    /// Invalid configuration, found before talking to the broker.
    #[error("invalid queue configuration: {0}")]
    Config(String),
    /// Any other broker or protocol error.
    #[error("broker error: {0}")]
    Other(String),
}

impl QueueError {
    /// May the same operation succeed if tried again later (after a reconnect)?
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            QueueError::Connection(_)
                | QueueError::Channel(_)
                | QueueError::Nacked { .. }
                | QueueError::ConfirmTimeout { .. }
        )
    }

    /// Does this error mean the connection or channel in use should be replaced?
    pub(crate) fn needs_new_channel(&self) -> bool {
        matches!(
            self,
            QueueError::Connection(_) | QueueError::Channel(_) | QueueError::ConfirmTimeout { .. }
        )
    }

    /// Classify a lapin error met while talking to the broker.
    pub(crate) fn from_lapin(e: &lapin::Error) -> QueueError {
        use lapin::ErrorKind as K;
        let text = e.to_string();
        match e.kind() {
            K::IOError(_) | K::MissingHeartbeatError | K::InvalidConnectionState(_) => {
                QueueError::Connection(text)
            }
            K::InvalidChannel(_) | K::InvalidChannelState(..) | K::ChannelsLimitReached => {
                QueueError::Channel(text)
            }
            K::ProtocolError(amqp) => match amqp.kind() {
                AMQPErrorKind::Soft(AMQPSoftError::ACCESSREFUSED)
                | AMQPErrorKind::Hard(AMQPHardError::NOTALLOWED) => QueueError::AccessRefused(text),
                // The broker closing the connection (restart, `stop_app`, an operator) is
                // transient; so is a resource problem on its side.
                AMQPErrorKind::Hard(AMQPHardError::CONNECTIONFORCED)
                | AMQPErrorKind::Soft(AMQPSoftError::RESOURCELOCKED)
                | AMQPErrorKind::Hard(AMQPHardError::RESOURCEERROR)
                | AMQPErrorKind::Hard(AMQPHardError::INTERNALERROR) => QueueError::Connection(text),
                _ => QueueError::Other(text),
            },
            _ => QueueError::Other(text),
        }
    }
}

/// Turn a failed declaration into [`QueueError::TopologyMismatch`] when the broker said
/// PRECONDITION_FAILED, naming the queue and the argument.
pub(crate) fn declare_error(queue: &str, e: &lapin::Error) -> QueueError {
    let precondition = match e.kind() {
        lapin::ErrorKind::ProtocolError(amqp)
            if matches!(
                amqp.kind(),
                AMQPErrorKind::Soft(AMQPSoftError::PRECONDITIONFAILED)
            ) =>
        {
            Some(amqp)
        }
        _ => None,
    };
    if let Some(amqp) = precondition {
        let detail = amqp.get_message().as_str().to_owned();
        return QueueError::TopologyMismatch {
            queue: queue.to_owned(),
            argument: mismatched_argument(&detail).unwrap_or("unknown").to_owned(),
            detail,
        };
    }
    QueueError::from_lapin(e)
}

/// RabbitMQ says `inequivalent arg 'x-queue-type' for queue '...'`.
fn mismatched_argument(detail: &str) -> Option<&str> {
    let rest = detail.split_once("inequivalent arg '")?.1;
    Some(rest.split_once('\'')?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_argument_in_rabbitmqs_message() {
        let m = "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': \
                 received the value 'quorum' of type 'longstr' but current is none";
        assert_eq!(mismatched_argument(m), Some("x-queue-type"));
        assert_eq!(mismatched_argument("PRECONDITION_FAILED - other"), None);
    }

    #[test]
    fn retryability() {
        assert!(QueueError::Connection("x".into()).is_retryable());
        assert!(QueueError::Channel("x".into()).is_retryable());
        assert!(
            !QueueError::Unroutable {
                exchange: String::new(),
                routing_key: "q".into(),
                reply: "NO_ROUTE".into()
            }
            .is_retryable()
        );
        assert!(
            !QueueError::TopologyMismatch {
                queue: "q".into(),
                argument: "a".into(),
                detail: "d".into()
            }
            .is_retryable()
        );
    }
}
