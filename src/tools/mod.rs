//! Address checks shared by screening and the public tools, and the local generators.

pub mod classify;
pub mod disposable;
pub mod subject_lines;
