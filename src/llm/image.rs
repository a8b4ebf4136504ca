//! What an image in a request weighs: its pixel size read from the file's header (PNG, JPEG,
//! GIF, WebP) and the input tokens a provider counts for it, for the context estimate.
//!
//! Invariants:
//! - Only the header is read (no decoding); a file this cannot read is counted at the most an
//!   image can cost ([`MAX_IMAGE_TOKENS`]), never at zero.
//! - The count follows Anthropic's rule (the dearest of the four providers for the same image):
//!   the image scaled down to at most [`MAX_EDGE`] pixels on its long edge, then `width × height
//!   ÷ 750` tokens, at most [`MAX_IMAGE_TOKENS`]. OpenAI's tiles and Gemini's fixed counts come
//!   out lower, so the estimate errs toward compacting early rather than overflowing.

use super::types::Image;

/// The long edge a provider scales a larger image down to.
pub const MAX_EDGE: u32 = 1568;
/// The most input tokens one image costs after the provider scaled it.
pub const MAX_IMAGE_TOKENS: u64 = 1600;
/// Pixels per token.
const PIXELS_PER_TOKEN: u64 = 750;

impl Image {
    /// Width and height in pixels, from the header; `None` for a format or file this cannot read.
    pub fn dimensions(&self) -> Option<(u32, u32)> {
        let d = self.data.as_slice();
        let be16 = |at: usize| Some(u32::from(u16::from_be_bytes(d.get(at..at + 2)?.try_into().ok()?)));
        let le16 = |at: usize| Some(u32::from(u16::from_le_bytes(d.get(at..at + 2)?.try_into().ok()?)));
        let le24 = |at: usize| {
            let b = d.get(at..at + 3)?;
            Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
        };
        let be32 = |at: usize| Some(u32::from_be_bytes(d.get(at..at + 4)?.try_into().ok()?));
        let size = if d.starts_with(b"\x89PNG\r\n\x1a\n") && d.get(12..16) == Some(b"IHDR") {
            (be32(16)?, be32(20)?)
        } else if d.starts_with(b"GIF87a") || d.starts_with(b"GIF89a") {
            (le16(6)?, le16(8)?)
        } else if d.starts_with(b"RIFF") && d.get(8..12) == Some(b"WEBP") {
            match d.get(12..16)? {
                b"VP8X" => (le24(24)? + 1, le24(27)? + 1),
                b"VP8 " => (le16(26)? & 0x3fff, le16(28)? & 0x3fff),
                b"VP8L" => {
                    let bits = u32::from_le_bytes(d.get(21..25)?.try_into().ok()?);
                    ((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1)
                }
                _ => return None,
            }
        } else if d.starts_with(&[0xff, 0xd8]) {
            jpeg_size(d, be16)?
        } else {
            return None;
        };
        (size.0 > 0 && size.1 > 0).then_some(size)
    }

    /// The input tokens the image is estimated to cost (see the module's invariants).
    pub fn estimated_tokens(&self) -> u64 {
        let Some((width, height)) = self.dimensions() else { return MAX_IMAGE_TOKENS };
        let (width, height) = (u64::from(width), u64::from(height));
        let long = width.max(height);
        let edge = u64::from(MAX_EDGE);
        let (width, height) = match long > edge {
            true => ((width * edge / long).max(1), (height * edge / long).max(1)),
            false => (width, height),
        };
        (width * height).div_ceil(PIXELS_PER_TOKEN).min(MAX_IMAGE_TOKENS)
    }
}

/// The size in a JPEG's start-of-frame segment, walking the segments before it.
fn jpeg_size(d: &[u8], be16: impl Fn(usize) -> Option<u32>) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        if *d.get(at)? != 0xff {
            return None;
        }
        let marker = *d.get(at + 1)?;
        match marker {
            // Fill bytes before a marker.
            0xff => at += 1,
            // Markers without a length: TEM, RSTn.
            0x01 | 0xd0..=0xd7 => at += 2,
            // Start of frame (not DHT, JPG, DAC): length, precision, height, width.
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                return Some((be16(at + 7)?, be16(at + 5)?));
            }
            // Start of scan or end of image before any frame: no size.
            0xda | 0xd9 => return None,
            _ => at += 2 + usize::try_from(be16(at + 2)?).ok()?,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(data: Vec<u8>) -> Image {
        Image { media_type: "image/x".into(), data }
    }

    fn png(width: u32, height: u32) -> Image {
        let mut d = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        d.extend(width.to_be_bytes());
        d.extend(height.to_be_bytes());
        d.extend([8, 6, 0, 0, 0]);
        image(d)
    }

    #[test]
    fn reads_the_size_of_each_format_from_its_header() {
        assert_eq!(png(640, 480).dimensions(), Some((640, 480)));
        assert_eq!(image(b"GIF89a\x20\x03\x58\x02\x00".to_vec()).dimensions(), Some((800, 600)));
        // JPEG: SOI, an APP0 segment to skip, fill bytes, then SOF0 (height 300, width 400).
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x4a, 0x46, 0xff, 0xff];
        jpeg.extend([0xc0, 0x00, 0x11, 0x08, 0x01, 0x2c, 0x01, 0x90, 0x03]);
        assert_eq!(image(jpeg).dimensions(), Some((400, 300)));
        let mut vp8x = b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00".to_vec();
        vp8x.extend([0x1f, 0x03, 0x00, 0x57, 0x02, 0x00]);
        assert_eq!(image(vp8x).dimensions(), Some((800, 600)));
        let mut vp8l = b"RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f".to_vec();
        // Width 100 and height 50, each stored minus one in 14 bits.
        vp8l.extend((99u32 | 49 << 14).to_le_bytes());
        assert_eq!(image(vp8l).dimensions(), Some((100, 50)));
        let mut vp8 = b"RIFF\x00\x00\x00\x00WEBPVP8 \x00\x00\x00\x00\x00\x00\x00\x9d\x01\x2a".to_vec();
        vp8.extend([0x40, 0x01, 0xf0, 0x00]);
        assert_eq!(image(vp8).dimensions(), Some((320, 240)));
    }

    #[test]
    fn an_unreadable_or_truncated_file_has_no_size() {
        assert_eq!(image(b"not an image".to_vec()).dimensions(), None);
        assert_eq!(image(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00".to_vec()).dimensions(), None);
        assert_eq!(image(vec![0xff, 0xd8, 0xff, 0xda]).dimensions(), None, "a scan before any frame");
        assert_eq!(png(0, 10).dimensions(), None);
    }

    #[test]
    fn tokens_follow_the_pixels_scaled_down_and_capped() {
        assert_eq!(png(200, 200).estimated_tokens(), 54, "40,000 px / 750");
        assert_eq!(png(1000, 1000).estimated_tokens(), 1334);
        // 4000 × 3000 scales to 1568 × 1176: over the cap.
        assert_eq!(png(4000, 3000).estimated_tokens(), MAX_IMAGE_TOKENS);
        // A long strip scales by its long edge: 1568 × 39.
        assert_eq!(png(8000, 200).estimated_tokens(), 82);
        assert_eq!(image(b"unknown".to_vec()).estimated_tokens(), MAX_IMAGE_TOKENS, "never counted as free");
    }
}
