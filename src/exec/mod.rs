//! exec (to be filled in).
