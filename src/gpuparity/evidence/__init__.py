"""Third-party evidence: MLPerf Inference and Training importers, the rules for which rows compare,
reference comparisons and vendor claims checked against all of it (data/: the shipped claims)."""
