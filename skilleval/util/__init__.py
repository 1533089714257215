"""Small shared helpers with no knowledge of suites, runs or reports."""
