//! The soak's tags: every live object, page block and vmalloc area carries its owner CPU and
//! sequence number and a checksum over a pattern derived from them, written when it is
//! allocated and checked when it is freed and at every checkpoint. A block handed out twice,
//! two live blocks that overlap, a stray write or a lost copy breaks a tag.

use numalab_algo::page::PAGE_SIZE;

/// What a slot holds (the `kind` field of its meta word).
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

/// A slot's meta word: kind (4 bits) | param (20 bits) | owner CPU (8 bits) | sequence (32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub kind: ItemKind,
    pub param: u32,
    pub owner: u8,
    pub seq: u32,
}

impl Meta {
    pub fn pack(self) -> u64 {
        (self.kind as u64) << 60
            | u64::from(self.param & 0xf_ffff) << 40
            | u64::from(self.owner) << 32
            | u64::from(self.seq)
    }

    pub fn unpack(w: u64) -> Option<Meta> {
        let kind = match w >> 60 {
            1 => ItemKind::Pages,
            2 => ItemKind::CacheObj,
            3 => ItemKind::Kmalloc,
            4 => ItemKind::Vmalloc,
            _ => return None,
        };
        Some(Meta {
            kind,
            param: ((w >> 40) & 0xf_ffff) as u32,
            owner: (w >> 32) as u8,
            seq: w as u32,
        })
    }

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

/// Writes the tag of an object of `size_bytes` (>= 8) at `addr`: word 0 the tag, word 1 the
/// checksum of the pattern words after it, words 2.. (first 256 bytes and the last word) the
/// pattern.
///
/// # Safety
/// `addr` must be 8-byte aligned, `size_bytes` bytes, writable and owned by the caller.
pub unsafe fn write_obj(addr: usize, size_bytes: usize, tag: u64) {
    let p = addr as *mut u64;
    let words = size_bytes / 8;
    let mut sum = 0u64;
    for i in (2..words.min(PATTERN_WORDS)).chain(last_word(words)) {
        let v = pattern(tag, i);
        sum = sum.rotate_left(7) ^ v;
        // SAFETY: i < words: inside the caller's object.
        unsafe { p.add(i).write_volatile(v) };
    }
    // SAFETY: word 0 exists (size >= 8); word 1 when size >= 16.
    unsafe {
        p.write_volatile(tag);
        if words >= 2 {
            p.add(1).write_volatile(sum);
        }
    }
}

fn last_word(words: usize) -> Option<usize> {
    (words > PATTERN_WORDS).then_some(words - 1)
}

/// Checks what `write_obj` wrote; Err says which word differs.
///
/// # Safety
/// As for `write_obj` (readable).
pub unsafe fn check_obj(addr: usize, size_bytes: usize, tag: u64) -> Result<(), (usize, u64, u64)> {
    let p = addr as *const u64;
    let words = size_bytes / 8;
    // SAFETY: word 0 is inside the object.
    let got = unsafe { p.read_volatile() };
    if got != tag {
        return Err((0, got, tag));
    }
    let mut sum = 0u64;
    for i in (2..words.min(PATTERN_WORDS)).chain(last_word(words)) {
        // SAFETY: i < words.
        let v = unsafe { p.add(i).read_volatile() };
        sum = sum.rotate_left(7) ^ v;
        if v != pattern(tag, i) {
            return Err((i, v, pattern(tag, i)));
        }
    }
    if words >= 2 {
        // SAFETY: word 1 is inside the object.
        let stored = unsafe { p.add(1).read_volatile() };
        if stored != sum {
            return Err((1, stored, sum));
        }
    }
    Ok(())
}

/// Tags `nr_pages` pages at `addr` (each page: the tag and its index).
///
/// # Safety
/// The pages must be mapped, writable and the caller's.
pub unsafe fn write_pages(addr: usize, nr_pages: usize, tag: u64) {
    for i in 0..nr_pages {
        let p = (addr + i * PAGE_SIZE as usize) as *mut u64;
        // SAFETY: page i of the caller's block, two words.
        unsafe {
            p.write_volatile(tag);
            p.add(1).write_volatile(pattern(tag, i));
        }
    }
}

/// Checks what `write_pages` wrote; Err: (page index, found, expected).
///
/// # Safety
/// As for `write_pages` (readable).
pub unsafe fn check_pages(addr: usize, nr_pages: usize, tag: u64) -> Result<(), (usize, u64, u64)> {
    for i in 0..nr_pages {
        let p = (addr + i * PAGE_SIZE as usize) as *const u64;
        // SAFETY: page i of the block.
        let (a, b) = unsafe { (p.read_volatile(), p.add(1).read_volatile()) };
        if a != tag {
            return Err((i, a, tag));
        }
        if b != pattern(tag, i) {
            return Err((i, b, pattern(tag, i)));
        }
    }
    Ok(())
}
