//! The panic handler: prints `PANIC:` with location and message, then exits QEMU with failure.

use core::panic::PanicInfo;

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    x86_64::instructions::interrupts::disable();
    // A panic while printing must still reach the console: take the port without its lock.
    serial::force_unlock();
    match info.location() {
        Some(loc) => println!(
            "{} at {}:{}:{}: {}",
            numalab_algo::wire::console::PANIC,
            loc.file(),
            loc.line(),
            loc.column(),
            info.message()
        ),
        None => println!("{} {}", numalab_algo::wire::console::PANIC, info.message()),
    }
    crate::arch::qemu_exit::exit(crate::arch::qemu_exit::ExitCode::Failure)
}

use crate::serial;
