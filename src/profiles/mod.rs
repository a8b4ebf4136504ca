//! profiles (to be filled in).
