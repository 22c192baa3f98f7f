//! Running a forwarder as the examples do (placeholder: being moved here from the examples).
