//! The textbook degree-7 Taylor exp (placeholder module; filled in by the Taylor work).
