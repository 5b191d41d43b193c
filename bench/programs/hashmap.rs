// bench/programs/hashmap.rs — a Rust program's heap for bench/programs/run.sh:
// a HashMap of 100 000 strings to small vectors, then a vector of strings
// that grows and shrinks, all dropped at the end (the teardown frees every
// entry in the map's bucket order, not in allocation order).
use std::collections::HashMap;
fn main() {
    let mut m = HashMap::new();
    for i in 0..100000u64 {
        m.insert(format!("key{}", i), vec![i; 8]);
    }
    let mut v: Vec<String> = Vec::new();
    for i in 0..50000 {
        v.push(i.to_string());
        if i % 3 == 0 {
            v.pop();
        }
    }
    println!("{} {}", m.len(), v.len());
}
