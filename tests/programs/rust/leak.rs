// tests/programs/rust/leak.rs — a Rust program with three known leaks, for
// tests/e2e/test_rust.c: CMake builds it twice (legacy and v0 symbol
// mangling), the test records it with `ltr record` and finds each leak by
// function, file, line, bytes and count. Nothing is printed: stdout's buffer
// would be one more allocation to account for.

// The loop counts are read as volatile: with constants the optimizer unrolls
// the loops, and each unrolled call is a stack of its own.
static COPIES: u8 = 20;
static BOXES: usize = 10;
// Where each leaked box is written to, volatile: a box nothing reads may be
// optimized away, allocation and all (rustc 1.95 does, even for a box stored
// into a static that nothing reads).
static mut LAST: *mut u8 = 0 as *mut u8;

// A cache of boxed copies that is never emptied: a method of a generic impl.
struct Cache<T> {
    items: Vec<Box<T>>,
}

impl<T: Clone> Cache<T> {
    #[inline(never)]
    fn remember(&mut self, v: &T) {
        self.items.push(Box::new(v.clone())); // leak: remember
    }
}

// Leaks n boxes of 1000 bytes; returns the sum of their first bytes.
#[inline(never)]
fn leak_boxes(n: usize) -> usize {
    let mut total = 0;
    for i in 0..n {
        let b: &'static mut [u8; 1000] = Box::leak(Box::new([i as u8; 1000])); // leak: boxes
        unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!(LAST), b.as_mut_ptr()) };
        total += b[0] as usize;
    }
    total
}

fn main() {
    let mut cache = Cache { items: Vec::with_capacity(32) }; // leak: main
    for i in 0..unsafe { std::ptr::read_volatile(&COPIES) } {
        cache.remember(&[i; 64]);
    }
    let total = leak_boxes(unsafe { std::ptr::read_volatile(&BOXES) });
    std::mem::forget(cache);
    std::process::exit(if total == 45 { 0 } else { 1 });
}
