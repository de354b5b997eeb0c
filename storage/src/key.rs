//! Order-preserving key encoding: integers big-endian (signed ones with the sign bit
//! flipped) and strings escaped so that a composite key sorts field by field.

/// Builds a composite key whose byte order is the order of its fields.
#[derive(Debug, Default, Clone)]
pub struct KeyBuf(Vec<u8>);

impl KeyBuf {
    /// An empty key.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raw bytes of a fixed width (ids). Only safe as the last field or for fixed widths.
    pub fn bytes(mut self, bytes: &[u8]) -> Self {
        self.0.extend_from_slice(bytes);
        self
    }

    /// A one-byte field.
    pub fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }

    /// A `u64` field: 8 bytes, big-endian.
    pub fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// An `i64` field: 8 bytes, as [`encode_i64`] orders them.
    pub fn i64(mut self, v: i64) -> Self {
        self.0.extend_from_slice(&encode_i64(v));
        self
    }

    /// A string field: `0x00` is escaped as `0x00 0xFF` and the field ends with `0x00 0x01`,
    /// so "a" < "a\0" < "ab" holds for the encoded keys too.
    pub fn str(mut self, s: &str) -> Self {
        for &b in s.as_bytes() {
            self.0.push(b);
            if b == 0 {
                self.0.push(0xFF);
            }
        }
        self.0.extend_from_slice(&[0x00, 0x01]);
        self
    }

    /// The encoded key.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Encodes an `i64` so that unsigned byte order equals numeric order.
pub fn encode_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

/// Inverse of [`encode_i64`].
pub fn decode_i64(bytes: [u8; 8]) -> i64 {
    (u64::from_be_bytes(bytes) ^ (1 << 63)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i64_order_is_byte_order() {
        let values = [i64::MIN, -1_000_000, -1, 0, 1, 42, i64::MAX];
        for pair in values.windows(2) {
            assert!(encode_i64(pair[0]) < encode_i64(pair[1]), "{pair:?}");
        }
        for v in values {
            assert_eq!(decode_i64(encode_i64(v)), v);
        }
    }

    #[test]
    fn string_fields_sort_field_by_field() {
        let key = |a: &str, b: u64| KeyBuf::new().str(a).u64(b).finish();
        assert!(key("a", u64::MAX) < key("a\0", 0));
        assert!(key("a\0", u64::MAX) < key("ab", 0));
        assert!(key("ab", 1) < key("ab", 2));
        assert!(key("", 9) < key("a", 0));
    }
}
