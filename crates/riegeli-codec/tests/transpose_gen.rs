//! Proto-like records for transposed-chunk tests: a small protobuf
//! wire-format builder and seeded generators of varied records.

#![allow(dead_code, reason = "shared by several test modules and the bench")]

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a tag.
pub(crate) fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u32) {
    put_varint(out, u64::from(field << 3 | wire_type));
}

/// A protobuf message under construction.
#[derive(Debug, Default, Clone)]
pub(crate) struct Msg(pub(crate) Vec<u8>);

impl Msg {
    pub(crate) fn new() -> Self {
        Self::default()
    }
    pub(crate) fn varint(mut self, field: u32, value: u64) -> Self {
        put_tag(&mut self.0, field, 0);
        put_varint(&mut self.0, value);
        self
    }
    pub(crate) fn fixed32(mut self, field: u32, value: u32) -> Self {
        put_tag(&mut self.0, field, 5);
        self.0.extend(value.to_le_bytes());
        self
    }
    pub(crate) fn fixed64(mut self, field: u32, value: u64) -> Self {
        put_tag(&mut self.0, field, 1);
        self.0.extend(value.to_le_bytes());
        self
    }
    pub(crate) fn bytes(mut self, field: u32, value: &[u8]) -> Self {
        put_tag(&mut self.0, field, 2);
        put_varint(&mut self.0, value.len() as u64);
        self.0.extend_from_slice(value);
        self
    }
    pub(crate) fn message(self, field: u32, value: &Msg) -> Self {
        self.bytes(field, &value.0)
    }
    pub(crate) fn group(mut self, field: u32, value: &Msg) -> Self {
        put_tag(&mut self.0, field, 3);
        self.0.extend_from_slice(&value.0);
        put_tag(&mut self.0, field, 4);
        self
    }
    pub(crate) fn packed(self, field: u32, values: &[u64]) -> Self {
        let mut payload = Vec::new();
        for &v in values {
            put_varint(&mut payload, v);
        }
        self.bytes(field, &payload)
    }
    pub(crate) fn build(self) -> Vec<u8> {
        self.0
    }
}

/// A seeded generator of varied records.
pub(crate) struct Gen {
    pub(crate) rng: SmallRng,
}

impl Gen {
    pub(crate) fn new(seed: u64) -> Self {
        Self { rng: SmallRng::seed_from_u64(seed) }
    }

    fn varint_value(&mut self) -> u64 {
        match self.rng.gen_range(0..6) {
            0 => self.rng.gen_range(0..4),
            1 => self.rng.gen_range(0..128),
            2 => self.rng.gen_range(0..1 << 14),
            3 => self.rng.gen_range(0..1 << 35),
            4 => self.rng.r#gen::<i32>() as i64 as u64, // Negative int32s take 10 bytes.
            _ => self.rng.r#gen(),
        }
    }

    fn random_bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.rng.gen_range(0..=max);
        (0..len).map(|_| self.rng.r#gen()).collect()
    }

    fn text(&mut self, max: usize) -> Vec<u8> {
        let len = self.rng.gen_range(0..=max);
        (0..len).map(|_| b"abcdefghij klmnop"[self.rng.gen_range(0..17)]).collect()
    }

