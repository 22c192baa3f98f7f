//! Packet builder (being written).
