//! Fuzzes position conversion (`workspace::position`) in UTF-8, UTF-16 and UTF-32 on any text:
//! conversions clamp instead of failing, land on character boundaries, round-trip, agree between
//! the line index over a `&str` and the rope functions, and agree across encodings.
//! Input: 8 bytes (a line and a character, little-endian u32s, each taken modulo a small range so
//! that most positions fall inside the text), 4 bytes (a byte offset), then the text.
#![no_main]

use agentls::workspace::position::{
    LineIndex, Position, PositionEncoding, offset_of, position_of, rope_char_index, rope_position,
};
use libfuzzer_sys::fuzz_target;
use ropey::Rope;

const ENCODINGS: [PositionEncoding; 3] =
    [PositionEncoding::Utf8, PositionEncoding::Utf16, PositionEncoding::Utf32];

fn u32_at(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
}

fn floor_boundary(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 12 {
        return;
    }
    let Ok(text) = std::str::from_utf8(&data[12..]) else { return };
    let (line, character, offset) = (u32_at(&data[0..4]), u32_at(&data[4..8]), u32_at(&data[8..12]) as usize);
    // Mostly positions near the text, sometimes anything.
    let line = if line & 1 == 0 { (line >> 1) % 8 } else { line >> 1 };
    let character = if character & 1 == 0 { (character >> 1) % 64 } else { character >> 1 };
    let offset = if offset & 1 == 0 { (offset >> 1) % (text.len() + 2) } else { offset >> 1 };
    let position = Position::new(line, character);
    let index = LineIndex::new(text);
    let rope = Rope::from_str(text);
    assert_eq!(index.line_count(), rope.len_lines(), "the index and the rope count the same lines");

    // Where an offset clamps to: its character's start, at most the end of its line's content.
    let clamped = {
        let at = floor_boundary(text, offset);
        at.min(index.line_content_end(text, index.line_of(at)))
    };
    let mut offsets_of_clamped = Vec::new();
    for encoding in ENCODINGS {
        let at = offset_of(text, position, encoding);
        assert!(at <= text.len() && text.is_char_boundary(at), "{encoding:?}: {at} is a boundary");
        assert_eq!(index.offset(text, position, encoding), at);
        let back = position_of(text, at, encoding);
        assert_eq!(
            offset_of(text, back, encoding),
            at,
            "{encoding:?}: an offset of a position is a fixed point"
        );
        assert_eq!(
            rope_char_index(&rope, position, encoding),
            rope.byte_to_char(at),
            "{encoding:?}: the rope agrees on {position:?}"
        );
        assert_eq!(
            rope_position(&rope, rope.byte_to_char(at), encoding),
            back,
            "{encoding:?}: the rope agrees on {at}"
        );

        let of_offset = position_of(text, offset, encoding);
        assert_eq!(
            position_of(text, clamped, encoding),
            of_offset,
            "{encoding:?}: {offset} clamps to {clamped}"
        );
        let there = offset_of(text, of_offset, encoding);
        assert_eq!(there, clamped, "{encoding:?}: offset {offset} round-trips to {clamped}");
        offsets_of_clamped.push(there);
        let units: usize =
            text[index.line_start(of_offset.line as usize)..clamped].chars().map(|c| encoding.units(c)).sum();
        assert_eq!(of_offset.character as usize, units, "{encoding:?}: the column counts code units");
    }
    assert!(offsets_of_clamped.windows(2).all(|w| w[0] == w[1]), "the encodings agree");
});
