//!include dot_unit
