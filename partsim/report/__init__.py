"""Renderers: one canonical record (the summary dict) in, text out."""
