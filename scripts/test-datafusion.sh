#!/usr/bin/env bash
# The DataFusion/Ballista adapter (datafusion/, crate bitonic-datafusion): lints, docs and
# tests, kept apart from scripts/test.sh because DataFusion and Ballista take longer to build
# than the whole core. Lints cover every feature (the cuda feature only changes the core);
# the tests run the default features: the CPU backend, or what BITONIC_BACKEND asks for.
# Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo clippy -p bitonic-datafusion --all-features --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc -p bitonic-datafusion --no-deps
cargo test -p bitonic-datafusion "$@"
