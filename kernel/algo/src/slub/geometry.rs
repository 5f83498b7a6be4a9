//! Slab geometry: kmalloc size classes, Linux's calculate_order, object layout (free pointer,
//! red zone, tracking word) and the default per-cache tunables derived from the object size.

pub use crate::page::PAGE_SIZE;
/// Linux's MAX_OBJS_PER_PAGE: the inuse counter is 15 bits there; ours is 16.
pub const MAX_OBJS_PER_SLAB: usize = 32767;
/// Linux's MIN_PARTIAL: the lower clamp of the automatic min_partial.
pub const MIN_PARTIAL: usize = 5;
/// Linux's MAX_PARTIAL: the upper clamp of the automatic min_partial (default `slub.max_partial`).
pub const MAX_PARTIAL: usize = 10;
/// Largest slab order the geometry code accepts (`slub.max_order` upper bound).
pub const MAX_SLAB_ORDER: u8 = 10;

/// Object sizes of the kmalloc caches, smallest first (Linux's kmalloc-8 .. kmalloc-8k).
pub const KMALLOC_SIZES: [usize; 13] = [
    8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
];
/// Names of the kmalloc caches, as /proc/slabinfo shows them.
pub const KMALLOC_NAMES: [&str; 13] = [
    "kmalloc-8",
    "kmalloc-16",
    "kmalloc-32",
    "kmalloc-64",
    "kmalloc-96",
    "kmalloc-128",
    "kmalloc-192",
    "kmalloc-256",
    "kmalloc-512",
    "kmalloc-1k",
    "kmalloc-2k",
    "kmalloc-4k",
    "kmalloc-8k",
];
/// The largest size served by a kmalloc cache; larger requests go to the page allocator.
pub const KMALLOC_MAX_CACHE_BYTES: usize = 8192;

/// Linux's size_index table: for sizes 1..=192, the class of `(size - 1) / 8`.
const SMALL_INDEX: [u8; 24] = [
    0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6,
];

/// The kmalloc class (index into `KMALLOC_SIZES`) for `size_bytes`, or None when the request
/// is larger than `KMALLOC_MAX_CACHE_BYTES`. Size 0 is served by the smallest class.
#[inline]
pub fn kmalloc_index(size_bytes: usize) -> Option<usize> {
    if size_bytes <= 192 {
        Some(SMALL_INDEX[size_bytes.saturating_sub(1) / 8] as usize)
    } else if size_bytes <= KMALLOC_MAX_CACHE_BYTES {
        // 193..=256 -> 7 (256), 257..=512 -> 8, ... 4097..=8192 -> 12.
        let bits = usize::BITS - (size_bytes - 1).leading_zeros();
        Some(bits as usize - 1)
    } else {
        None
    }
}

/// The kmalloc class for a request of `size_bytes` aligned to `align_bytes` (a power of two):
/// power-of-two classes are naturally aligned, 96 is 32-aligned and 192 is 64-aligned.
pub fn kmalloc_index_aligned(size_bytes: usize, align_bytes: usize) -> Option<usize> {
    let mut idx = kmalloc_index(size_bytes.max(align_bytes))?;
    while idx < KMALLOC_SIZES.len() && natural_align(KMALLOC_SIZES[idx]) < align_bytes {
        idx += 1;
    }
    (idx < KMALLOC_SIZES.len()).then_some(idx)
}

/// The largest power of two dividing `size_bytes`, capped at a page (the alignment a kmalloc
/// cache of that size guarantees).
pub fn natural_align(size_bytes: usize) -> usize {
    if size_bytes == 0 {
        return 8;
    }
    (1usize << size_bytes.trailing_zeros()).min(PAGE_SIZE as usize)
}

/// Linux's fls(): position of the highest set bit, 1-based; 0 for 0.
pub fn fls(x: usize) -> u32 {
    usize::BITS - x.leading_zeros()
}

