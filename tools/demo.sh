#!/usr/bin/env bash
# Saturn's main job end to end on a bundled example: installs what the build
# needs, builds, then saturates the bundled algebra terms with the bundled
# algebra rules and prints the simplest form found for each. Pricing the
# derivative operator `d` high asks for answers with the derivatives worked out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target saturn
./build/tools/saturn eqsat --rules docs/examples/math.rules docs/examples/math.terms --cost d=100 "$@"
