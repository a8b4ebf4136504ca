//! session (to be filled in).
