//! lsp (to be filled in).