/// Linux's get_order(): the smallest order whose slab holds `size_bytes`.
pub fn get_order(size_bytes: usize) -> u8 {
    let pages = size_bytes.div_ceil(PAGE_SIZE as usize).max(1);
    fls(pages - 1) as u8
}

/// Objects of `size_bytes` that fit in a slab of `order`.
pub fn order_objects(order: u8, size_bytes: usize) -> usize {
    ((PAGE_SIZE as usize) << order) / size_bytes
}

fn calc_slab_order(size: usize, min_order: u8, max_order: u8, fract_leftover: usize) -> u8 {
    let mut order = min_order;
    while order <= max_order {
        let slab_bytes = (PAGE_SIZE as usize) << order;
        if slab_bytes % size <= slab_bytes / fract_leftover {
            break;
        }
        order += 1;
    }
    order
}

/// Linux's calculate_order (6.x): at least `min_objects` objects per slab (0 means
/// 4 * (fls(nr_cpus) + 1)), at most `max_order`, waste relaxed step by step from 1/16 of the
/// slab to 1/8, 1/4 and 1/2; if nothing fits, the order of one object.
pub fn calculate_order(size_bytes: usize, min_objects: usize, max_order: u8, nr_cpus: usize) -> u8 {
    let size = size_bytes.max(8);
    let mut min_objects = if min_objects == 0 {
        4 * (fls(nr_cpus) as usize + 1)
    } else {
        min_objects
    };
    let max_objects = order_objects(max_order, size).max(1);
    min_objects = min_objects.min(max_objects);
    let min_order = get_order(min_objects * size);
    if order_objects(min_order, size) > MAX_OBJS_PER_SLAB {
        return get_order(size * MAX_OBJS_PER_SLAB) - 1;
    }
    let mut fraction = 16;
    while fraction > 1 {
        let order = calc_slab_order(size, min_order, max_order, fraction);
        if order <= max_order {
            return order;
        }
        fraction /= 2;
    }
    get_order(size)
}

/// An order and the number of objects a slab of that order holds (Linux's `oo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderObjects {
    pub order: u8,
    pub objects: usize,
}

impl OrderObjects {
    pub fn new(order: u8, size_bytes: usize) -> OrderObjects {
        OrderObjects {
            order,
            objects: order_objects(order, size_bytes),
        }
    }

    pub fn nr_pages(&self) -> usize {
        1 << self.order
    }
}

/// Debug flags of a cache, in the spirit of Linux's `slub_debug=` letters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DebugFlags {
    /// F: sanity checks (object boundary, owning cache, double free via the object state).
    pub sanity: bool,
    /// Z: red zone after each object, checked on alloc and free.
    pub red_zone: bool,
    /// P: poison free objects (0x6b), checked at the next allocation (use after free).
    pub poison: bool,
    /// U: record the CPU of the last allocation and free of each object.
    pub user: bool,
}

impl DebugFlags {
    /// Every check.
    pub const ALL: DebugFlags = DebugFlags {
        sanity: true,
        red_zone: true,
        poison: true,
        user: true,
    };

    pub fn any(&self) -> bool {
        self.sanity || self.red_zone || self.poison || self.user
    }

    /// Parses Linux-style letters `FZPU` (any order, case-insensitive); `1` or `all` means
    /// every flag, `0`, `-` or empty none. Unknown letters are an error naming the letter.
    pub fn parse(text: &str) -> Result<DebugFlags, char> {
        let mut f = DebugFlags::default();
        match text {
            "" | "0" | "-" => return Ok(f),
            "1" | "all" => return Ok(DebugFlags::ALL),
            _ => {}
        }
        for c in text.chars() {
            match c.to_ascii_uppercase() {
                'F' => f.sanity = true,
                'Z' => f.red_zone = true,
                'P' => f.poison = true,
                'U' => f.user = true,
                other => return Err(other),
            }
        }
        Ok(f)
    }

