//! `FrameCodec` / `MessageCodec` byte streams fed in chunks.
//!
//! The first byte is a control byte, the rest is the stream:
//!
//! - bits 0-1: the length prefix (0 bijou64, 1 LEB128, 2 u32-BE, 3 all
//!   three);
//! - bit 2: the maximum frame length (0 the default 50 MiB, 1 256 bytes);
//! - bits 3-7: the seed of the chunk sizes (every byte alone, small or
//!   large random chunks, one split point, or the whole stream).
//!
//! The frames and the ending must be those of the whole stream fed at
//! once, whatever the split; framing errors are terminal; the frames,
//! framed again, are exactly the bytes consumed; accepted messages
//! re-encode to their frames.
#![no_main]

use bijou_frame::framing::prefix::{Bijou64, Leb128, LengthPrefix, U32Be};
use bijou_test_support::checks;
use libfuzzer_sys::fuzz_target;

fn feed<P: LengthPrefix>(stream: &[u8], control: u8) {
    let max = if control & 0b100 == 0 {
        bijou_frame::framing::DEFAULT_MAX_FRAME_LENGTH
    } else {
        256
    };
    let sizes = checks::split_sizes(u64::from(control >> 3), stream.len());
    checks::check_stream::<P>(stream, &sizes, max, None);
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, stream)) = data.split_first() else {
        return;
    };
    match control & 0b11 {
        0 => feed::<Bijou64>(stream, control),
        1 => feed::<Leb128>(stream, control),
        2 => feed::<U32Be>(stream, control),
        _ => {
            feed::<Bijou64>(stream, control);
            feed::<Leb128>(stream, control);
            feed::<U32Be>(stream, control);
        }
    }
});
