//! The one error type, and its class.

use std::time::Duration;

use relata_core::Reason;

/// How a failure is handled. Decided once, in this crate, at the boundary; nothing
/// downstream re-derives it from a status code or a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The request may succeed if sent again: retried here, then requeued by the worker.
    Transport,
    /// The provider refused the request itself: never retried.
    Permanent,
    /// The provider answered, and the answer is unusable: recorded once, never retried.
    InvalidOutput,
}

impl ErrorClass {
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Transport => "transport",
            ErrorClass::Permanent => "permanent",
            ErrorClass::InvalidOutput => "invalid_output",
        }
    }
}

/// What kind of transport failure. A closed set: it is the `kind` label of
/// `relata_model_transport_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TransportKind {
    /// The name did not resolve.
    Dns,
    /// Nothing listening, or the connection could not be made for another reason.
    ConnectRefused,
    /// The connection was not made within the connect timeout.
    ConnectTimeout,
    /// The TLS handshake failed.
    Tls,
    /// The connection was reset or closed before a response arrived.
    Reset,
    /// The whole request (connect, send, response, body) did not finish in time.
    Timeout,
    /// The response body was cut off.
    BodyCutOff,
    /// HTTP 408.
    Http408,
    /// HTTP 429.
    Http429,
    /// HTTP 500.
    Http500,
    /// HTTP 502.
    Http502,
    /// HTTP 503.
    Http503,
    /// HTTP 504.
    Http504,
    /// Any other failure below HTTP.
    Other,
}

impl TransportKind {
    pub const ALL: &'static [TransportKind] = &[
        TransportKind::Dns,
        TransportKind::ConnectRefused,
        TransportKind::ConnectTimeout,
        TransportKind::Tls,
        TransportKind::Reset,
        TransportKind::Timeout,
        TransportKind::BodyCutOff,
        TransportKind::Http408,
        TransportKind::Http429,
        TransportKind::Http500,
        TransportKind::Http502,
        TransportKind::Http503,
        TransportKind::Http504,
        TransportKind::Other,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            TransportKind::Dns => "dns",
            TransportKind::ConnectRefused => "connect_refused",
            TransportKind::ConnectTimeout => "connect_timeout",
            TransportKind::Tls => "tls",
            TransportKind::Reset => "reset",
            TransportKind::Timeout => "timeout",
            TransportKind::BodyCutOff => "body_cut_off",
            TransportKind::Http408 => "http_408",
            TransportKind::Http429 => "http_429",
            TransportKind::Http500 => "http_500",
            TransportKind::Http502 => "http_502",
            TransportKind::Http503 => "http_503",
            TransportKind::Http504 => "http_504",
            TransportKind::Other => "other",
        }
    }

    /// The transport kind of an HTTP status, or `None` when the status is not transient.
    pub const fn from_status(status: u16) -> Option<TransportKind> {
        match status {
            408 => Some(TransportKind::Http408),
            429 => Some(TransportKind::Http429),
            500 => Some(TransportKind::Http500),
            502 => Some(TransportKind::Http502),
            503 => Some(TransportKind::Http503),
            504 => Some(TransportKind::Http504),
            _ => None,
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every way a model call can fail. The variant *is* the class.
///
/// Messages carried here are bounded and redacted before the error is built: an error can
/// be logged, stored or shown without further care.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// Worth sending again: retried in-process within the configured bounds, then the
    /// worker requeues.
    #[error("transport failure ({kind}): {detail}")]
    Transport {
        kind: TransportKind,
        /// What the server asked for (`Retry-After`), before capping.
        retry_after: Option<Duration>,
        detail: String,
    },
    /// The provider refused the request: 400, 401, 403, 404, 413, 422 and every status not
    /// known to be transient; also a 200 whose envelope is not a chat completion at all.
    #[error("provider refused the request (HTTP {status}): {message}")]
    Permanent { status: u16, message: String },
    /// A 200 whose content is unusable at envelope level (truncated, refused, empty, too
    /// large). Counted once when it happens; never retried.
    #[error("invalid model output ({reason}): {detail}")]
    InvalidOutput { reason: Reason, detail: String },
}

impl ModelError {
    pub fn class(&self) -> ErrorClass {
        match self {
            ModelError::Transport { .. } => ErrorClass::Transport,
            ModelError::Permanent { .. } => ErrorClass::Permanent,
            ModelError::InvalidOutput { .. } => ErrorClass::InvalidOutput,
        }
    }

    /// Only transport failures are retried.
    pub fn is_retryable(&self) -> bool {
        self.class() == ErrorClass::Transport
    }

    pub fn transport_kind(&self) -> Option<TransportKind> {
        match self {
            ModelError::Transport { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Transport { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Permanent { status, .. } => Some(*status),
            ModelError::Transport { kind, .. } => match kind {
                TransportKind::Http408 => Some(408),
                TransportKind::Http429 => Some(429),
                TransportKind::Http500 => Some(500),
                TransportKind::Http502 => Some(502),
                TransportKind::Http503 => Some(503),
                TransportKind::Http504 => Some(504),
                _ => None,
            },
            ModelError::InvalidOutput { .. } => None,
        }
    }

    pub fn invalid_reason(&self) -> Option<Reason> {
        match self {
            ModelError::InvalidOutput { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    /// Does this failure say the *deployment* is misconfigured — a rejected key (401, 403),
    /// a model or route that does not exist (404), an endpoint that has moved (3xx) —
    /// rather than that one request was bad? Every job would fail the same way, so a
    /// worker stops taking jobs instead of dead-lettering its backlog one by one.
    pub fn is_configuration_failure(&self) -> bool {
        matches!(self, ModelError::Permanent { status, .. }
            if matches!(status, 401 | 403 | 404 | 300..=399))
    }
}

/// A redirect from the model endpoint. Never followed: the request carries the document
/// text, and the configured endpoint is the only place it may go (a 307/308 would re-send
/// it to wherever the redirect points; a 301/302 would turn the POST into a GET).
pub(crate) fn redirect(status: u16, location: Option<&str>) -> ModelError {
    let target = match location {
        Some(l) if !l.trim().is_empty() => l.trim(),
        _ => "(no Location header)",
    };
    ModelError::Permanent {
        status,
        message: format!(
            "the model endpoint redirected (HTTP {status}) to {target}; relata does not follow redirects, so that document text goes only to the configured endpoint: set RELATA_MODEL_URL to the final URL"
        ),
    }
}

/// Classify an HTTP status that is not a success.
pub(crate) fn classify_status(
    status: u16,
    retry_after: Option<Duration>,
    message: String,
) -> ModelError {
    match TransportKind::from_status(status) {
        Some(kind) => ModelError::Transport {
            kind,
            retry_after,
            detail: message,
        },
        None => ModelError::Permanent { status, message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified_once() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert_eq!(
                classify_status(s, None, String::new()).class(),
                ErrorClass::Transport,
                "{s}"
            );
        }
        for s in [400, 401, 403, 404, 409, 413, 418, 422, 501, 505, 599, 302] {
            let e = classify_status(s, None, String::new());
            assert_eq!(e.class(), ErrorClass::Permanent, "{s}");
            assert!(!e.is_retryable());
        }
        assert!(classify_status(401, None, String::new()).is_configuration_failure());
        assert!(redirect(307, Some("http://elsewhere/v1")).is_configuration_failure());
        assert!(!classify_status(400, None, String::new()).is_configuration_failure());
    }

    #[test]
    fn transport_kind_labels_are_unique() {
        let mut labels: Vec<_> = TransportKind::ALL.iter().map(|k| k.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), TransportKind::ALL.len());
    }
}
