//! Analyses of Kineto traces (work in progress; see issue 6).
