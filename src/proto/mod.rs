//! Wire formats, with no I/O and no runtime: HTTP/1.1 request heads and the response parser,
//! HTTP/2 frames, HPACK and its Huffman code, HTTP/3 frames and QPACK. Used by the protocol sessions, the `-v` trace and
//! the fuzz targets alike.

pub mod h1;
pub mod h2;
pub mod h3;
pub mod hpack;
mod huffman;

/// The name of the code a server reset a request's stream with: HTTP/2's codes are below 0x100,
/// HTTP/3's from 0x100 on (RFC 9114 §8.1), so one table serves every run.
pub fn stream_error_name(code: u32) -> String {
    if code < 0x100 {
        h2::error_code_name(code)
    } else {
        h3::error_code_name(u64::from(code))
    }
}
