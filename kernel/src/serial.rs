//! The serial console (COM1, 16550 UART): `print!`/`println!` for every CPU, one line at a time.

use core::fmt::{self, Write};
use spin::Mutex;
use uart_16550::SerialPort;

/// COM1's I/O base.
const COM1_PORT: u16 = 0x3f8;

static SERIAL: Mutex<Option<SerialPort>> = Mutex::new(None);

/// Initializes COM1; printing before this is silently dropped.
pub fn init() {
    // SAFETY: 0x3f8 is COM1 on every PC QEMU emulates; nothing else in the kernel uses it.
    let mut port = unsafe { SerialPort::new(COM1_PORT) };
    port.init();
    *SERIAL.lock() = Some(port);
}

/// Releases the console lock held by a CPU that will never release it (panic path only).
pub fn force_unlock() {
    if SERIAL.is_locked() {
        // SAFETY: called only on the panic path with interrupts off; a torn line on the console
        // is better than a silent hang.
        unsafe { SERIAL.force_unlock() };
    }
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        if let Some(port) = SERIAL.lock().as_mut() {
            let _ = port.write_fmt(args);
        }
    });
}

/// Prints to the serial console.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => ($crate::serial::_print(format_args!($($arg)*)));
}

/// Prints a line to the serial console, atomically with respect to other CPUs.
#[macro_export]
macro_rules! println {
    () => ($crate::print!("\n"));
    ($($arg:tt)*) => ($crate::serial::_print(format_args!("{}\n", format_args!($($arg)*))));
}

/// Prints a `numalab: warning:` line (the host greps for these in bad-input tests).
#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => ($crate::println!("{}{}", ::numalab_algo::wire::console::WARNING, format_args!($($arg)*)));
}
