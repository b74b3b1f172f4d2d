//! Tests of the map dumper: BTF parsing and formatting on hand-built
//! blobs, the fdinfo listing and the rendering on fixtures, and (as root)
//! maps of this process created, filled and dumped.

mod builder;
mod formatting;
mod listing;
mod live;
mod malformed;
