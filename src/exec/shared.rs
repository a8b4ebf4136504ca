//! Shared text (`Arc<str>`) made without a second copy: a file read straight into its shared
//! allocation, and a text of known length written piece by piece into one.
//!
//! Why: snapshots and proposed texts are `Arc<str>`, and `Arc::from(String)` copies. For a
//! large file that copy (and the page faults of touching a second buffer) costs as much as the
//! read itself. Invariant: every `Arc<str>` made here holds valid UTF-8 — read bytes are
//! checked, and a builder only accepts `&str` pieces and must be filled exactly.

use std::io::Read;
use std::sync::Arc;

/// The rest of `file`, expected to be `expected` bytes long (its size when it was opened). A
/// file that turns out longer or shorter is still read whole and right, with one extra copy.
pub(crate) fn read_shared(file: &mut std::fs::File, expected: u64) -> std::io::Result<Arc<[u8]>> {
    let Ok(expected) = usize::try_from(expected) else {
        return Err(std::io::Error::other("the file is too large for this machine's address space"));
    };
    let mut shared = zeroed(expected);
    let buffer = Arc::get_mut(&mut shared).expect("just made, not shared");
    let mut filled = 0;
    while filled < expected {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => return Ok(Arc::from(&buffer[..filled])),
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    // The file may have grown since its size was read: one more read says whether it did.
    let mut probe = [0u8; 512];
    let read = loop {
        match file.read(&mut probe) {
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            result => break result?,
        }
    };
    if read == 0 {
        return Ok(shared);
    }
    let mut whole = Vec::with_capacity(expected + read);
    whole.extend_from_slice(&shared);
    whole.extend_from_slice(&probe[..read]);
    file.read_to_end(&mut whole)?;
    Ok(Arc::from(whole))
}

/// A shared allocation of `len` zero bytes, made in place (no `Vec` copied into it); a large
/// one comes from fresh pages, which are zero already, so nothing is written twice.
fn zeroed(len: usize) -> Arc<[u8]> {
    // SAFETY: zero bytes are valid `u8`s.
    let mut shared = unsafe { Arc::<[u8]>::new_zeroed_slice(len).assume_init() };
    prefault(Arc::get_mut(&mut shared).expect("just made, not shared"));
    shared
}

/// Asks the kernel to map a large buffer's pages in one call, before it is filled: one page
/// fault per 4 KiB costs more than the copy into the page on a virtual machine. Best effort:
/// a kernel without `MADV_POPULATE_WRITE` (before 5.14) faults the pages in as they are used.
#[cfg(target_os = "linux")]
fn prefault(buffer: &mut [u8]) {
    const WORTH_IT: usize = 1 << 20;
    const PAGE: usize = 4096;
    if buffer.len() < WORTH_IT {
        return;
    }
    let start = buffer.as_mut_ptr() as usize;
    let aligned = start.next_multiple_of(PAGE);
    let len = (start + buffer.len() - aligned) / PAGE * PAGE;
    let Some(pointer) = std::ptr::NonNull::new(aligned as *mut std::ffi::c_void) else {
        return;
    };
    // SAFETY: the range is whole pages inside `buffer`, which this code owns exclusively;
    // populating pages for writing does not change their contents.
    let _ = unsafe { nix::sys::mman::madvise(pointer, len, nix::sys::mman::MmapAdvise::MADV_POPULATE_WRITE) };
}

#[cfg(not(target_os = "linux"))]
fn prefault(_buffer: &mut [u8]) {}

/// `bytes` as text when they are UTF-8 (no copy); `None` otherwise.
pub(crate) fn into_shared_str(bytes: Arc<[u8]>) -> Option<Arc<str>> {
    std::str::from_utf8(&bytes).ok()?;
    // SAFETY: the bytes were just checked to be UTF-8, and `str` has the layout of `[u8]`.
    Some(unsafe { Arc::from_raw(Arc::into_raw(bytes) as *const str) })
}

/// Writes a text of a length known in advance straight into its shared allocation.
pub(crate) struct SharedStrBuilder {
    buffer: Arc<[u8]>,
    filled: usize,
}

impl SharedStrBuilder {
    pub(crate) fn with_len(len: usize) -> Self {
        Self { buffer: zeroed(len), filled: 0 }
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> usize {
        self.filled
    }

    /// Appends `piece`. Panics when it does not fit in the announced length (a bug in the
    /// caller's length computation, never input-dependent).
    pub(crate) fn push_str(&mut self, piece: &str) {
        let buffer = Arc::get_mut(&mut self.buffer).expect("never shared before `finish`");
        buffer[self.filled..self.filled + piece.len()].copy_from_slice(piece.as_bytes());
        self.filled += piece.len();
    }

    /// The text. Panics unless exactly the announced length was written.
    pub(crate) fn finish(self) -> Arc<str> {
        assert_eq!(self.filled, self.buffer.len(), "a shared text must be filled exactly");
        // SAFETY: the buffer is the concatenation of `&str` pieces (each UTF-8, so the whole is),
        // and `str` has the layout of `[u8]`.
        unsafe { Arc::from_raw(Arc::into_raw(self.buffer) as *const str) }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn a_file_is_read_whole_whether_it_grew_shrank_or_kept_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::File::create(&path).unwrap().write_all("héllo\n".as_bytes()).unwrap();
        for expected in [7, 3, 20, 0] {
            let mut file = std::fs::File::open(&path).unwrap();
            let bytes = read_shared(&mut file, expected).unwrap();
            assert_eq!(&*into_shared_str(bytes).unwrap(), "héllo\n", "expected size {expected}");
        }
    }

    #[test]
    fn a_file_that_grew_by_more_than_one_read_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let text = "x".repeat(5000);
        std::fs::write(&path, &text).unwrap();
        let mut file = std::fs::File::open(&path).unwrap();
        assert_eq!(&*into_shared_str(read_shared(&mut file, 10).unwrap()).unwrap(), text);
    }

    #[test]
    fn large_texts_are_read_and_built_whole() {
        // Above the size where buffers are prefaulted.
        let text: String = (0..300_000).map(|i| format!("{i}\n")).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("large");
        std::fs::write(&path, &text).unwrap();
        let mut file = std::fs::File::open(&path).unwrap();
        let read = into_shared_str(read_shared(&mut file, text.len() as u64).unwrap()).unwrap();
        assert_eq!(*read, *text);
        let mut builder = SharedStrBuilder::with_len(text.len() * 2);
        builder.push_str(&read);
        builder.push_str(&text);
        let built = builder.finish();
        assert_eq!((&built[..text.len()], &built[text.len()..]), (text.as_str(), text.as_str()));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_not_text() {
        assert!(into_shared_str(Arc::from(&b"\xff\xfe"[..])).is_none());
        assert_eq!(&*into_shared_str(Arc::from(&b"ok"[..])).unwrap(), "ok");
    }

    #[test]
    fn a_builder_filled_exactly_gives_the_concatenation() {
        let mut builder = SharedStrBuilder::with_len(8);
        builder.push_str("ab");
        builder.push_str("");
        builder.push_str("cdéf");
        assert_eq!(builder.len(), 7);
        builder.push_str("g");
        assert_eq!(&*builder.finish(), "abcdéfg");
    }

    #[test]
    #[should_panic(expected = "filled exactly")]
    fn a_builder_left_short_is_a_bug() {
        let mut builder = SharedStrBuilder::with_len(3);
        builder.push_str("ab");
        let _ = builder.finish();
    }
}
