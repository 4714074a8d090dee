"""Rewrite rules: one module per rule, one public function with the module's name."""
