//! A short pass of the fuzz targets (issue 14): `cargo bench --bench fuzz` runs ten
//! million inputs a target; the tests run 20,000 each, so that a crash the seeds or the
//! first mutations reach fails CI.

use crate::support::fuzz::{fuzz, targets};

#[test]
fn the_readers_of_outside_input_never_panic_on_mutated_input() {
    for target in targets() {
        let outcome = fuzz(&target, 20_000, 0x5eed);
        assert_eq!(outcome.executions, 20_000);
        assert!(
            outcome.crash_count == 0,
            "{}: {} of {} inputs panicked; first: {:?}",
            target.name,
            outcome.crash_count,
            outcome.executions,
            outcome
                .crashes
                .first()
                .map(|(input, why)| (String::from_utf8_lossy(input).into_owned(), why))
        );
    }
}
