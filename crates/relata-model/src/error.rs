//! The one error type, and its class.

use std::time::Duration;

use relata_core::Reason;

relata_core::closed_enum! {
    /// How a failure is handled. Decided once, in this crate, at the boundary; nothing
    /// downstream re-derives it from a status code or a message.
    pub enum ErrorClass: "error class" {
        /// The request may succeed if sent again: retried here, then requeued by the worker.
        Transport = "transport",
        /// The provider refused the request itself: never retried.
        Permanent = "permanent",
        /// The provider answered, and the answer is unusable: recorded once, never retried.
        InvalidOutput = "invalid_output",
    }
}

relata_core::closed_enum! {
    /// What kind of transport failure. A closed set: it is the `kind` label of
    /// `relata_model_transport_errors_total`.
    #[non_exhaustive]
    pub enum TransportKind: "transport kind" {
        /// The name did not resolve.
        Dns = "dns",
        /// Nothing listening, or the connection could not be made for another reason.
        ConnectRefused = "connect_refused",
        /// The connection was not made within the connect timeout.
        ConnectTimeout = "connect_timeout",
        /// The TLS handshake failed.
        Tls = "tls",
        /// The connection was reset or closed before a response arrived.
        Reset = "reset",
        /// The whole request (connect, send, response, body) did not finish in time.
        Timeout = "timeout",
        /// The response body was cut off.
        BodyCutOff = "body_cut_off",
        /// HTTP 408.
        Http408 = "http_408",
        /// HTTP 429.
        Http429 = "http_429",
        /// HTTP 500.
        Http500 = "http_500",
        /// HTTP 502.
        Http502 = "http_502",
        /// HTTP 503.
        Http503 = "http_503",
        /// HTTP 504.
        Http504 = "http_504",
        /// Any other failure below HTTP.
        Other = "other",
    }
}

/// The HTTP statuses worth sending again, each with its transport kind. [`StatusClass`]
/// reads it one way, [`TransportKind::http_status`] the other.
const TRANSIENT_STATUSES: [(u16, TransportKind); 6] = [
    (408, TransportKind::Http408),
    (429, TransportKind::Http429),
    (500, TransportKind::Http500),
    (502, TransportKind::Http502),
    (503, TransportKind::Http503),
    (504, TransportKind::Http504),
];

impl TransportKind {
    /// The HTTP status this kind stands for, if it stands for one.
    pub fn http_status(self) -> Option<u16> {
        TRANSIENT_STATUSES
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(s, _)| *s)
    }
}

/// What an HTTP status from the model endpoint means: the one place a status is mapped to
/// how it is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusClass {
    /// 2xx: the body is read and judged.
    Success,
    /// 3xx: never followed (see [`redirect`]); a configuration failure.
    Redirect,
    /// Worth sending again.
    Transient(TransportKind),
    /// 401, 403, 404: a rejected key, a model or route that does not exist. Every request
    /// would fail the same way.
    Configuration,
    /// Every other status: the provider refused this request.
    Refused,
}

impl StatusClass {
    pub(crate) fn of(status: u16) -> StatusClass {
        if let Some((_, kind)) = TRANSIENT_STATUSES.iter().find(|(s, _)| *s == status) {
            return StatusClass::Transient(*kind);
        }
        match status {
            200..=299 => StatusClass::Success,
            300..=399 => StatusClass::Redirect,
            401 | 403 | 404 => StatusClass::Configuration,
            _ => StatusClass::Refused,
        }
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
            ModelError::Transport { kind, .. } => kind.http_status(),
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
            if matches!(StatusClass::of(*status), StatusClass::Configuration | StatusClass::Redirect))
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

/// The error of an HTTP status that is not a success (or of a provider error carried in a
/// 200's body, whose code names a status).
pub(crate) fn status_error(
    status: u16,
    retry_after: Option<Duration>,
    message: String,
) -> ModelError {
    match StatusClass::of(status) {
        StatusClass::Transient(kind) => ModelError::Transport {
            kind,
            retry_after,
            detail: message,
        },
        StatusClass::Success
        | StatusClass::Redirect
        | StatusClass::Configuration
        | StatusClass::Refused => ModelError::Permanent { status, message },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified_once() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert_eq!(
                status_error(s, None, String::new()).class(),
                ErrorClass::Transport,
                "{s}"
            );
        }
        for s in [400, 401, 403, 404, 409, 413, 418, 422, 501, 505, 599, 302] {
            let e = status_error(s, None, String::new());
            assert_eq!(e.class(), ErrorClass::Permanent, "{s}");
            assert!(!e.is_retryable());
        }
        assert!(status_error(401, None, String::new()).is_configuration_failure());
        assert!(redirect(307, Some("http://elsewhere/v1")).is_configuration_failure());
        assert!(!status_error(400, None, String::new()).is_configuration_failure());
    }

    #[test]
    fn transport_kind_labels_are_unique() {
        let mut labels: Vec<_> = TransportKind::ALL.iter().map(|k| k.as_str()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), TransportKind::ALL.len());
    }

    #[test]
    fn a_transient_status_and_its_kind_map_both_ways() {
        for (status, kind) in TRANSIENT_STATUSES {
            assert_eq!(StatusClass::of(status), StatusClass::Transient(kind));
            assert_eq!(kind.http_status(), Some(status));
        }
        assert_eq!(TransportKind::Timeout.http_status(), None);
        assert_eq!(StatusClass::of(200), StatusClass::Success);
        assert_eq!(StatusClass::of(307), StatusClass::Redirect);
        assert_eq!(StatusClass::of(403), StatusClass::Configuration);
        assert_eq!(StatusClass::of(400), StatusClass::Refused);
        assert_eq!(StatusClass::of(501), StatusClass::Refused);
    }
}
