//! IPC NSLP API frames (`pathwise_gist::ipc::Frame`): decode arbitrary bytes as a frame and as a
//! stream of frames cut at an arbitrary point; whatever decodes re-encodes to exactly the bytes
//! it came from (in the protocol version it was written in: 3, or 2, which GIST still serves),
//! and a stream yields the same frames however it is cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pathwise_gist::ipc::{Frame, FrameBuffer};

fn frames(chunks: &[&[u8]]) -> (Vec<Frame>, bool) {
    let mut fb = FrameBuffer::default();
    let mut out = Vec::new();
    for c in chunks {
        fb.extend(c);
        loop {
            match fb.next_frame() {
                Ok(Some(f)) => out.push(f),
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((f, v, n))) = Frame::decode_versioned(data) {
        assert!(n <= data.len());
        let mut again = Vec::new();
        f.encode_version(v, &mut again);
        assert_eq!(again, &data[..n], "{f:?}");
    }
    let cut = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    let (whole, e1) = frames(&[data]);
    let (split, e2) = frames(&[&data[..cut], &data[cut..]]);
    assert_eq!(whole, split);
    assert_eq!(e1, e2);
});
