//! Sorts keys, then key-value pairs, on the best device found, and says which one it was.
//! Run with `cargo run --release --example quickstart` (add `--features cuda` on NVIDIA).

fn main() -> Result<(), bitonic::Error> {
    for found in bitonic::devices() {
        match &found.unavailable {
            Some(why) => println!("{}: unavailable ({why})", found.backend),
            None => found.devices.iter().for_each(|d| println!("found {d}")),
        }
    }
    let sorter = bitonic::Sorter::new()?;
    println!("sorting on {}", sorter.device());

    let mut temperatures = vec![21.5f64, -3.0, f64::NAN, 0.0, -0.0, 37.2, f64::INFINITY];
    sorter.sort(&mut temperatures, bitonic::Order::Ascending)?;
    println!("ascending:  {temperatures:?}");
    sorter.sort(&mut temperatures, bitonic::Order::Descending)?;
    println!("descending: {temperatures:?}");

    // Order rows by score, highest first, carrying each row's id along.
    let mut scores = vec![88i32, 95, 70, 95, 60];
    let mut row_ids = vec![0u32, 1, 2, 3, 4];
    sorter.sort_by_key(&mut scores, &mut row_ids, bitonic::Order::Descending)?;
    println!("scores {scores:?}, rows {row_ids:?}");
    Ok(())
}
