//! placeholder, replaced in this session
