//! The comparison key for entity names and claim subjects.

/// Unicode NFC, every run of whitespace collapsed to one space, trimmed, then Unicode
/// lowercase. This *is* the gate's key (`relata_validate::normalize::key`), so the store
/// groups subjects exactly as the gate compared them: claims about "the same normalised
/// entity" are claims whose subjects have equal keys.
pub fn normalize_name(s: &str) -> String {
    relata_validate::normalize::key(s)
}

#[cfg(test)]
mod tests {
    use super::normalize_name;

    #[test]
    fn keys_fold_case_space_and_composition() {
        assert_eq!(normalize_name("  United\t\nStates "), "united states");
        assert_eq!(normalize_name("Ame\u{301}lie"), normalize_name("Amélie"));
        assert_eq!(normalize_name("ÉCOLE"), "école");
    }
}
