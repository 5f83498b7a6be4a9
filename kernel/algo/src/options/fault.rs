//! Kernel options of the `fault` group. Fault injection (Linux's failslab and fail_page_alloc): off
//! unless set.

use super::{ParsedValue, Spec};
use crate::fault::FaultAttr;

super::declare! {
    FAULT = "fault";
    FAULT_PAGE_ALLOC: FaultAttr = Spec {
        key: "fault.page_alloc",
        kind: FaultAttr::KIND,
        default: "0",
        help: "fault injection (fail_page_alloc): PROBABILITY%[,INTERVAL[,SEED]] of page allocations fail as out of memory; 0: off",
    };
    FAULT_SLAB: FaultAttr = Spec {
        key: "fault.slab",
        kind: FaultAttr::KIND,
        default: "0",
        help: "fault injection (failslab): PROBABILITY%[,INTERVAL[,SEED]] of SLUB's new-slab page allocations fail; 0: off",
    };
    FAULT_VMALLOC: FaultAttr = Spec {
        key: "fault.vmalloc",
        kind: FaultAttr::KIND,
        default: "0",
        help: "fault injection: PROBABILITY%[,INTERVAL[,SEED]] of vmalloc/vmap calls fail halfway through mapping; 0: off",
    };
}
