//! Wire formats, with no I/O and no runtime: HTTP/1.1 request heads and the response parser,
//! HTTP/2 frames, HPACK and its Huffman code, HTTP/3 frames and QPACK. Used by the protocol sessions, the `-v` trace and
//! the fuzz targets alike.

pub mod h1;
pub mod h2;
pub mod h3;
pub mod hpack;
mod huffman;
