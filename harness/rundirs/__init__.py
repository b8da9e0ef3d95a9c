"""Upkeep of the results directory: listing stored runs, retention."""
