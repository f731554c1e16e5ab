//! The number of one desired version, shared by controller and agent.

use serde::{Deserialize, Serialize};

/// One desired version's number: the controller counts them up, the agent
/// stages each under `v<generation>` and reports the one it serves.
/// Generation 0 is the agent's bootstrap configuration.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Generation(u64);

impl Generation {
    /// The bootstrap configuration an agent serves before any version.
    pub const BOOTSTRAP: Generation = Generation(0);

    pub const fn new(number: u64) -> Self {
        Generation(number)
    }

    /// The number, as the wire and the status report carry it.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// The generation after this one.
    pub const fn next(self) -> Self {
        Generation(self.0.saturating_add(1))
    }

    /// The generation before this one (the bootstrap stays the bootstrap).
    pub const fn previous(self) -> Self {
        Generation(self.0.saturating_sub(1))
    }
}

impl From<u64> for Generation {
    fn from(number: u64) -> Self {
        Generation(number)
    }
}

impl From<Generation> for u64 {
    fn from(generation: Generation) -> Self {
        generation.0
    }
}

impl std::str::FromStr for Generation {
    type Err = std::num::ParseIntError;

    /// A generation written in decimal (a version's directory, a manifest).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(Generation)
    }
}

impl std::fmt::Display for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_count_up_and_print_as_numbers() {
        let first = Generation::BOOTSTRAP.next();
        assert_eq!(first.get(), 1);
        assert!(first > Generation::BOOTSTRAP);
        assert_eq!(first.to_string(), "1");
        assert_eq!(Generation::BOOTSTRAP.previous(), Generation::BOOTSTRAP);
    }
}