    /// The flags as letters (`-` for none), as Linux shows them.
    pub fn letters(&self) -> &'static str {
        const TABLE: [&str; 16] = [
            "-", "F", "Z", "FZ", "P", "FP", "ZP", "FZP", "U", "FU", "ZU", "FZU", "PU", "FPU",
            "ZPU", "FZPU",
        ];
        let i = self.sanity as usize
            | (self.red_zone as usize) << 1
            | (self.poison as usize) << 2
            | (self.user as usize) << 3;
        TABLE[i]
    }
}

/// Where things are inside one object slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjLayout {
    /// The size the user asked for.
    pub object_size: usize,
    /// The stride between objects (Linux's `s->size`).
    pub size: usize,
    /// Byte offset of the free pointer inside a free object (Linux's `s->offset`).
    pub fp_offset: usize,
    /// Byte offset of the red zone / state word, if any.
    pub red_offset: Option<usize>,
    /// Byte offset of the tracking word (U), if any.
    pub track_offset: Option<usize>,
    pub align: usize,
}

/// Linux's calculate_sizes: the object rounded to a word; with debug flags a red zone /
/// state word after it and the free pointer outside the object (so poison covers the whole
/// object); without, the free pointer in the middle of the object (harder to hit with a
/// small overflow); then the stride rounded up to `align`.
pub fn calculate_layout(object_size: usize, align: usize, debug: DebugFlags) -> ObjLayout {
    let align = align.max(8).next_power_of_two();
    let inuse = object_size.max(8).next_multiple_of(8);
    let mut size = inuse;
    let mut red_offset = None;
    let mut track_offset = None;
    let fp_offset;
    if debug.any() {
        red_offset = Some(size);
        size += 8;
        fp_offset = size;
        size += 8;
        if debug.user {
            track_offset = Some(size);
            size += 8;
        }
    } else {
        fp_offset = (object_size / 2) & !7;
    }
    ObjLayout {
        object_size,
        size: size.next_multiple_of(align),
        fp_offset,
        red_offset,
        track_offset,
        align,
    }
}

/// Linux's set_cpu_partial: how many free objects a CPU keeps on its partial list, by size.
pub fn default_cpu_partial_objects(size_bytes: usize) -> usize {
    if size_bytes >= (PAGE_SIZE as usize) {
        6
    } else if size_bytes >= 1024 {
        24
    } else if size_bytes >= 256 {
        52
    } else {
        120
    }
}

/// Linux's slub_set_cpu_partial: the per-CPU partial list bound in slabs,
/// DIV_ROUND_UP(objects * 2, objects per slab).
pub fn cpu_partial_slabs(cpu_partial_objects: usize, objects_per_slab: usize) -> usize {
    (cpu_partial_objects * 2).div_ceil(objects_per_slab.max(1))
}

