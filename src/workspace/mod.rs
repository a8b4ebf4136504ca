//! workspace (to be filled in).
