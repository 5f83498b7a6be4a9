//! The soak's tags: every live object, page block and vmalloc area carries its owner CPU and
//! sequence number and a checksum over a pattern derived from them, written when it is
//! allocated and checked when it is freed and at every checkpoint. A block handed out twice,
//! two live blocks that overlap, a stray write or a lost copy breaks a tag.

use numalab_algo::page::PAGE_SIZE;

/// What a slot holds (the `kind` of its meta).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    /// A page block: param = order.
    Pages = 1,
    /// An object of one of the soak's shared caches: param = cache index.
    CacheObj = 2,
    /// A kmalloc object: param = the size asked for, in bytes.
    Kmalloc = 3,
    /// A vmalloc area: size in pages.
    Vmalloc = 4,
}

/// A slot item's meta: its kind and parameter, owner CPU and sequence number (the tag's seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub kind: ItemKind,
    pub param: u32,
    pub owner: u8,
    pub seq: u32,
}

impl Meta {
    /// The first word of the tagged memory: owner and sequence, with a kind-specific salt.
    pub fn tag(self) -> u64 {
        0x5a00_0000_0000_0000
            ^ (self.kind as u64) << 52
            ^ u64::from(self.owner) << 40
            ^ u64::from(self.seq)
    }
}

/// Words of an object covered by the pattern (the first 256 bytes; the last word too).
const PATTERN_WORDS: usize = 32;

fn pattern(tag: u64, i: usize) -> u64 {
    (tag ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).rotate_left((i % 61) as u32)
}

fn word(buf: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&buf[i * 8..i * 8 + 8]);
    u64::from_le_bytes(w)
}

fn set_word(buf: &mut [u8], i: usize, v: u64) {
    buf[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
}

/// Writes the tag of an object (`obj`: its bytes, at least 8): word 0 the tag, word 1 the
/// checksum of the pattern words after it, words 2.. (first 256 bytes and the last word) the
/// pattern.
pub fn write_obj(obj: &mut [u8], tag: u64) {
    let words = obj.len() / 8;
    let mut sum = 0u64;
    for i in (2..words.min(PATTERN_WORDS)).chain(last_word(words)) {
        let v = pattern(tag, i);
        sum = sum.rotate_left(7) ^ v;
        set_word(obj, i, v);
    }
    set_word(obj, 0, tag);
    if words >= 2 {
        set_word(obj, 1, sum);
    }
}

fn last_word(words: usize) -> Option<usize> {
    (words > PATTERN_WORDS).then_some(words - 1)
}

/// Checks what `write_obj` wrote; Err says which word differs (found, expected).
pub fn check_obj(obj: &[u8], tag: u64) -> Result<(), (usize, u64, u64)> {
    let words = obj.len() / 8;
    let got = word(obj, 0);
    if got != tag {
        return Err((0, got, tag));
    }
    let mut sum = 0u64;
    for i in (2..words.min(PATTERN_WORDS)).chain(last_word(words)) {
        let v = word(obj, i);
        sum = sum.rotate_left(7) ^ v;
        if v != pattern(tag, i) {
            return Err((i, v, pattern(tag, i)));
        }
    }
    if words >= 2 {
        let stored = word(obj, 1);
        if stored != sum {
            return Err((1, stored, sum));
        }
    }
    Ok(())
}

/// Tags the first `nr_pages` pages of `mem` (each page: the tag and its index).
pub fn write_pages(mem: &mut [u8], nr_pages: usize, tag: u64) {
    for (i, page) in mem
        .chunks_mut(PAGE_SIZE as usize)
        .take(nr_pages)
        .enumerate()
    {
        set_word(page, 0, tag);
        set_word(page, 1, pattern(tag, i));
    }
}

/// The first two words of each page, as `write_pages` wrote them.
pub fn page_words(mem: &[u8], i: usize) -> (u64, u64) {
    let page = &mem[i * PAGE_SIZE as usize..];
    (word(page, 0), word(page, 1))
}

/// Checks what `write_pages` wrote; Err: (page index, found, expected).
pub fn check_pages(mem: &[u8], nr_pages: usize, tag: u64) -> Result<(), (usize, u64, u64)> {
    if mem.len() < nr_pages * PAGE_SIZE as usize {
        return Err((mem.len() / PAGE_SIZE as usize, 0, tag));
    }
    for i in 0..nr_pages {
        let (a, b) = page_words(mem, i);
        if a != tag {
            return Err((i, a, tag));
        }
        if b != pattern(tag, i) {
            return Err((i, b, pattern(tag, i)));
        }
    }
    Ok(())
}
