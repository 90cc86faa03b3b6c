//! Mock model server (being written).
