//! Address checks shared by screening and the public tools.

pub mod disposable;
pub mod subject_lines;
