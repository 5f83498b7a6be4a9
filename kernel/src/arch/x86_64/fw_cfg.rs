//! QEMU's fw_cfg device over I/O ports 0x510/0x511: reads a named file such as
//! `opt/numalab/cmdline` (the kernel options that boot/ passes with `-fw_cfg`).

use alloc::string::String;
use alloc::vec::Vec;
use x86_64::instructions::port::Port;

const SELECTOR_PORT: u16 = 0x510;
const DATA_PORT: u16 = 0x511;
const KEY_SIGNATURE: u16 = 0x0000;
const KEY_FILE_DIR: u16 = 0x0019;
/// Size of one directory entry: u32 size, u16 select, u16 reserved, 56-byte name.
const FILE_ENTRY_BYTES: usize = 64;

fn select(key: u16) {
    // SAFETY: 0x510 is fw_cfg's selector on QEMU's PC machines; selecting a key has no memory
    // effect. Only the boot CPU reads fw_cfg, before the other CPUs start.
    unsafe { Port::<u16>::new(SELECTOR_PORT).write(key) };
}

fn read_bytes(buf: &mut [u8]) {
    let mut port = Port::<u8>::new(DATA_PORT);
    for b in buf {
        // SAFETY: 0x511 is fw_cfg's data port; reading it only advances the device's cursor.
        *b = unsafe { port.read() };
    }
}

/// Reads fw_cfg file `name`, or None when QEMU has no fw_cfg or no such file.
pub fn read_file(name: &str) -> Option<Vec<u8>> {
    select(KEY_SIGNATURE);
    let mut sig = [0u8; 4];
    read_bytes(&mut sig);
    if &sig != b"QEMU" {
        return None;
    }
    select(KEY_FILE_DIR);
    let mut count = [0u8; 4];
    read_bytes(&mut count);
    let count = u32::from_be_bytes(count);
    let mut found = None;
    for _ in 0..count {
        let mut entry = [0u8; FILE_ENTRY_BYTES];
        read_bytes(&mut entry);
        let size = u32::from_be_bytes([entry[0], entry[1], entry[2], entry[3]]) as usize;
        let key = u16::from_be_bytes([entry[4], entry[5]]);
        let raw_name = &entry[8..];
        let len = raw_name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(raw_name.len());
        if &raw_name[..len] == name.as_bytes() {
            found = Some((key, size));
        }
    }
    let (key, size) = found?;
    select(key);
    let mut data = alloc::vec![0u8; size];
    read_bytes(&mut data);
    Some(data)
}

/// Reads fw_cfg file `name` as text (lossy), or an empty string.
pub fn read_string(name: &str) -> String {
    read_file(name)
        .map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .trim_end_matches('\0')
                .into()
        })
        .unwrap_or_default()
}
