"""A second checker, written from docs/history.md alone (it imports nothing of leasecheck): see
`checker.py`. The tests compare its counts with the project's checker."""
