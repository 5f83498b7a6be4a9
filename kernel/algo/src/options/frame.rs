//! Kernel options of the `frame` group. The page frame allocator: per-CPU page lists in front of
//! the per-node buddies.

use super::{Kind, Spec};

super::declare! {
    FRAME = "frame";
    FRAME_PCP: bool = Spec {
        key: "frame.pcp",
        kind: Kind::Bool,
        default: "1",
        help: "per-CPU page lists in front of the per-node buddy allocators (orders 0-3)",
    };
    FRAME_PCP_HIGH: u64 = Spec {
        key: "frame.pcp_high",
        kind: Kind::U64 {
            min: 1,
            max: 1 << 20,
        },
        default: "256",
        help: "pages a per-CPU list may hold per node before it drains a batch",
    };
    FRAME_PCP_BATCH: u64 = Spec {
        key: "frame.pcp_batch",
        kind: Kind::U64 { min: 1, max: 4096 },
        default: "32",
        help: "pages moved per refill or drain between a per-CPU list and the buddy",
    };
}
