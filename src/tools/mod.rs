//! tools (to be filled in).
