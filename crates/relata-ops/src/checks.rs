//! `relata_validation_check_enabled`, written once for every gate: the workers export their
//! gate's checks and `relata serve` the answer gate's, so the alert
//! `RelataValidationCheckDisabled` covers both the same way.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    check: &'static str,
    severity: &'static str,
}

/// The `relata_validation_check_enabled{check, severity}` family.
#[derive(Clone, Debug, Default)]
pub struct CheckEnabledMetric(Family<CheckLabels, Gauge>);

impl CheckEnabledMetric {
    /// Create the metric and register it.
    pub fn register(registry: &mut Registry) -> CheckEnabledMetric {
        let m = CheckEnabledMetric::default();
        registry.register(
            "relata_validation_check_enabled",
            "1 when a validation check runs, 0 when it is switched off; one series per check, labelled with the severity it is configured at",
            m.0.clone(),
        );
        m
    }
}

/// One validation check as configured at start-up: logged once and exported, so that a
/// 0% failure rate can never be mistaken for "nothing is checked". The labels are the
/// gate's own closed labels (`Check`, `AnswerCheck`, `Severity`), passed as their strings
/// because this crate knows no relata vocabulary.
#[derive(Debug)]
pub struct CheckConfigured {
    pub check: &'static str,
    pub severity: &'static str,
    pub enabled: bool,
}

impl CheckConfigured {
    pub fn emit(&self, m: &CheckEnabledMetric) {
        // One series per check, labelled with the severity it is configured at. A 0 for
        // every severity it is *not* at would read as "disabled" to the alert (`== 0`),
        // which would then fire for every running check.
        m.0.get_or_create(&CheckLabels {
            check: self.check,
            severity: self.severity,
        })
        .set(i64::from(self.enabled));
        if self.enabled {
            tracing::info!(
                check = self.check,
                severity = self.severity,
                "validation check enabled"
            );
        } else {
            tracing::warn!(check = self.check, "validation check DISABLED");
        }
    }
}
