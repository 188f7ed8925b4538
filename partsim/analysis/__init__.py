"""Questions asked of predictions: verify against observations, blame, what-if, the usability-checker port."""
