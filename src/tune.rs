//! Letting the overhead model tune a user's graph (placeholder: being moved here from the examples).
