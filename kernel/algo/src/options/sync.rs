//! Kernel options of the `sync` group: lock statistics (Linux's CONFIG_LOCK_STAT switch,
//! /proc/sys/kernel/lock_stat).

use super::{Kind, Spec};

super::declare! {
    SYNC = "sync";
    LOCK_STAT: bool = Spec {
        key: "lock_stat",
        kind: Kind::Bool,
        default: "0",
        help: "time every lock hold and count bounces (two clock reads per acquisition), for the lock_stat table",
    };
}
