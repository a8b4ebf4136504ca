//! store (to be filled in).