/// Linux's set_min_partial: ilog2(size) / 2 clamped to [MIN_PARTIAL, max_partial].
pub fn default_min_partial(size_bytes: usize, max_partial: usize) -> usize {
    let half_log = (fls(size_bytes.max(1)) as usize - 1) / 2;
    half_log.clamp(MIN_PARTIAL.min(max_partial), max_partial)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmalloc_index_matches_linux_table() {
        assert_eq!(kmalloc_index(0), Some(0));
        assert_eq!(kmalloc_index(1), Some(0));
        assert_eq!(kmalloc_index(8), Some(0));
        assert_eq!(kmalloc_index(9), Some(1));
        assert_eq!(kmalloc_index(64), Some(3));
        assert_eq!(kmalloc_index(65), Some(4));
        assert_eq!(KMALLOC_SIZES[kmalloc_index(96).unwrap()], 96);
        assert_eq!(KMALLOC_SIZES[kmalloc_index(97).unwrap()], 128);
        assert_eq!(KMALLOC_SIZES[kmalloc_index(129).unwrap()], 192);
        assert_eq!(KMALLOC_SIZES[kmalloc_index(193).unwrap()], 256);
        assert_eq!(KMALLOC_SIZES[kmalloc_index(4097).unwrap()], 8192);
        assert_eq!(kmalloc_index(8192), Some(12));
        assert_eq!(kmalloc_index(8193), None);
        for size in 1..=8192 {
            let c = KMALLOC_SIZES[kmalloc_index(size).unwrap()];
            assert!(c >= size);
            if size > 8 {
                let i = kmalloc_index(size).unwrap();
                assert!(
                    KMALLOC_SIZES[i - 1] < size,
                    "size {size} not in smallest class"
                );
            }
        }
    }

    #[test]
    fn aligned_classes_honour_alignment() {
        assert_eq!(KMALLOC_SIZES[kmalloc_index_aligned(80, 32).unwrap()], 96);
        assert_eq!(KMALLOC_SIZES[kmalloc_index_aligned(80, 64).unwrap()], 128);
        assert_eq!(KMALLOC_SIZES[kmalloc_index_aligned(150, 64).unwrap()], 192);
        assert_eq!(KMALLOC_SIZES[kmalloc_index_aligned(150, 128).unwrap()], 256);
        assert_eq!(KMALLOC_SIZES[kmalloc_index_aligned(8, 4096).unwrap()], 4096);
        assert_eq!(kmalloc_index_aligned(8, 16384), None);
    }

    #[test]
    fn calculate_order_like_linux() {
        // 4 CPUs: min_objects = 4 * (fls(4) + 1) = 16.
        let o = |size| calculate_order(size, 0, 3, 4);
        assert_eq!(o(8), 0);
        assert_eq!(o(64), 0);
        assert_eq!(o(192), 0);
        assert_eq!(o(256), 0);
        assert_eq!(o(512), 1);
        assert_eq!(o(1024), 2);
        assert_eq!(o(2048), 3);
        assert_eq!(o(4096), 3);
        assert_eq!(o(8192), 3);
        // 700 bytes: order 2 wastes 16384 % 700 = 284 <= 1024.
        assert_eq!(o(700), 2);
        // max_order 0 forces the smallest order that holds one object.
        assert_eq!(calculate_order(8192, 0, 0, 4), 1);
        assert_eq!(calculate_order(3000, 0, 0, 4), 0);
        // One CPU: min_objects 8.
        assert_eq!(calculate_order(1024, 0, 3, 1), 1);
        // Explicit min_objects.
        assert_eq!(calculate_order(1024, 32, 3, 1), 3);
    }

    #[test]
    fn layout_and_tunables() {
        let l = calculate_layout(64, 8, DebugFlags::default());
        assert_eq!((l.size, l.fp_offset, l.red_offset), (64, 32, None));
        let l = calculate_layout(20, 8, DebugFlags::default());
        assert_eq!((l.size, l.fp_offset), (24, 8));
        let l = calculate_layout(64, 64, DebugFlags::ALL);
        assert_eq!(l.red_offset, Some(64));
        assert_eq!(l.fp_offset, 72);
        assert_eq!(l.track_offset, Some(80));
        assert_eq!(l.size, 128);
        assert_eq!(default_cpu_partial_objects(64), 120);
        assert_eq!(default_cpu_partial_objects(4096), 6);
        assert_eq!(cpu_partial_slabs(120, 64), 4);
        assert_eq!(default_min_partial(64, 10), 5);
        assert_eq!(default_min_partial(1 << 20, 10), 10);
        assert_eq!(default_min_partial(1 << 20, 64), 10);
        assert_eq!(get_order(1), 0);
        assert_eq!(get_order(4097), 1);
        assert_eq!(get_order(8192), 1);
        assert_eq!(get_order(8193), 2);
    }

    #[test]
    fn debug_flag_letters() {
        assert_eq!(DebugFlags::parse("fzp").unwrap().letters(), "FZP");
        assert_eq!(DebugFlags::parse("1").unwrap(), DebugFlags::ALL);
        assert_eq!(DebugFlags::parse("0").unwrap().letters(), "-");
        assert_eq!(DebugFlags::parse("FX"), Err('X'));
    }
}
