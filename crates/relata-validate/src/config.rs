//! Check settings: `enabled` and `severity` are independent, so a check can be made
//! quieter (warn) without being turned off, and turning one off is its own visible switch.

use relata_core::{Check, Severity};
use std::collections::BTreeMap;

use crate::support::SupportSettings;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSetting {
    pub enabled: bool,
    pub severity: Severity,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "check {0} cannot be disabled or set to warn: it is structural (a stored row would lose its link to the source, or reference something never sent)"
    )]
    Structural(Check),
    #[error(
        "answer check {0} cannot be disabled or set to warn: it is structural (a citation would resolve to nothing, or an answer would cite nothing)"
    )]
    StructuralAnswer(relata_core::AnswerCheck),
    #[error("the support check's min_share must be above 0 and at most 1, not {0}")]
    SupportShare(f64),
}

/// The gate's settings. Every check is present; the default is every check enabled and
/// rejecting, except `figure_in_quote`, which warns.
#[derive(Debug, Clone, PartialEq)]
pub struct GateConfig {
    checks: BTreeMap<Check, CheckSetting>,
    support: SupportSettings,
}

impl Default for GateConfig {
    fn default() -> Self {
        let checks = Check::ALL
            .iter()
            .map(|&c| {
                let severity = match c {
                    Check::FigureInQuote => Severity::Warn,
                    _ => Severity::Reject,
                };
                (
                    c,
                    CheckSetting {
                        enabled: true,
                        severity,
                    },
                )
            })
            .collect();
        GateConfig {
            checks,
            support: SupportSettings::default(),
        }
    }
}

impl GateConfig {
    pub fn setting(&self, check: Check) -> CheckSetting {
        self.checks[&check]
    }

    /// Change one check. Structural checks refuse anything but enabled + reject.
    pub fn set(&mut self, check: Check, setting: CheckSetting) -> Result<(), ConfigError> {
        if check.is_structural() && (!setting.enabled || setting.severity != Severity::Reject) {
            return Err(ConfigError::Structural(check));
        }
        self.checks.insert(check, setting);
        Ok(())
    }

    /// The support check's own settings.
    pub fn support(&self) -> SupportSettings {
        self.support
    }

    /// Change the support check's share of content words. Refused outside (0, 1].
    pub fn set_support(&mut self, support: SupportSettings) -> Result<(), ConfigError> {
        let share = support.min_share;
        if !(share > 0.0 && share <= 1.0) {
            return Err(ConfigError::SupportShare(share));
        }
        self.support = support;
        Ok(())
    }

    /// Every check with its setting, in a stable order (for the start-up log and the
    /// `relata_validation_check_enabled` metric).
    pub fn iter(&self) -> impl Iterator<Item = (Check, CheckSetting)> + '_ {
        self.checks.iter().map(|(c, s)| (*c, *s))
    }
}
