//! hawser controller (work in progress).
