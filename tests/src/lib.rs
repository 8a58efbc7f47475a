//! End-to-end tests live in `tests/`; this library only holds helpers they share.
