"""Capability tables: the table model, loading with validation and cache, provider names, lint."""
