//! Many threads sorting at once (being written).

fn main() {
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), Vec::new()).exit()
}
