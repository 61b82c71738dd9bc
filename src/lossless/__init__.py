"""lossless."""
