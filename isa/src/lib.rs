//! The gfx90a ISA engine (placeholder).
