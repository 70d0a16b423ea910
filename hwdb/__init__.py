"""Bundled hardware entries (YAML), shipped as the package data ``roofline.hwdb``."""
