-- An answer's sentence that the sources it marks do not support (the answer check
-- `citation_supported`, a warning by default) is stored like the other answer warnings.
ALTER TABLE warnings DROP CONSTRAINT warnings_warning_check;
ALTER TABLE warnings ADD CONSTRAINT warnings_warning_check
    CHECK (warning IN ('figure_not_in_quote', 'demoted', 'marker_mismatch',
        'figure_not_in_sources', 'citation_unsupported'));