    /// A random message with fields from `fields`, nested up to `depth`.
    pub(crate) fn message(&mut self, depth: u32, fields: &[u32]) -> Msg {
        let mut m = Msg::new();
        let n = self.rng.gen_range(0..8);
        for _ in 0..n {
            let field = fields[self.rng.gen_range(0..fields.len())];
            // The wire type follows the field number, as in a schema.
            m = match (field % 7, depth) {
                (0, _) => m.varint(field, self.varint_value()),
                (1, _) => m.fixed32(field, self.rng.r#gen()),
                (2, _) => m.fixed64(field, self.rng.r#gen()),
                (3, _) => {
                    let t = self.text(20);
                    m.bytes(field, &t)
                }
                (4, d) if d > 0 => {
                    let sub = self.message(d - 1, fields);
                    m.message(field, &sub)
                }
                (5, d) if d > 0 => {
                    let sub = self.message(d - 1, fields);
                    m.group(field, &sub)
                }
                (6, _) => {
                    let values: Vec<u64> = (0..self.rng.gen_range(0..5)).map(|_| self.varint_value()).collect();
                    m.packed(field, &values)
                }
                _ => {
                    let b = self.random_bytes(12);
                    m.bytes(field, &b)
                }
            };
        }
        m
    }

    /// A mix: proto records (nested), non-proto bytes, empty records.
    pub(crate) fn mixed(&mut self, n: usize) -> Vec<Vec<u8>> {
        let fields: Vec<u32> = (1..=20).chain([100, 1000, 20000, (1 << 29) - 1]).collect();
        (0..n)
            .map(|_| match self.rng.gen_range(0..20) {
                0..=2 => self.random_bytes(40),
                3 => Vec::new(),
                _ => self.message(4, &fields).build(),
            })
            .collect()
    }

    /// Schema-like records: the same fields in the same order, most present.
    pub(crate) fn schema(&mut self, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut m = Msg::new().varint(1, i as u64).bytes(2, b"name");
                if self.rng.gen_bool(0.8) {
                    m = m.fixed64(3, self.rng.r#gen());
                }
                let sub = Msg::new().varint(1, self.rng.gen_range(0..3)).fixed32(2, self.rng.r#gen());
                m = m.message(4, &sub);
                for _ in 0..self.rng.gen_range(0..4) {
                    let t = self.text(10);
                    m = m.bytes(5, &t);
                }
                if self.rng.gen_bool(0.3) {
                    m = m.varint(6, self.varint_value());
                }
                m.build()
            })
            .collect()
    }

    /// Records with many distinct fields (large no-op trees).
    pub(crate) fn many_fields(&mut self, n: usize, num_fields: u32) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                let mut m = Msg::new();
                for _ in 0..self.rng.gen_range(1..6) {
                    let field = self.rng.gen_range(1..=num_fields);
                    m = m.varint(field, self.varint_value());
                }
                m.build()
            })
            .collect()
    }

    /// Nested `depth` submessages deep (tests the depth-100 rule), with a group inside.
    pub(crate) fn deep(&mut self, depth: u32) -> Vec<u8> {
        let mut m = Msg::new().varint(1, 7).group(3, &Msg::new().varint(1, 5));
        for level in 0..depth {
            m = Msg::new().message(2, &m).varint(1, u64::from(level));
        }
        m.build()
    }

    /// A record larger than 64 KiB.
    pub(crate) fn large(&mut self, size: usize) -> Vec<u8> {
        let payload: Vec<u8> = (0..size).map(|_| self.rng.r#gen()).collect();
        Msg::new().varint(1, 1).bytes(2, &payload).build()
    }
}

/// Hand-picked edge cases (spec §13): every wire type, varints of 1..10
/// bytes, inline values, non-canonical encodings, field 0, wire types 6/7,
/// unterminated and mismatched groups, 5-byte tags, empty strings and
/// messages, strings that look like protos.
pub(crate) fn edge_cases() -> Vec<Vec<u8>> {
    let mut records = vec![
        vec![],
        Msg::new().varint(1, 0).varint(1, 1).varint(1, 2).varint(1, 3).varint(1, 4).build(),
        Msg::new().bytes(1, b"").message(2, &Msg::new()).build(),
        Msg::new().bytes(1, &Msg::new().varint(1, 150).build()).build(),
        Msg::new().group(4, &Msg::new()).group(4, &Msg::new().group(5, &Msg::new().fixed32(1, 9))).build(),
        vec![0x08, 0x80, 0x00],       // non-canonical value
        vec![0x88, 0x00, 0x01],       // non-canonical tag
        vec![0x0a, 0x81, 0x00, 0x00], // non-canonical length
        vec![0x00, 0x01],             // field 0
        vec![0x0e, 0x00],             // wire type 6
        vec![0x0f, 0x00],             // wire type 7
        vec![0x23, 0x08, 0x01],       // unterminated group
        vec![0x23, 0x2c],             // mismatched group
        vec![0x24],                   // lone end group
        Msg::new().varint((1 << 29) - 1, 5).fixed64((1 << 29) - 1, 1).build(),
        Msg::new().varint(3, 1).varint(1, 2).varint(3, 3).build(),
        Msg::new().packed(7, &[1, 2, 300, 1 << 40]).packed(7, &[8, 8]).build(),
        Msg::new().bytes(2, b"hi!").bytes(2, &[0x08, 0x96, 0x01]).build(),
        vec![0xff; 7],
    ];
    for len in 1..=10u32 {
        let value = if len == 10 { u64::MAX } else { 1u64 << (7 * len - 1) };
        records.push(Msg::new().varint(9, value).build());
    }
    records
}
