//! The emulated Trainium device (work in progress; see issue 3).
